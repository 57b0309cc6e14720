#!/usr/bin/env bash
# One solver on R ranks against one rank at N³ on the CPU: 20 steps of a fixed Δt, then the
# largest differences of every run.h5 series and spectrum of the solver and of the initial field
# (relative to each dataset's largest value; divergence_rel and helicity against their scales,
# as tests/mpi/test_mpi_run.cpp) and of the state in checkpoint.h5 (relative L2: the spectral
# coefficients, or the particles' strengths α, and their positions' largest shift in lattice
# spacings). Prints one line per case and the wall times.
#
#   bench/ranks_check.sh spectral [N=64] [R=8] [EXE=build/vortexhit]   both dealiasing rules:
#       RK4 steps of Δt = 0.002 (k⁴ exp, k_p 4, Re_λ 60), outputs every 0.01; one rank a plane
#       up to R = N; equal to round-off
#   bench/ranks_check.sh vortex [N=24] [R=4] [EXE=build/vortexhit]    reinit_every 1 and 3 (the
#       particles migrate between reinitialisations): steps of Δt = 0.01 (k⁴ exp, k_p 2,
#       Re_λ 30, refine 1.5, fmm.tolerance 1e-4); equal within the FMM's tolerance
#
# Oversubscribes when R exceeds the cores (mpirun --oversubscribe; one OpenMP thread a rank).
set -euo pipefail
cd "$(dirname "$0")/.."
solver=${1:-}
case "$solver" in
  spectral) n=${2:-64} r=${3:-8} ;;
  vortex) n=${2:-24} r=${3:-4} ;;
  *) echo "usage: bench/ranks_check.sh spectral|vortex [N] [R] [EXE]" >&2; exit 2 ;;
esac
exe=${4:-build/vortexhit}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=(--oversubscribe)
[ "$(id -u)" -eq 0 ] && flags+=(--allow-run-as-root)
common=(run --case.solver="$solver" --domain.n="$n" --device=cpu --output.fields_at= --output.checkpoint_minutes=0
        --quiet)
if [ "$solver" = spectral ]; then
  common+=(--flow.Re_lambda=60 --flow.k_p=4 --time.dt=0.002 --time.t_end=0.04 --time.output_interval=0.01)
  cases=(--spectral.dealias=3/2 --spectral.dealias=2/3)
else
  common+=(--flow.Re_lambda=30 --flow.k_p=2 --time.dt=0.01 --time.t_end=0.2 --time.output_interval=0.05
           --vortex.refine=1.5 --fmm.tolerance=1e-4)
  cases=(--vortex.reinit_every=1 --vortex.reinit_every=3)
fi
for c in "${cases[@]}"; do
  tag=${c##*=}
  tag=${tag/\//}
  t0=$(date +%s.%N)
  OMP_NUM_THREADS=1 "$exe" "${common[@]}" "$c" --output.dir="$out/one$tag"
  t1=$(date +%s.%N)
  OMP_NUM_THREADS=1 mpirun -q -np "$r" "${flags[@]}" "$exe" "${common[@]}" "$c" --output.dir="$out/r$tag"
  t2=$(date +%s.%N)
  python3 - "$solver" "$out/one$tag" "$out/r$tag" "$c" "$n" "$r" "$t0" "$t1" "$t2" <<'PY'
import sys, h5py, numpy as np
solver, a, b, c, n, r, t0, t1, t2 = sys.argv[1:]
worst, where = 0.0, ""
with h5py.File(a + "/run.h5") as fa, h5py.File(b + "/run.h5") as fb:
    K, Om = fa[solver + "/series/K"][0], fa[solver + "/series/enstrophy"][0]
    # The vortex solver's monitors that are sums of cancelling terms (Σ strengths, divergences)
    # are left out, as tests/mpi/test_mpi_run.cpp leaves them: their round-off carries nothing.
    flow = ("t", "step", "dt", "K", "epsilon", "L", "T", "lambda", "Re_lambda", "S3", "enstrophy", "helicity", "kmax",
            "kmax_eta", "max_omega", "core_ratio", "reinits")
    for s in ("initial", solver):
        for name, x in fa[s + "/series"].items():
            if s == "vortex" and name not in flow: continue
            x, y = x[()], fb[s + "/series/" + name][()]
            scale = {"divergence_rel": 1.0, "helicity": np.sqrt(2 * K * 2 * Om)}.get(name, np.abs(x).max() or 1.0)
            e = np.abs(x - y).max() / scale
            if e > worst: worst, where = e, s + "/series/" + name
        e = np.abs(fa[s + "/spectra/E"][()] - fb[s + "/spectra/E"][()]).max() / K
        if e > worst: worst, where = e, s + "/spectra/E"
with h5py.File(a + "/checkpoint.h5") as fa, h5py.File(b + "/checkpoint.h5") as fb:
    if solver == "spectral":
        u, v = fa["spectral/u"][()], fb["spectral/u"][()]
        state = f"rel. L2 {np.sqrt(((u - v) ** 2).sum() / (u ** 2).sum()):.2e}"
    else:
        # Particles in rank order: after a reinitialisation the one-rank order; between them a
        # particle that migrated stands elsewhere, so each particle of the R-rank run is paired
        # with the nearest of the one-rank run (periodic; the candidates of the 27 lattice cells
        # around it), which must pair them one to one.
        xa, xb = fa["vortex/x"][()], fb["vortex/x"][()]
        m = round(len(xa) ** (1 / 3))
        box = 2 * np.pi
        h = box / m
        def key(c):
            c = c % m
            return (c[:, 2] * m + c[:, 1]) * m + c[:, 0]
        ka = key(np.floor(xa / h).astype(np.int64))
        oa = np.argsort(ka, kind="stable")
        first = np.searchsorted(ka[oa], np.arange(m ** 3))
        count = np.searchsorted(ka[oa], np.arange(m ** 3), side="right") - first
        cb = np.floor(xb / h).astype(np.int64)
        dist, pair = np.full(len(xb), np.inf), np.zeros(len(xb), np.int64)
        for off in np.array(np.meshgrid([-1, 0, 1], [-1, 0, 1], [-1, 0, 1])).T.reshape(-1, 3):
            k = key(cb + off)
            for j in range(count.max()):
                i = oa[np.minimum(first[k] + j, len(oa) - 1)]
                d = xb - xa[i]
                d -= box * np.rint(d / box)
                near = np.where(j < count[k], np.sqrt((d * d).sum(1)), np.inf)
                dist, pair = np.minimum(dist, near), np.where(near < dist, i, pair)
        assert len(np.unique(pair)) == len(pair), "the particles do not pair one to one"
        al, bl = fa["vortex/alpha"][()][pair], fb["vortex/alpha"][()]
        shift = dist.max() / h
        state = f"alpha rel. L2 {np.sqrt(((al - bl) ** 2).sum() / (al ** 2).sum()):.2e}, positions within {shift:.1e} h"
print(f"{solver} N={n} {c[2:]} ranks={r}: state after 20 steps {state}, run.h5 worst {worst:.2e} "
      f"({where}); wall {float(t1) - float(t0):.1f} s on 1 rank, {float(t2) - float(t1):.1f} s on {r}")
PY
done
