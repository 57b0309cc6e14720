#!/usr/bin/env python3
"""The paper figures of vortexhit runs (Hamada, Narumi, Yokota et al., SC09, Figs. 13-15).

Usage:
    python3 postprocess/figures.py RUN_DIR [RUN_DIR ...] --out DIR [--at 1,5,10]
                                   [--q-at 1] [--q-level 1] [--solvers spectral,vortex]

Reads each RUN_DIR/run.h5 (and RUN_DIR/fields_*.h5 for the Q isosurfaces) by their named
HDF5 paths (src/io/run_file.h, src/io/fields_file.h) and writes into DIR, for each figure
NAME, NAME.pdf (vector), NAME.png (300 dpi) and NAME.json (the plotted arrays, so tests and
other plots can check or reuse the data):

    energy_decay   K/K0 against t/T, log-log, one curve per run and solver, with a power law
                   K/K0 = a (t/T)^n fitted over the final half of the run (t >= t_end/2)
                   (SC09 Fig. 13); 3.4 in wide
    spectra        (a) E(k) at each --at time, log-log, with k^(-5/3) for reference
                   (SC09 Fig. 14); (b) the compensated spectrum eps^(-2/3) k^(5/3) E(k)
                   against k eta; 7 in wide
    q_isosurfaces  isosurfaces Q = q <Q^2>^(1/2) side by side for each run and solver at the
                   fields output nearest --q-at, same level and view (SC09 Fig. 15); marching
                   cubes (scikit-image) on the periodically extended field, rendered with
                   mplot3d; 7 in wide (3.4 in for one panel)
    statistics     Re_lambda(t), L(t) and S_3(t), three panels; 7 in wide
    q_pdf          PDF of Q/<Q^2>^(1/2) (the stored Q, each field with its own rms) for each run
                   and solver at the fields output nearest --q-at, log-y; 3.4 in wide
    qr_pdf         joint PDF of the invariants (R, Q) of the velocity gradient A = grad u
                   (Q = -tr(A^2)/2, R = -tr(A^3)/3 = -det A; the "teardrop"), in units of
                   <Q_W> = <w.w>/4 of each field (Q/<Q_W>, R/<Q_W>^(3/2), Ooi et al., JFM 381,
                   1999), one panel per run and solver at --q-at, with the Vieillefosse line
                   27 R^2/4 + Q^3 = 0; A from the stored velocity by spectral derivatives
                   (gradient_invariants(), the twin of src/core/diagnostics.cpp); 7 in wide
                   (3.4 in for one panel)

t/T is in units of the initial field's eddy turnover time T = /initial/series/T[0] of each
run, K0 = /initial/series/K[0]. Every spectrum and field used is the output nearest the
requested t/T; the time actually used is in the legend and the sidecar. Colours are fixed per
solver (spectral blue, vortex vermilion, initial black); line styles tell the times apart,
markers the runs when several runs hold the same solver.

Cost: about 3 s for a 32^3 run on one CPU core, most of it in matplotlib; the Q isosurfaces
dominate at larger N (marching cubes sample at most 128 points per direction: N = 256 uses
every second point), about 1 min at 256^3. Memory: two Q fields (8 N^3 bytes each); the
(Q, R) panels hold the nine components of grad u of one field at a time (72 N^3 bytes,
1.2 GB at 256^3).

Exit status: 0 done, 2 bad input (a missing or malformed file, named with its dataset).
"""

import argparse
import json
import os
import re
import sys

import numpy as np

import h5py
import matplotlib

matplotlib.use("Agg")  # headless: no display on CI or cluster nodes
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402
from mpl_toolkits.mplot3d.art3d import Poly3DCollection  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STYLE = os.path.join(HERE, "vortexhit.mplstyle")

COLUMN_WIDTH = 3.4  # in, one journal column
PAGE_WIDTH = 7.0  # in, full page width

