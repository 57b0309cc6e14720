"""figures.py on run folders written by the real program: every figure file is there and
non-empty, at the journal width, and the plotted data (from each figure's JSON sidecar) equal
what run.h5 and fields_*.h5 hold."""

import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

import figures
from conftest import REPO

AT = [0.5, 1.0, 2.0]
#: Widths of the saved figures in inches (constrained layout keeps them exact).
WIDTHS = {"energy_decay": figures.COLUMN_WIDTH, "spectra": figures.PAGE_WIDTH,
          "q_isosurfaces": figures.COLUMN_WIDTH, "statistics": figures.PAGE_WIDTH,
          "q_pdf": figures.COLUMN_WIDTH, "qr_pdf": figures.COLUMN_WIDTH}


@pytest.fixture(scope="module")
def made(spectral_run, tmp_path_factory):
    """Figures of the spectral run through the command line, as a user makes them."""
    out = tmp_path_factory.mktemp("figures")
    r = subprocess.run([sys.executable, os.path.join(REPO, "postprocess", "figures.py"), spectral_run, "--out",
                        str(out), "--at", ",".join(map(str, AT)), "--q-at", "2"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return spectral_run, str(out), r.stdout.split()


def sidecar(out, name):
    with open(os.path.join(out, f"{name}.json")) as f:
        return json.load(f)


def stored_q(entry):
    """The Q field a sidecar entry names (its file and dataset), checking the time it gives."""
    with h5py.File(entry["file"], "r") as f:
        assert f[entry["solver"]].attrs["t"] == entry["t"]
        return f[entry["dataset"]][()]


def series(run, solver, name):
    with h5py.File(os.path.join(run, "run.h5"), "r") as f:
        return f[f"/{solver}/series/{name}"][()]


def test_every_figure_file_is_written_and_printed(made):
    _, out, printed = made
    for name in figures.FIGURES:
        for ext in ("pdf", "png", "json"):
            path = os.path.join(out, f"{name}.{ext}")
            assert os.path.getsize(path) > 0, path
            assert path in printed, f"{path} not printed"
        with open(os.path.join(out, f"{name}.pdf"), "rb") as f:
            assert f.read(5) == b"%PDF-"
        png = os.path.join(out, f"{name}.png")
        with open(png, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
        import matplotlib.image

        width_px = matplotlib.image.imread(png).shape[1]
        assert abs(width_px - WIDTHS[name] * 300) <= 1, f"{png}: {width_px} px, expected {WIDTHS[name]} in at 300 dpi"


def test_energy_decay_plots_the_run_files_K(made):
    run, out, _ = made
    d = sidecar(out, "energy_decay")
    (c,) = d["curves"]
    assert c["solver"] == "spectral" and c["N"] == 16 and c["colour"] == figures.SOLVER_COLOURS["spectral"]
    T0, K0 = series(run, "initial", "T")[0], series(run, "initial", "K")[0]
    np.testing.assert_array_equal(c["t_over_T"], series(run, "spectral", "t") / T0)
    np.testing.assert_array_equal(c["K_over_K0"], series(run, "spectral", "K") / K0)
    # The fit covers the final half of the run and decays.
    lo, hi = c["fit"]["t_over_T_range"]
    assert hi == pytest.approx(2.0) and lo >= 1.0 - 1e-9 and c["fit"]["exponent"] < 0


def test_spectra_plot_the_run_files_E_at_the_requested_times(made):
    run, out, _ = made
    d = sidecar(out, "spectra")
    with h5py.File(os.path.join(run, "run.h5"), "r") as f:
        k, t, E = f["/spectral/spectra/k"][()], f["/spectral/spectra/t"][()], f["/spectral/spectra/E"][()]
        T0 = f["/initial/series/T"][0]
        eps, ts = f["/spectral/series/epsilon"][()], f["/spectral/series/t"][()]
    assert sorted(x for c in d["curves"] for x in c["t_over_T_requested"]) == AT
    for c in d["curves"]:
        i = c["spectrum_index"]
        assert c["t_over_T"] == pytest.approx(c["t_over_T_requested"][0], abs=0.051)  # outputs every 0.1 T
        assert c["t"] == t[i]
        np.testing.assert_array_equal(c["k"], k[1:])
        np.testing.assert_array_equal(c["E"], E[i][1:])
        assert c["epsilon"] == eps[np.argmin(abs(ts - t[i]))]
        np.testing.assert_allclose(c["compensated"], c["epsilon"] ** (-2 / 3) * k[1:] ** (5 / 3) * E[i][1:],
                                   rtol=1e-12)
        np.testing.assert_allclose(c["k_eta"], k[1:] * (c["nu"] ** 3 / c["epsilon"]) ** 0.25, rtol=1e-12)
        assert t[i] / T0 == pytest.approx(c["t_over_T"])


def test_statistics_plot_the_run_files_series(made):
    run, out, _ = made
    (c,) = sidecar(out, "statistics")["curves"]
    T0 = series(run, "initial", "T")[0]
    np.testing.assert_array_equal(c["t_over_T"], series(run, "spectral", "t") / T0)
    for name in ("Re_lambda", "L", "S3"):
        np.testing.assert_array_equal(c[name], series(run, "spectral", name))


def test_q_isosurface_is_the_fields_files_Q_at_the_level(made):
    run, out, _ = made
    d = sidecar(out, "q_isosurfaces")
    (p,) = d["panels"]
    assert p["solver"] == "spectral" and p["t_over_T"] == pytest.approx(2.0)
    q = stored_q(p)
    rms = np.sqrt(np.mean(q**2))
    assert d["level"] == pytest.approx(d["q_level"] * rms, rel=1e-12)
    verts, faces = figures.q_surface(q, d["level"], 2 * np.pi / q.shape[0], p["step_size"])
    assert (len(verts), len(faces)) == (p["n_vertices"], p["n_faces"]) and p["n_faces"] > 0
    # The periodic extension makes the surface span the box [0, 2 pi].
    assert verts.min() >= 0 and verts.max() <= 2 * np.pi + 1e-12


def test_q_pdf_is_the_histogram_of_the_fields_files_Q(made):
    run, out, _ = made
    d = sidecar(out, "q_pdf")
    (c,) = d["curves"]
    assert c["solver"] == "spectral" and c["t_over_T"] == pytest.approx(2.0)
    q = stored_q(c).ravel()
    rms = np.sqrt(np.mean(q**2))
    assert c["Q_rms"] == pytest.approx(rms, rel=1e-12)
    edges = np.asarray(c["edges"])
    # Edges on compare's lattice (multiples of 0.1) and covering every value.
    np.testing.assert_allclose(edges / d["bin_width"], np.round(edges / d["bin_width"]), atol=1e-9)
    assert edges[0] <= (q / rms).min() and edges[-1] > (q / rms).max()
    counts, _ = np.histogram(q / rms, bins=edges)
    np.testing.assert_allclose(c["pdf"], counts / (q.size * np.diff(edges)), rtol=1e-12)
    # A PDF: unit integral.
    assert np.sum(np.asarray(c["pdf"]) * np.diff(edges)) == pytest.approx(1.0, rel=1e-12)


def abc_velocity(n, amp=(0.9, 0.6, 0.3), k=(1, 2, 3)):
    """A generalised ABC flow on the n^3 grid, [z][y][x][component], with the closed forms of
    Q = -(ac + be + df) and R = -(ade + bcf) of its gradient [[0, a, b], [c, 0, d], [e, f, 0]]
    (tests/core/test_diagnostics.cpp derives them) and <Q_W> = <w.w>/4."""
    A, B, C = amp
    k1, k2, k3 = k
    x = 2 * np.pi * np.arange(n) / n
    z, y, x = np.meshgrid(x, x, x, indexing="ij")
    u = np.stack([A * np.sin(k3 * z) + C * np.cos(k2 * y), B * np.sin(k1 * x) + A * np.cos(k3 * z),
                  C * np.sin(k2 * y) + B * np.cos(k1 * x)], axis=-1)
    a, b, c = -C * k2 * np.sin(k2 * y), A * k3 * np.cos(k3 * z), B * k1 * np.cos(k1 * x)
    d, e, f = -A * k3 * np.sin(k3 * z), -B * k1 * np.sin(k1 * x), C * k2 * np.cos(k2 * y)
    q_w = 0.25 * (k1**2 * B**2 + k2**2 * C**2 + k3**2 * A**2)
    return u, -(a * c + b * e + d * f), -(a * d * e + b * c * f), q_w


def test_gradient_invariants_twin_against_closed_form():
    # One Fourier mode per entry: exact spectral derivatives, FFT round-off only.
    u, q, r, q_w = abc_velocity(16)
    q2, r2, q_w2 = figures.gradient_invariants(u)
    assert np.abs(r).max() > 0.9  # R is far from zero here
    np.testing.assert_allclose(q2, q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(r2, r, rtol=0, atol=1e-12)
    assert q_w2 == pytest.approx(q_w, rel=1e-12)


def test_gradient_invariants_twin_matches_the_programs_Q(spectral_run):
    # The fields file's Q is C++'s q_criterion() of the same velocity: the two derivative
    # conventions (wavenumbers, axes, Nyquist) agree to round-off.
    run = figures.read_run(spectral_run)
    path = run["fields"][-1][0]
    q, _, _ = figures.gradient_invariants(figures.read_velocity(path, "spectral"))
    stored = figures.read_q(path, "spectral")
    np.testing.assert_allclose(q, stored, rtol=0, atol=1e-12 * np.abs(stored).max())


def test_qr_pdf_is_the_joint_histogram_of_the_invariants(made):
    run, out, _ = made
    d = sidecar(out, "qr_pdf")
    (p,) = d["panels"]
    assert p["solver"] == "spectral" and p["t_over_T"] == pytest.approx(2.0)
    q, r, q_w = figures.gradient_invariants(figures.read_velocity(p["file"], "spectral"))
    assert p["Q_W_mean"] == pytest.approx(q_w, rel=1e-12)
    # <Q_W> = <w.w>/4 on the grid is eps/(4 nu) of the run file's series (solenoidal u).
    info = figures.read_run(run)
    ts, eps = series(run, "spectral", "t"), series(run, "spectral", "epsilon")
    assert 4 * info["nu"] * q_w == pytest.approx(eps[np.argmin(abs(ts - p["t"]))], rel=1e-10)
    qe, re = np.asarray(p["Q_edges"]), np.asarray(p["R_edges"])
    counts, _, _ = np.histogram2d(q.ravel() / q_w, r.ravel() / q_w**1.5, bins=[qe, re])
    area = np.outer(np.diff(qe), np.diff(re))
    np.testing.assert_allclose(p["pdf"], counts / (q.size * area), rtol=1e-12)
    assert np.sum(np.asarray(p["pdf"]) * area) == pytest.approx(1.0, rel=1e-12)
    # Levels no finer than QR_MIN_SAMPLES samples in a bin.
    assert d["levels"] and min(d["levels"]) >= figures.QR_MIN_SAMPLES / (q.size * d["bin_width"] ** 2)
    v = d["vieillefosse"]
    np.testing.assert_allclose(27 * np.asarray(v["R"]) ** 2 / 4 + np.asarray(v["Q"]) ** 3, 0, atol=1e-12)
    # The teardrop: strain-dominated points (Q < 0) lean to R > 0 (sheet forming), the
    # restricted Euler tail along the right branch of the Vieillefosse line.
    qn, rn = q.ravel() / q_w, r.ravel() / q_w**1.5
    assert np.mean(rn[qn < 0] > 0) > 0.5


def test_two_runs_share_colours_and_level(spectral_run, second_run, tmp_path):
    paths = figures.make_figures([spectral_run, second_run], str(tmp_path), at=[1.0], q_at=1.0)
    assert len(paths) == 3 * len(figures.FIGURES)
    d = sidecar(str(tmp_path), "energy_decay")
    assert [c["run"] for c in d["curves"]] == [spectral_run, second_run]
    assert {c["colour"] for c in d["curves"]} == {figures.SOLVER_COLOURS["spectral"]}
    q = sidecar(str(tmp_path), "q_isosurfaces")
    assert len(q["panels"]) == 2  # side by side, one absolute level for both
    assert q["level"] == pytest.approx(np.sqrt(np.mean([p["Q_rms"] ** 2 for p in q["panels"]])))
    qr = sidecar(str(tmp_path), "qr_pdf")
    assert len(qr["panels"]) == 2  # side by side on common bins
    assert qr["panels"][0]["Q_edges"] == qr["panels"][1]["Q_edges"]
    assert len(sidecar(str(tmp_path), "q_pdf")["curves"]) == 2


def test_a_run_with_one_solver_renders_that_one(initial_run, tmp_path):
    figures.make_figures([initial_run], str(tmp_path), at=[1.0])
    q = sidecar(str(tmp_path), "q_isosurfaces")
    assert [p["solver"] for p in q["panels"]] == ["initial"] and q["panels"][0]["n_faces"] > 0
    for name in figures.FIGURES:
        assert os.path.getsize(tmp_path / f"{name}.pdf") > 0


def test_a_folder_without_run_file_is_bad_input(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(REPO, "postprocess", "figures.py"), str(tmp_path), "--out",
                        str(tmp_path / "figs")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert os.path.join(str(tmp_path), "run.h5") in r.stderr
    assert not (tmp_path / "figs").exists()
