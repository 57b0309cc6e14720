"""Small run folders written by the real program, shared by the postprocess tests.

The binary is $VORTEXHIT or <repo>/build/vortexhit (what scripts/test.sh builds); without it
the tests that need a run are skipped with the reason. Each run is 16^3 on the CPU, well under
a second.
"""

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "postprocess"))


def vortexhit():
    """Path of the vortexhit binary, or skip the calling test."""
    exe = os.environ.get("VORTEXHIT") or os.path.join(REPO, "build", "vortexhit")
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        pytest.skip(f"no vortexhit binary at {exe} (build it with scripts/setup.sh, or set VORTEXHIT)")
    return exe


def make_run(out_dir, *overrides):
    """Runs inputs/quick.ini at 16^3 into `out_dir` with extra --key=value `overrides`."""
    cmd = [vortexhit(), "run", os.path.join(REPO, "inputs", "quick.ini"), "--quiet", "--device=cpu",
           "--domain.n=16", f"--output.dir={out_dir}", *overrides]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return str(out_dir)


@pytest.fixture(scope="session")
def spectral_run(tmp_path_factory):
    """Spectral solver to t/T = 2, fields at t/T = 0, 1 and 2."""
    return make_run(tmp_path_factory.mktemp("runs") / "spectral", "--case.solver=spectral",
                    "--time.t_end_over_T=2", "--output.fields_at=0,1,2")


@pytest.fixture(scope="session")
def second_run(tmp_path_factory):
    """Another seed of the same case: a second run of the same solver."""
    return make_run(tmp_path_factory.mktemp("runs") / "seed2", "--case.solver=spectral", "--case.seed=2")


@pytest.fixture(scope="session")
def initial_run(tmp_path_factory):
    """case.solver = initial: the initial field alone (one solver group, one output)."""
    return make_run(tmp_path_factory.mktemp("runs") / "initial", "--case.solver=initial")