#: Fixed colour per solver (Okabe-Ito, colour-blind safe), the same in every figure.
SOLVER_COLOURS = {"spectral": "#0072B2", "vortex": "#D55E00", "initial": "#000000"}
OTHER_COLOUR = "#009E73"
LINESTYLES = ["-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1))]
MARKERS = [None, "o", "s", "^", "v", "D"]
#: Kolmogorov constant drawn in the compensated spectrum for reference.
C_KOLMOGOROV = 1.6
#: One view for every Q panel (elevation, azimuth in degrees).
VIEW = (25.0, -55.0)
#: Marching cubes samples at most this many points per direction (cost of the 3-D render).
MAX_SURFACE_POINTS = 128

#: Bin widths of the Q PDF (units of <Q^2>^(1/2)) and of the (Q, R) PDF (units of <Q_W> and
#: <Q_W>^(3/2)): those of `vortexhit compare` (src/app/compare.cpp, kQBins and kQRBins, on
#: [-10, 10)). Here the bins extend over the data instead, on the same lattice (edges at
#: multiples of the width), so inside [-10, 10) they are compare's bins and the tails show.
Q_BIN_WIDTH = 0.1
QR_BIN_WIDTH = 0.25
#: Contour levels of the (Q, R) PDF (density in the normalised units). A level is drawn only
#: where it means at least QR_MIN_SAMPLES samples in a bin of the smallest field (a relative
#: sampling noise of at most 1/sqrt(10) = 30 %): 10^-2 and up at 32^3, 10^-4 at 128^3.
QR_LEVELS = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)
QR_MIN_SAMPLES = 10

FIGURES = ("energy_decay", "spectra", "q_isosurfaces", "statistics", "q_pdf", "qr_pdf")


class InputError(Exception):
    """A missing or malformed input file; the message names the file and dataset (exit 2)."""


# ---- reading ---------------------------------------------------------------------------


def parse_deck(text):
    """`section.key` -> value of an INI deck as stored in /deck (comments dropped)."""
    out, section = {}, ""
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            section = line[1:line.index("]")].strip()
        elif "=" in line:
            key, value = (s.strip() for s in line.split("=", 1))
            out[f"{section}.{key}" if section else key] = value
    return out


def _dataset(f, path):
    if path not in f:
        raise InputError(f"{f.filename}:{path} is missing")
    return f[path]


def read_run(run_dir):
    """Everything figures need from one run folder, as a dict.

    Keys: dir, name, path (run.h5), deck (dict), N, T0, K0, nu, solvers
    ({solver: {"series": {name: array}, "k", "spectrum_t", "E"}}), fields
    ([(fields_*.h5 path, {solver: t})] by index).
    """
    path = os.path.join(run_dir, "run.h5")
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file (is {run_dir} a run folder?)")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise InputError(f"{path}: not an HDF5 file ({e})") from None
    with f:
        deck = parse_deck(_dataset(f, "/deck").asstr()[()])
        solvers = {}
        for name, group in f.items():
            if not isinstance(group, h5py.Group) or "series" not in group:
                continue
            rec = {"series": {k: _dataset(f, f"/{name}/series/{k}")[()] for k in group["series"]}}
            if "spectra" in group:
                rec["k"] = _dataset(f, f"/{name}/spectra/k")[()]
                rec["spectrum_t"] = _dataset(f, f"/{name}/spectra/t")[()]
                rec["E"] = _dataset(f, f"/{name}/spectra/E")[()]
            solvers[name] = rec
    if "initial" not in solvers:
        raise InputError(f"{path}:/initial/series is missing (needed for T and K0)")
    ini = solvers["initial"]["series"]
    for key in ("T", "K", "lambda", "Re_lambda"):
        if key not in ini or len(ini[key]) == 0:
            raise InputError(f"{path}:/initial/series/{key} is missing")
    u_prime = np.sqrt(2.0 * ini["K"][0] / 3.0)
    fields = []
    for fname in sorted(os.listdir(run_dir)):
        m = re.fullmatch(r"fields_(\d+)\.h5", fname)
        if not m:
            continue
        fpath = os.path.join(run_dir, fname)
        try:
            with h5py.File(fpath, "r") as g:
                groups = {s: float(g[s].attrs["t"]) for s in g if "t" in g[s].attrs}
        except (OSError, KeyError) as e:
            raise InputError(f"{fpath}: unreadable fields file ({e})") from None
        fields.append((int(m.group(1)), fpath, groups))
    fields.sort()
    n = int(deck["domain.n"]) if "domain.n" in deck else None
    return {
        "dir": run_dir,
        "name": os.path.basename(os.path.normpath(run_dir)),
        "path": path,
        "deck": deck,
        "N": n,
        "T0": float(ini["T"][0]),
        "K0": float(ini["K"][0]),
        # nu = u' lambda / Re_lambda (docs/design.md): the run file keeps nu only in this form.
        "nu": float(u_prime * ini["lambda"][0] / ini["Re_lambda"][0]),
        "solvers": solvers,
        "fields": [(p, s) for _, p, s in fields],
    }


