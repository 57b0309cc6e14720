#!/usr/bin/env bash
# The spectral solver on R ranks against one rank at N³ (issue 18, what the CPUs allow): 20 RK4
# steps (Δt = 0.002, outputs every 0.01) for the 3/2 and the 2/3 rule, then the largest
# differences of every run.h5 series and spectrum (relative to each dataset's largest value;
# divergence_rel and helicity against their scales, as tests/mpi/test_mpi_run.cpp) and of the
# state in checkpoint.h5 (relative L2). Prints one line per dealiasing and the wall times.
#
#   bench/spectral/ranks_check.sh [N=64] [R=8] [EXE=build/vortexhit]
#
# Oversubscribes when R exceeds the cores (mpirun --oversubscribe; one OpenMP thread a rank).
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-64}
r=${2:-8}
exe=${3:-build/vortexhit}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=(--oversubscribe)
[ "$(id -u)" -eq 0 ] && flags+=(--allow-run-as-root)
common=(run --case.solver=spectral --domain.n="$n" --flow.Re_lambda=60 --flow.k_p=4 --device=cpu --time.dt=0.002
        --time.t_end=0.04 --time.output_interval=0.01 --output.fields_at= --output.checkpoint_minutes=0 --quiet)
for d in 3/2 2/3; do
  tag=${d/\//}
  t0=$(date +%s.%N)
  OMP_NUM_THREADS=1 "$exe" "${common[@]}" --spectral.dealias="$d" --output.dir="$out/one$tag"
  t1=$(date +%s.%N)
  OMP_NUM_THREADS=1 mpirun -q -np "$r" "${flags[@]}" "$exe" "${common[@]}" --spectral.dealias="$d" --output.dir="$out/r$tag"
  t2=$(date +%s.%N)
  python3 - "$out/one$tag" "$out/r$tag" "$d" "$n" "$r" "$t0" "$t1" "$t2" <<'EOF'
import sys, h5py, numpy as np
a, b, d, n, r, t0, t1, t2 = sys.argv[1:]
worst, where = 0.0, ""
with h5py.File(a + "/run.h5") as fa, h5py.File(b + "/run.h5") as fb:
    K, Om = fa["spectral/series/K"][0], fa["spectral/series/enstrophy"][0]
    for s in ("initial", "spectral"):
        for name, x in fa[s + "/series"].items():
            x, y = x[()], fb[s + "/series/" + name][()]
            scale = {"divergence_rel": 1.0, "helicity": np.sqrt(2 * K * 2 * Om)}.get(name, np.abs(x).max() or 1.0)
            e = np.abs(x - y).max() / scale
            if e > worst: worst, where = e, s + "/series/" + name
        e = np.abs(fa[s + "/spectra/E"][()] - fb[s + "/spectra/E"][()]).max() / K
        if e > worst: worst, where = e, s + "/spectra/E"
with h5py.File(a + "/checkpoint.h5") as fa, h5py.File(b + "/checkpoint.h5") as fb:
    u, v = fa["spectral/u"][()], fb["spectral/u"][()]
    state = np.sqrt(((u - v) ** 2).sum() / (u ** 2).sum())
print(f"N={n} dealias={d} ranks={r}: state after 20 steps rel. L2 {state:.2e}, run.h5 worst {worst:.2e} "
      f"({where}); wall {float(t1) - float(t0):.1f} s on 1 rank, {float(t2) - float(t1):.1f} s on {r}")
EOF
done
