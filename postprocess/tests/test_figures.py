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
          "q_isosurfaces": figures.COLUMN_WIDTH, "statistics": figures.PAGE_WIDTH}


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
    with h5py.File(p["file"], "r") as f:
        q = f[p["dataset"]][()]
        assert f["spectral"].attrs["t"] == p["t"]
    rms = np.sqrt(np.mean(q**2))
    assert d["level"] == pytest.approx(d["q_level"] * rms, rel=1e-12)
    verts, faces = figures.q_surface(q, d["level"], 2 * np.pi / q.shape[0], p["step_size"])
    assert (len(verts), len(faces)) == (p["n_vertices"], p["n_faces"]) and p["n_faces"] > 0
    # The periodic extension makes the surface span the box [0, 2 pi].
    assert verts.min() >= 0 and verts.max() <= 2 * np.pi + 1e-12


def test_two_runs_share_colours_and_level(spectral_run, second_run, tmp_path):
    paths = figures.make_figures([spectral_run, second_run], str(tmp_path), at=[1.0], q_at=1.0)
    assert len(paths) == 3 * len(figures.FIGURES)
    d = sidecar(str(tmp_path), "energy_decay")
    assert [c["run"] for c in d["curves"]] == [spectral_run, second_run]
    assert {c["colour"] for c in d["curves"]} == {figures.SOLVER_COLOURS["spectral"]}
    q = sidecar(str(tmp_path), "q_isosurfaces")
    assert len(q["panels"]) == 2  # side by side, one absolute level for both
    assert q["level"] == pytest.approx(np.sqrt(np.mean([p["Q_rms"] ** 2 for p in q["panels"]])))


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
