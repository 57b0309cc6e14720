"""scripts/run.sh ends a run with its figures in <run dir>/figures/ and prints their paths.

run.sh calls scripts/setup.sh, which builds build/ incrementally; the test runs only where
build/vortexhit already exists (as after scripts/test.sh's setup), so it never starts a full
build by itself.
"""

import os
import subprocess

import pytest

import figures
from conftest import REPO


def test_run_script_makes_the_figures_of_the_run(tmp_path):
    exe = os.path.join(REPO, "build", "vortexhit")
    if not os.access(exe, os.X_OK):
        pytest.skip(f"no {exe}: scripts/run.sh would build the whole project first")
    run_dir = tmp_path / "quick16"
    r = subprocess.run([os.path.join(REPO, "scripts", "run.sh"), "--domain.n=16", "--case.solver=spectral",
                        "--output.dir", str(run_dir), "--quiet"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    printed = r.stdout.split()
    for name in figures.FIGURES:
        for ext in ("pdf", "png", "json"):
            path = str(run_dir / "figures" / f"{name}.{ext}")
            assert os.path.getsize(path) > 0 and path in printed, path
