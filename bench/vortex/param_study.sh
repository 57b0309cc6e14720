#!/usr/bin/env bash
# Parametric study of the vortex solver against the spectral one (issue 6, item 7): for each
# setting, both solvers from the same field to t/T = T_END, then `vortexhit compare` at the
# end. Prints one table: K_v/K_s and eps_v/eps_s at the end, max |K_v/K_s - 1| over the run,
# E_v/E_s on shells 1..6 at the end, wall time.
#
#   bench/vortex/param_study.sh [VORTEXHIT] [N] [T_END] [DEVICE]
#   defaults: build/vortexhit 32 0.5 auto        (seconds a setting at 32^3 on an H200,
#                                                 minutes on a CPU)
set -uo pipefail
exe=${1:-build/vortexhit}; n=${2:-32}; tend=${3:-0.5}; dev=${4:-auto}
out=${OUT:-/tmp}/param_study
mkdir -p "$out"
base="--case.solver=both --domain.n=$n --flow.k_p=3 --flow.Re_lambda=30 --device=$dev --quiet
      --time.t_end_over_T=$tend --time.output_interval_over_T=0.1 --output.fields_at=0
      --output.overwrite=true --output.checkpoint_minutes=0"
printf '%-44s %8s %8s %9s  %-41s %7s\n' setting K_v/K_s eps_v/s 'max|dK|' 'E_v/E_s k=1..6' wall_s
run() {
  local name=$1; shift
  local dir=$out/$name t0 t1
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$exe" run $base --output.dir="$dir" "$@" || { echo "$name: run failed"; return; }
  t1=$(date +%s.%N)
  "$exe" compare "$dir" --at "$tend" --json "$dir/compare.json" >/dev/null 2>&1
  python3 - "$dir/compare.json" "$dir/run.h5" "$name" "$t0" "$t1" <<'PY'
import json, sys
import h5py
d = json.load(open(sys.argv[1]))
last = d["series"][-1]
f = h5py.File(sys.argv[2], "r")
Es, Ev = f["/spectral/spectra/E"][-1], f["/vortex/spectra/E"][-1]
ratios = " ".join(f"{Ev[k] / Es[k]:.2f}" for k in range(1, 7))
print(f"{sys.argv[3]:<44s} {last['K_ratio']:8.4f} {last['epsilon_ratio']:8.3f} "
      f"{d['series_max_rel_diff']['K']:9.4f}  {ratios:<41s} {float(sys.argv[5]) - float(sys.argv[4]):7.1f}")
PY
}
# The issue's factors one at a time around a base (reinit_every 10, overlap 1.0, p 8, CFL 0.5):
# reinit_every in {10, 50, 100}, overlap in {1.0, 1.25}, p in {6, 8, 10}, two time steps.
# fmm.tolerance 1e-4 picks theta and ncrit (p set explicitly).
setting() {  # reinit_every overlap p cfl
  run "reinit_every=$1 overlap=$2 p=$3 cfl=$4" --vortex.reinit_every="$1" --vortex.overlap="$2" --fmm.p="$3" \
    --time.cfl="$4" --fmm.tolerance=1e-4
}
setting 10 1.0 8 0.5
setting 50 1.0 8 0.5
setting 100 1.0 8 0.5
setting 10 1.25 8 0.5
setting 10 1.0 6 0.5
setting 10 1.0 10 0.5
setting 10 1.0 8 0.25
