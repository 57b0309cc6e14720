#!/usr/bin/env python3
"""The vortex solver against the spectral one over a whole run of `case.solver = both`.

    python3 bench/vortex/agreement.py [--at 1] RUN_DIR [RUN_DIR ...]

One row per run folder (its run.h5), from the series and spectra both solvers wrote at the same
output times:
  kmax_eta   the smallest k_max η over the run, vortex / spectral (each solver its own k_max)
  K, eps     max over the outputs of |K_v/K_s - 1| and |ε_v/ε_s - 1|
  S3         max over the outputs with t/T >= AT of |S3_v - S3_s|
  worst      the shell 1 <= k <= the vortex k_max (at t/T = AT) where |E_v/E_s - 1| is largest,
             and E_v/E_s there
  k_agree    the largest k with |E_v/E_s - 1| <= 0.1 on every shell up to it (as `vortexhit
             compare` counts it), out of the vortex k_max
T is the initial field's large-eddy turnover time (/initial/series/T), as `vortexhit compare`
uses.

    python3 bench/vortex/agreement.py --reference REF_ROOT [--at 1] RUN_DIR [RUN_DIR ...]

adds, for each run, both solvers against a finer spectral run of the same flow, REF_ROOT/<the
run folder's name> (e.g. `--domain.n=256 --case.solver=spectral`; the initial field is keyed by
global wavenumber, so it starts from the same modes): at t/T = AT and on the shells the run's
vortex solver keeps, E/E_ref of each solver on the last shells and each one's k_agree against
the reference (the spectral solver's own truncation error beside the vortex solver's).
Needs numpy and h5py (postprocess/requirements.txt).
"""
import argparse
import math
import os
import sys

import h5py
import numpy as np


def series(f, solver, name):
    return np.asarray(f[f"{solver}/series/{name}"][...], dtype=float)


def row(path, at):
    with h5py.File(f"{path}/run.h5", "r") as f:
        T0 = float(f["initial/series/T"][0])
        ts, tv = series(f, "spectral", "t"), series(f, "vortex", "t")
        n = min(len(ts), len(tv))
        if n == 0 or not np.allclose(ts[:n], tv[:n], rtol=0, atol=1e-9 * max(1.0, ts[n - 1])):
            raise SystemExit(f"{path}: the two solvers' output times differ")
        t = ts[:n] / T0

        def rel(name):
            return np.max(np.abs(series(f, "vortex", name)[:n] / series(f, "spectral", name)[:n] - 1))

        late = t >= at - 1e-9
        s3 = np.abs(series(f, "vortex", "S3")[:n] - series(f, "spectral", "S3")[:n])
        i = int(np.argmin(np.abs(t - at)))
        k = np.asarray(f["vortex/spectra/k"][...], dtype=float)
        ev = np.asarray(f["vortex/spectra/E"][i], dtype=float)
        es = np.asarray(f["spectral/spectra/E"][i], dtype=float)
        kmax_v = float(series(f, "vortex", "kmax")[i])
        shells = (k >= 1) & (k <= kmax_v + 1e-9)
        ratio = ev[shells] / es[shells]
        j = int(np.argmax(np.abs(ratio - 1)))
        ok = np.abs(ratio - 1) <= 0.1
        k_agree = int(k[shells][np.argmin(ok)] - 1) if not ok.all() else int(k[shells][-1])
        return {
            "run": path.rstrip("/").split("/")[-1],
            "t_end": t[n - 1],
            "eta_v": np.min(series(f, "vortex", "kmax_eta")[:n]),
            "eta_s": np.min(series(f, "spectral", "kmax_eta")[:n]),
            "K": rel("K"),
            "eps": rel("epsilon"),
            "S3": np.max(s3[late]) if late.any() else math.nan,
            "worst_k": int(k[shells][j]),
            "worst": ratio[j],
            "k_agree": k_agree,
            "kmax_v": kmax_v,
            "t_at": t[i],
        }


def spectrum(path, solver, at):
    """(t/T, k, E) of `solver` in path/run.h5 at the output nearest t/T = at."""
    with h5py.File(f"{path}/run.h5", "r") as f:
        t = series(f, solver, "t") / float(f["initial/series/T"][0])
        i = int(np.argmin(np.abs(t - at)))
        return t[i], np.asarray(f[f"{solver}/spectra/k"][...]), np.asarray(f[f"{solver}/spectra/E"][i], dtype=float)


LAST_SHELLS = (50, 56, 60, 62, 63)


def reference_row(path, ref, at):
    """E/E_ref of both solvers of `path` against the spectral solver of the finer run `ref`."""
    tr, _, er = spectrum(ref, "spectral", at)
    with h5py.File(f"{path}/run.h5", "r") as f:
        kmax_v = float(series(f, "vortex", "kmax")[0])
    out = {}
    for solver in ("spectral", "vortex"):
        t, k, e = spectrum(path, solver, at)
        if abs(t - tr) > 1e-6:
            raise SystemExit(f"{path} and {ref}: no common output near t/T = {at}")
        n = int(min(kmax_v, len(k) - 1))
        ratio = e[1:n + 1] / er[1:n + 1]
        ok = np.abs(ratio - 1) <= 0.1
        out[solver] = (ratio, int(np.argmin(ok)) if not ok.all() else n)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--at", type=float, default=1.0, help="t/T of the spectrum and the start of the S3 maximum")
    ap.add_argument("--reference", metavar="REF_ROOT", help="folder of finer spectral runs, one per run folder name")
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    if a.reference:
        shells = " ".join(f"{k:>5}" for k in LAST_SHELLS)
        print(f"{'run':<28} E/E_ref at t/T={a.at:g}, k = {shells}   k_agree vs the reference")
        for p in a.runs:
            name = os.path.basename(p.rstrip("/"))
            r = reference_row(p, os.path.join(a.reference, name), a.at)
            for solver in ("spectral", "vortex"):
                ratio, k_agree = r[solver]
                vals = " ".join(f"{ratio[k - 1]:5.3f}" if k <= len(ratio) else "    -" for k in LAST_SHELLS)
                print(f"{name + ' ' + solver:<28} {'':>24}{vals}   {k_agree} of {len(ratio)}")
        return 0
    print(f"{'run':<28} {'t/T':>5} {'kmax_eta v/s':>13} {'max|dK|':>8} {'max|deps|':>9} "
          f"{'max|dS3|':>8}  E_v/E_s at t/T={a.at:g}: worst shell, k_agree")
    for p in a.runs:
        r = row(p, a.at)
        print(f"{r['run']:<28} {r['t_end']:5.2f} {r['eta_v']:6.2f}/{r['eta_s']:<6.2f} {100 * r['K']:7.2f}% "
              f"{100 * r['eps']:8.2f}% {r['S3']:8.3f}  k = {r['worst_k']}: {r['worst']:.3f}, "
              f"{r['k_agree']} of {r['kmax_v']:.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