def curves_of(runs, solvers=None):
    """(run, solver) pairs to plot: the given solvers, else every solver but "initial"
    (or "initial" alone when a run holds nothing else)."""
    out = []
    for run in runs:
        names = [s for s in run["solvers"] if s != "initial"] or ["initial"]
        if solvers:
            names = [s for s in solvers if s in run["solvers"]]
        out.extend((run, s) for s in names)
    if not out:
        raise InputError(f"none of the solvers {', '.join(solvers)} in " + ", ".join(r["path"] for r in runs))
    return out


def _log_axes(ax):
    """Log-log axes with labels on the decades only (minor labels crowd short ranges)."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())


def colour(solver):
    return SOLVER_COLOURS.get(solver, OTHER_COLOUR)


def label(run, solver, several_runs):
    n = f", $N={run['N']}$" if run["N"] else ""
    return f"{solver}{n}" + (f" ({run['name']})" if several_runs else "")


def run_markers(pairs):
    """A marker per run when several runs hold the same solver, else none."""
    per_solver = {}
    for run, solver in pairs:
        per_solver.setdefault(solver, []).append(run["dir"])
    out = {}
    for solver, dirs in per_solver.items():
        for i, d in enumerate(dirs):
            out[(d, solver)] = MARKERS[i % len(MARKERS)] if len(dirs) > 1 else None
    return out


def nearest(values, target):
    """Index of the entry of `values` nearest `target`."""
    return int(np.argmin(np.abs(np.asarray(values) - target)))


# ---- figures ---------------------------------------------------------------------------


def _save(fig, out_dir, name, data):
    """NAME.pdf, NAME.png and the NAME.json sidecar; returns the three paths."""
    paths = [os.path.join(out_dir, f"{name}.{ext}") for ext in ("pdf", "png", "json")]
    fig.savefig(paths[0])
    fig.savefig(paths[1])
    plt.close(fig)
    with open(paths[2], "w") as f:
        json.dump(data, f, indent=1, default=_json_default)
    return paths


def _json_default(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"not JSON: {type(x)}")


def _finite(a):
    """Values <= 0 as NaN, so log axes leave them out instead of failing."""
    a = np.asarray(a, dtype=float).copy()
    a[~(a > 0)] = np.nan
    return a


def energy_decay(runs, pairs, out_dir, fit_from=0.5):
    """Figure 1: K/K0 against t/T with a power law fitted over t >= fit_from * t_end."""
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 2.6))
    markers = run_markers(pairs)
    data = {"figure": "energy_decay", "x": "t/T", "y": "K/K0", "fit_from": fit_from, "curves": []}
    several = len(runs) > 1
    for run, solver in pairs:
        s = run["solvers"][solver]["series"]
        t_T = s["t"] / run["T0"]
        k_K0 = s["K"] / run["K0"]
        keep = t_T > 0  # log axis
        ax.plot(t_T[keep], k_K0[keep], color=colour(solver), marker=markers[(run["dir"], solver)],
                markevery=max(1, keep.sum() // 8), label=label(run, solver, several))
        curve = {"run": run["dir"], "solver": solver, "N": run["N"], "colour": colour(solver), "t_over_T": t_T,
                 "K_over_K0": k_K0, "fit": None}
        sel = keep & (t_T >= fit_from * t_T.max())
        if sel.sum() >= 3:
            n, log_a = np.polyfit(np.log(t_T[sel]), np.log(k_K0[sel]), 1)
            x = np.array([t_T[sel].min(), t_T[sel].max()])
            # Drawn 1.6x above the data so both stay visible; the exponent goes in the legend,
            # where labels of several curves cannot collide.
            ax.plot(x, 1.6 * np.exp(log_a) * x**n, color=colour(solver), lw=0.8, ls="--",
                    label=f"fit $\\propto (t/T)^{{{n:.2f}}}$")
            curve["fit"] = {"t_over_T_range": x, "exponent": n, "prefactor": np.exp(log_a),
                            "drawn_offset": 1.6}
        data["curves"].append(curve)
    if any(np.any(np.asarray(c["t_over_T"]) > 0) for c in data["curves"]):
        _log_axes(ax)
    else:  # e.g. case.solver = initial: nothing after t = 0 to put on log axes
        ax.text(0.5, 0.5, "no output after $t = 0$", transform=ax.transAxes, ha="center")
    ax.set_xlabel("$t/T$")
    ax.set_ylabel("$K/K_0$")
    ax.legend(loc="lower left", fontsize=6)
    return _save(fig, out_dir, "energy_decay", data)


def spectra(runs, pairs, out_dir, at):
    """Figure 2: E(k) at each requested t/T, and the compensated spectrum against k eta."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(PAGE_WIDTH, 2.8))
    markers = run_markers(pairs)
    several = len(runs) > 1
    data = {"figure": "spectra", "at": at, "curves": []}
    styles = {}  # t/T actually used (2 decimals) -> line style
    ref = None
    for run, solver in pairs:
        rec = run["solvers"][solver]
        if "E" not in rec:
            continue
        s = rec["series"]
        chosen = {}
        for want in at:
            i = nearest(rec["spectrum_t"] / run["T0"], want)
            chosen.setdefault(i, []).append(want)
        for i, wanted in chosen.items():
            t = rec["spectrum_t"][i]
            t_T = t / run["T0"]
            j = nearest(s["t"], t)  # series and spectra are written at the same outputs
            eps = float(s["epsilon"][j])
            eta = (run["nu"] ** 3 / eps) ** 0.25
            k, E = rec["k"][1:], rec["E"][i][1:]
            comp = eps ** (-2.0 / 3.0) * k ** (5.0 / 3.0) * E
            key = f"{t_T:.2f}"
            ls = styles.setdefault(key, LINESTYLES[len(styles) % len(LINESTYLES)])
            kw = dict(color=colour(solver), ls=ls, marker=markers[(run["dir"], solver)],
                      markevery=max(1, len(k) // 8))
            ax.plot(k, _finite(E), **kw)
            bx.plot(k * eta, _finite(comp), **kw)
            if ref is None:
                ref = (k, E)
            data["curves"].append({"run": run["dir"], "solver": solver, "N": run["N"], "colour": colour(solver),
                                   "linestyle": str(ls), "t_over_T_requested": wanted,
                                   "t_over_T": t_T, "t": t, "spectrum_index": i, "k": k, "E": E, "epsilon": eps,
                                   "nu": run["nu"], "eta": eta, "k_eta": k * eta, "compensated": comp})
    if ref is not None:
        # k^(-5/3) through the first curve at a quarter of its wavenumber range.
        k, E = ref
        k0 = max(2.0, k[len(k) // 4])
        e0 = np.interp(k0, k, E)
        kk = np.array([max(1.0, k0 / 2), min(k[-1], 4 * k0)])
        ax.plot(kk, e0 * 3 * (kk / k0) ** (-5.0 / 3.0), color="0.4", lw=0.8, ls="--")
        ax.annotate("$k^{-5/3}$", (kk[1], e0 * 3 * (kk[1] / k0) ** (-5.0 / 3.0)), textcoords="offset points",
                    xytext=(2, 2), color="0.4", fontsize=7)
        data["reference"] = {"k": kk, "E": e0 * 3 * (kk / k0) ** (-5.0 / 3.0), "slope": -5.0 / 3.0}
    # Eight decades below the peak are enough: the initial field's exponential tail would
    # otherwise squeeze the inertial range into a sliver.
    for a, key in ((ax, "E"), (bx, "compensated")):
        top = max((np.nanmax(_finite(c[key])) for c in data["curves"]), default=np.nan)
        if np.isfinite(top):
            lo = min(np.nanmin(_finite(c[key])) for c in data["curves"])
            decades = 8 if key == "E" else 4
            a.set_ylim(max(lo, top * 10.0**-decades) / 2, top * 3)
    bx.axhline(C_KOLMOGOROV, color="0.4", lw=0.8, ls="--")
    bx.annotate(f"$C_K = {C_KOLMOGOROV}$", (0.02, C_KOLMOGOROV), xycoords=("axes fraction", "data"),
                textcoords="offset points", xytext=(0, 2), color="0.4", fontsize=7)
    for a in (ax, bx):
        _log_axes(a)
    ax.set_xlabel("$k$")
    ax.set_ylabel("$E(k)$")
    bx.set_xlabel("$k\\eta$")
    bx.set_ylabel("$\\varepsilon^{-2/3} k^{5/3} E(k)$")
    ax.set_title("(a)", loc="left")
    bx.set_title("(b)", loc="left")
    handles = [Line2D([], [], color=colour(s), marker=markers[(r["dir"], s)], label=label(r, s, several))
               for r, s in pairs]
    handles += [Line2D([], [], color="k", ls=ls, label=f"$t/T = {key}$") for key, ls in styles.items()]
    ax.legend(handles=handles, loc="lower left")
    return _save(fig, out_dir, "spectra", data)


def read_q(path, solver):
    with h5py.File(path, "r") as f:
        ds = _dataset(f, f"/{solver}/Q")
        if ds.ndim != 3 or len(set(ds.shape)) != 1:
            raise InputError(f"{path}:/{solver}/Q has shape {ds.shape} (expected [N][N][N])")
        return ds[()]


def q_surface(q, level, h, step=1):
    """Vertices (x, y, z) and faces of Q = level on the periodic grid of spacing h.

    The field is extended by its first plane in each direction (periodicity), so the
    surface covers the whole box [0, 2 pi]; Q is stored [z][y][x], marching cubes returns
    (z, y, x), hence the column flip. Returns None when the level is outside Q's range.
    """
    from skimage.measure import marching_cubes

    qp = np.pad(q, ((0, 1), (0, 1), (0, 1)), mode="wrap")
    if not (qp.min() < level < qp.max()):
        return None
    verts, faces, _, _ = marching_cubes(qp, level=level, spacing=(h, h, h), step_size=step)
    return verts[:, ::-1].copy(), faces


def _shade(verts, faces, rgb):
    """Lambert shading of each triangle from one light above the viewer (same for every
    panel, so the panels can be compared)."""
    tri = verts[faces]
    nrm = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True) + 1e-300
    light = np.array([-0.4, -0.6, 0.7])
    light /= np.linalg.norm(light)
    i = 0.35 + 0.65 * np.abs(nrm @ light)
    return np.clip(np.asarray(rgb)[None, :] * i[:, None], 0, 1)


def q_isosurfaces(runs, pairs, out_dir, q_at, q_level):
    """Figure 3: Q isosurfaces at one t/T, one panel per run and solver, same level and view."""
    panels = []
    for run, solver in pairs:
        have = [(p, g[solver]) for p, g in run["fields"] if solver in g]
        if not have:
            continue
        path, t = have[nearest([t for _, t in have], q_at * run["T0"])]
        panels.append({"run": run, "solver": solver, "file": path, "t": t, "t_over_T": t / run["T0"],
                       "Q": read_q(path, solver)})
    # One absolute level for all panels: q times the rms of Q over all panels together.
    rms = float(np.sqrt(np.mean([np.mean(p["Q"] ** 2) for p in panels]))) if panels else float("nan")
    level = q_level * rms
    width = COLUMN_WIDTH if len(panels) <= 1 else PAGE_WIDTH
    fig = plt.figure(figsize=(width, 3.2 if len(panels) <= 1 else 3.6))
    data = {"figure": "q_isosurfaces", "q_at": q_at, "q_level": q_level, "Q_rms_pooled": rms, "level": level,
            "view": {"elev": VIEW[0], "azim": VIEW[1]}, "panels": []}
    several = len(runs) > 1
    if not panels:
        fig.text(0.5, 0.5, "no fields_*.h5 with Q in " + ", ".join(r["dir"] for r in runs), ha="center")
    for i, p in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), i + 1, projection="3d")
        n = p["Q"].shape[0]
        h = 2 * np.pi / n
        step = max(1, -(-n // MAX_SURFACE_POINTS))
        surf = q_surface(p["Q"], level, h, step)
        nv = nf = 0
        if surf is not None:
            verts, faces = surf
            nv, nf = len(verts), len(faces)
            rgb = matplotlib.colors.to_rgb(colour(p["solver"]))
            # Rasterised: the PDF stays small for millions of triangles, the axes stay vector.
            # No antialiasing: it would draw hairline seams between neighbouring triangles.
            coll = Poly3DCollection(verts[faces], facecolors=_shade(verts, faces, rgb), edgecolors="none",
                                    antialiased=False, rasterized=True)
            ax.add_collection3d(coll)
        ax.set_xlim(0, 2 * np.pi)
        ax.set_ylim(0, 2 * np.pi)
        ax.set_zlim(0, 2 * np.pi)
        ax.set_box_aspect((1, 1, 1))
        ax.view_init(elev=VIEW[0], azim=VIEW[1])
        ticks = [0, np.pi, 2 * np.pi]
        names = ["$0$", "$\\pi$", "$2\\pi$"]
        for setter in (ax.set_xticks, ax.set_yticks, ax.set_zticks):
            setter(ticks, names)
        ax.set_xlabel("$x$", labelpad=-8)
        ax.set_ylabel("$y$", labelpad=-8)
        ax.set_zlabel("$z$", labelpad=-8)
        ax.tick_params(pad=-3)
        ax.set_title(f"{label(p['run'], p['solver'], several)}, $t/T = {p['t_over_T']:.2f}$", fontsize=8)
        data["panels"].append({"run": p["run"]["dir"], "solver": p["solver"], "N": n, "colour": colour(p["solver"]),
                               "file": p["file"],
                               "dataset": f"/{p['solver']}/Q", "t": p["t"], "t_over_T": p["t_over_T"],
                               "Q_rms": float(np.sqrt(np.mean(p["Q"] ** 2))), "step_size": step,
                               "n_vertices": nv, "n_faces": nf})
    if panels:
        fig.suptitle(f"$Q = {q_level:g}\\,\\langle Q^2\\rangle^{{1/2}} = {level:.3g}$", fontsize=8)
    return _save(fig, out_dir, "q_isosurfaces", data)


def read_velocity(path, solver):
    """/<solver>/velocity of a fields file, [z][y][x][component]."""
    with h5py.File(path, "r") as f:
        ds = _dataset(f, f"/{solver}/velocity")
        if ds.ndim != 4 or ds.shape[3] != 3 or len(set(ds.shape[:3])) != 1:
            raise InputError(f"{path}:/{solver}/velocity has shape {ds.shape} (expected [N][N][N][3])")
        return ds[()]


def gradient_invariants(u):
    """Q = -tr(A^2)/2 and R = -tr(A^3)/3 of A_ij = du_i/dx_j at every grid point, and
    <Q_W> = <w.w>/4 = <sum_ij (A_ij - A_ji)^2>/8.

    The twin of gradient_invariants() in src/core/diagnostics.cpp: spectral derivatives i k_j
    with the Nyquist wavenumber set to zero, the same trace forms (= -det A where tr A = 0).
    `u` is a fields file's velocity, [z][y][x][component]; Q and R come back [z][y][x].
    """
    n = u.shape[0]
    k = np.fft.fftfreq(n, 1.0 / n)
    k[n // 2] = 0.0  # the Nyquist mode has no sign: its odd derivative is zero
    kx = np.fft.rfftfreq(n, 1.0 / n)
    kx[-1] = 0.0
    kj = [kx[None, None, :], k[None, :, None], k[:, None, None]]  # x_j along the [z][y][x] axes
    a = np.empty((3, 3) + u.shape[:3])
    for i in range(3):
        uh = np.fft.rfftn(u[..., i])
        for j in range(3):
            a[i, j] = np.fft.irfftn(1j * kj[j] * uh, s=u.shape[:3], axes=(0, 1, 2))
    tr2 = sum(a[i, j] * a[j, i] for i in range(3) for j in range(3))
    tr3 = sum(a[i, j] * a[j, m] * a[m, i] for i in range(3) for j in range(3) for m in range(3))
    q_w = sum(np.mean((a[i, j] - a[j, i]) ** 2) for i in range(3) for j in range(3)) / 8.0
    return -0.5 * tr2, -tr3 / 3.0, float(q_w)


def lattice_edges(lo, hi, width):
    """Bin edges at integer multiples of `width` covering [lo, hi]."""
    i0, i1 = int(np.floor(lo / width)), int(np.floor(hi / width)) + 1
    return np.arange(i0, i1 + 1) * width


def vieillefosse(r):
    """Q on the Vieillefosse line 27 R^2/4 + Q^3 = 0 (zero discriminant of the eigenvalue
    equation of A: real eigenvalues below it, complex ones above); the same curve in the
    normalised units Q/<Q_W>, R/<Q_W>^(3/2), which is why R takes the power 3/2."""
    return -np.cbrt(27.0 / 4.0 * np.asarray(r) ** 2)


def _fields_at(run, solver, q_at):
    """(path, t) of the fields file nearest q_at that holds `solver`, or None."""
    have = [(p, g[solver]) for p, g in run["fields"] if solver in g]
    if not have:
        return None
    return have[nearest([t for _, t in have], q_at * run["T0"])]


def q_pdf(runs, pairs, out_dir, q_at):
    """Figure 5: PDF of Q/<Q^2>^(1/2) for each run and solver at one t/T, log-y."""
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 2.6))
    markers = run_markers(pairs)
    several = len(runs) > 1
    data = {"figure": "q_pdf", "q_at": q_at, "x": "Q/<Q^2>^1/2", "y": "PDF", "bin_width": Q_BIN_WIDTH,
            "curves": []}
    for run, solver in pairs:
        found = _fields_at(run, solver, q_at)
        if found is None:
            continue
        path, t = found
        q = read_q(path, solver).ravel()
        rms = float(np.sqrt(np.mean(q**2)))
        x = q / rms
        edges = lattice_edges(x.min(), x.max(), Q_BIN_WIDTH)
        pdf, _ = np.histogram(x, bins=edges, density=True)
        centres = 0.5 * (edges[1:] + edges[:-1])
        ax.plot(centres, _finite(pdf), color=colour(solver), marker=markers[(run["dir"], solver)],
                markevery=max(1, len(centres) // 8), drawstyle="steps-mid",
                label=f"{label(run, solver, several)}, $t/T = {t / run['T0']:.2f}$")
        data["curves"].append({"run": run["dir"], "solver": solver, "N": run["N"], "colour": colour(solver),
                               "file": path, "dataset": f"/{solver}/Q", "t": t, "t_over_T": t / run["T0"],
                               "Q_rms": rms, "edges": edges, "centres": centres, "pdf": pdf})
    if data["curves"]:
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.legend(loc="upper right", fontsize=6)
    else:
        ax.text(0.5, 0.5, "no fields_*.h5 with Q", transform=ax.transAxes, ha="center")
    ax.set_xlabel("$Q/\\langle Q^2\\rangle^{1/2}$")
    ax.set_ylabel("PDF")
    return _save(fig, out_dir, "q_pdf", data)


def qr_pdf(runs, pairs, out_dir, q_at):
    """Figure 6: joint PDF of (R, Q) of grad u (the teardrop), one panel per run and solver,
    with the Vieillefosse line; Q in units of <Q_W>, R of <Q_W>^(3/2)."""
    panels = []
    for run, solver in pairs:
        found = _fields_at(run, solver, q_at)
        if found is None:
            continue
        path, t = found
        q, r, q_w = gradient_invariants(read_velocity(path, solver))
        panels.append({"run": run, "solver": solver, "file": path, "t": t, "Q": q.ravel() / q_w,
                       "R": r.ravel() / q_w**1.5, "q_w": q_w})
    width = COLUMN_WIDTH if len(panels) <= 1 else PAGE_WIDTH
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(width, 2.8), sharex=True, sharey=True, squeeze=False)
    data = {"figure": "qr_pdf", "q_at": q_at, "x": "R/<Q_W>^3/2", "y": "Q/<Q_W>", "bin_width": QR_BIN_WIDTH,
            "panels": []}
    several = len(runs) > 1
    if not panels:
        axes[0, 0].text(0.5, 0.5, "no fields_*.h5 with velocity", transform=axes[0, 0].transAxes, ha="center")
        return _save(fig, out_dir, "qr_pdf", data)
    # Common bins and levels, so that the panels compare shape for shape.
    r_edges = lattice_edges(min(p["R"].min() for p in panels), max(p["R"].max() for p in panels), QR_BIN_WIDTH)
    q_edges = lattice_edges(min(p["Q"].min() for p in panels), max(p["Q"].max() for p in panels), QR_BIN_WIDTH)
    floor = max(QR_MIN_SAMPLES / (len(p["Q"]) * QR_BIN_WIDTH**2) for p in panels)
    levels = [lv for lv in QR_LEVELS if lv >= floor]
    data["levels"] = levels
    data["level_floor"] = floor
    r_c, q_c = 0.5 * (r_edges[1:] + r_edges[:-1]), 0.5 * (q_edges[1:] + q_edges[:-1])
    inside = np.zeros((len(q_c), len(r_c)), dtype=bool)
    for p in panels:
        # histogram2d's first argument runs along axis 0: pdf[i, j] is Q bin i, R bin j.
        p["pdf"], _, _ = np.histogram2d(p["Q"], p["R"], bins=[q_edges, r_edges], density=True)
        inside |= p["pdf"] >= (levels[0] if levels else floor)
    # Axes over the region of the lowest level drawn (pooled), one bin beyond.
    qi, ri = np.nonzero(inside)
    if len(qi) == 0:  # no bin reaches the lowest level: the whole range
        qi, ri = np.array([0, len(q_c) - 1]), np.array([0, len(r_c) - 1])
    r_lim = (r_edges[max(ri.min() - 1, 0)], r_edges[min(ri.max() + 2, len(r_edges) - 1)])
    q_lim = (q_edges[max(qi.min() - 1, 0)], q_edges[min(qi.max() + 2, len(q_edges) - 1)])
    r_line = np.linspace(*r_lim, 201)
    for ax, p in zip(axes[0], panels):
        if levels:
            with np.errstate(divide="ignore"):
                logp = np.log10(p["pdf"])
            cs = ax.contour(r_c, q_c, logp, levels=np.log10(levels), colors=colour(p["solver"]),
                            linestyles="solid", linewidths=np.linspace(0.5, 1.2, len(levels)))
            ax.clabel(cs, fmt=lambda v: f"$10^{{{v:.0f}}}$", fontsize=5, inline_spacing=1)
        ax.plot(r_line, vieillefosse(r_line), color="0.3", lw=0.8, ls="--")
        ax.axhline(0, color="0.6", lw=0.4)
        ax.axvline(0, color="0.6", lw=0.4)
        ax.set_xlim(*r_lim)
        ax.set_ylim(*q_lim)
        ax.set_xlabel("$R/\\langle Q_W\\rangle^{3/2}$")
        t_T = p["t"] / p["run"]["T0"]
        ax.set_title(f"{label(p['run'], p['solver'], several)}, $t/T = {t_T:.2f}$", fontsize=8)
        data["panels"].append({"run": p["run"]["dir"], "solver": p["solver"], "N": p["run"]["N"],
                               "colour": colour(p["solver"]), "file": p["file"], "dataset": f"/{p['solver']}/velocity",
                               "t": p["t"], "t_over_T": t_T, "Q_W_mean": p["q_w"], "R_edges": r_edges,
                               "Q_edges": q_edges, "pdf": p["pdf"]})
    axes[0, 0].set_ylabel("$Q/\\langle Q_W\\rangle$")
    data["vieillefosse"] = {"R": r_line, "Q": vieillefosse(r_line), "equation": "27 R^2/4 + Q^3 = 0"}
    data["limits"] = {"R": r_lim, "Q": q_lim}
    return _save(fig, out_dir, "qr_pdf", data)


def statistics(runs, pairs, out_dir):
    """Figure 4: Re_lambda, L and S_3 against t/T."""
    fig, axes = plt.subplots(1, 3, figsize=(PAGE_WIDTH, 2.3))
    markers = run_markers(pairs)
    several = len(runs) > 1
    panels = [("Re_lambda", "$Re_\\lambda$"), ("L", "$L$ (box $2\\pi$)"), ("S3", "$S_3$")]
    data = {"figure": "statistics", "x": "t/T", "curves": []}
    for run, solver in pairs:
        s = run["solvers"][solver]["series"]
        t_T = s["t"] / run["T0"]
        curve = {"run": run["dir"], "solver": solver, "N": run["N"], "colour": colour(solver), "t_over_T": t_T}
        for ax, (key, _) in zip(axes, panels):
            ax.plot(t_T, s[key], color=colour(solver), marker=markers[(run["dir"], solver)],
                    markevery=max(1, len(t_T) // 8), label=label(run, solver, several))
            curve[key] = s[key]
        data["curves"].append(curve)
    for ax, (key, text), tag in zip(axes, panels, "abc"):
        ax.set_xlabel("$t/T$")
        ax.set_ylabel(text)
        ax.set_title(f"({tag})", loc="left")
    axes[0].legend(loc="best")
    return _save(fig, out_dir, "statistics", data)


def make_figures(run_dirs, out_dir, at=(1.0, 5.0, 10.0), q_at=None, q_level=1.0, solvers=None):
    """Writes every figure of `run_dirs` into `out_dir`; returns the paths written."""
    runs = [read_run(d) for d in run_dirs]
    pairs = curves_of(runs, solvers)
    os.makedirs(out_dir, exist_ok=True)
    at = [float(a) for a in at]
    with plt.style.context(STYLE):
        paths = []
        paths += energy_decay(runs, pairs, out_dir)
        paths += spectra(runs, pairs, out_dir, at)
        paths += q_isosurfaces(runs, pairs, out_dir, at[0] if q_at is None else q_at, q_level)
        paths += statistics(runs, pairs, out_dir)
        paths += q_pdf(runs, pairs, out_dir, at[0] if q_at is None else q_at)
        paths += qr_pdf(runs, pairs, out_dir, at[0] if q_at is None else q_at)
    return paths


def _floats(text):
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of numbers") from None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders (each with run.h5)")
    p.add_argument("--out", help="output folder (default RUN_DIR/figures of the first run)")
    p.add_argument("--at", type=_floats, default=[1.0, 5.0, 10.0], help="t/T of the spectra (default 1,5,10)")
    p.add_argument("--q-at", type=float, help="t/T of the Q isosurfaces and PDFs (default: the first --at)")
    p.add_argument("--q-level", type=float, default=1.0, help="isosurface level in units of <Q^2>^1/2 (default 1)")
    p.add_argument("--solvers", type=lambda s: [v.strip() for v in s.split(",") if v.strip()],
                   help="solver groups to plot (default: all but initial)")
    a = p.parse_args(argv)
    if not a.at:
        p.error("--at is empty")
    out = a.out or os.path.join(a.runs[0], "figures")
    try:
        paths = make_figures(a.runs, out, a.at, a.q_at, a.q_level, a.solvers)
    except InputError as e:
        print(f"figures.py: error: {e}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
