#!/usr/bin/env bash
# Measures the table behind fmm.tolerance = auto choices: for each (theta, p, ncrit) of a grid,
# one periodic GPU evaluation of 64^3 (or $2^3) turbulent lattice particles (fmm_bench
# --turbulent: alpha = omega h^3 of a k^4 exp field, sigma = h), its time and its error against
# the exact spectral sum.  Prints one line per setting:  theta p ncrit time[s] gpu[s] err_u err_grad
# ("gpu" = the GPU stages alone).  The fastest setting under each tolerance is the table's row.
#
#   bench/fmm/tolerance_table.sh FMM_BENCH [LOG2N=18] [DEVICE=gpu] [TOLERANCE=1e-6]
# The grid: THETAS="0.4 0.5 0.6 0.7" PS="6 8 10 12" NCRITS="16 32 64" (environment);
# FIELD=--white for the flat-spectrum vorticity instead of the turbulent one; JITTER=F for the
# lattice moved by up to +-F h (as the vortex solver's particles are between reinitialisations;
# the error is then against a tight FMM, fmm_bench --jitter); M2L=fft for the uniform levels'
# path (fmm.m2l = fft: the resident evaluator, which alone takes it; "time" is then its
# evaluation with the tree and the set-up, "gpu" its GPU wall time).
set -euo pipefail
bench=${1:?usage: tolerance_table.sh FMM_BENCH [LOG2N] [DEVICE] [TOLERANCE]}
lg=${2:-18}
dev=${3:-gpu}
tol=${4:-1e-6}
printf '%5s %3s %5s %9s %9s %10s %10s %8s %7s\n' theta p ncrit 'time[s]' 'gpu[s]' err_u err_grad pairs/N M2L/N
for theta in ${THETAS:-0.4 0.5 0.6 0.7}; do
  for p in ${PS:-6 8 10 12}; do
    for ncrit in ${NCRITS:-16 32 64}; do
      args=(--device "$dev" ${FIELD:---turbulent} --min-log2n "$lg" --max-log2n "$lg" --repeat 1 --direct-max-log2n 0
            --theta "$theta" --p "$p" --ncrit "$ncrit" --tolerance "$tol" ${JITTER:+--jitter "$JITTER"})
      if [ "${M2L:-lists}" = fft ]; then
        "$bench" "${args[@]}" --resident --overlap serial --m2l fft |
          awk -v t="$theta" -v p="$p" -v c="$ncrit" '$1 ~ /^[0-9]+$/ && $3 == "no" && NF >= 16 {
            printf "%5s %3s %5s %9.4f %9.4f %10s %10s %8s %7s\n", t, p, c, $4, $12, $13, $14, $15, $16 }'
      else
        "$bench" "${args[@]}" |
          awk -v t="$theta" -v p="$p" -v c="$ncrit" '$1 ~ /^[0-9]+$/ && NF >= 14 {
            printf "%5s %3s %5s %9.4f %9.4f %10s %10s %8s %7s\n", t, p, c, $2, $6 + $7 + $8 + $9, $10, $11, $12, $13 }'
      fi
    done
  done
done
