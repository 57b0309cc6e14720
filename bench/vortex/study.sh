#!/usr/bin/env bash
# Runs vortexhit cases side by side and packs what they wrote (run.h5, log.txt, summary.txt)
# into one tarball: the device tool returns at most 8 files.
#
#   bench/vortex/study.sh VORTEXHIT OUTDIR THREADS TIMEOUT_S  NAME "ARGS..."  [NAME "ARGS..."] ...
#
# Each case is `VORTEXHIT run ARGS --output.dir=OUTDIR/NAME --quiet` with OMP_NUM_THREADS=THREADS,
# stopped after TIMEOUT_S seconds (its run.h5 keeps every output written until then). Prints one
# line per case (exit status, wall seconds) and leaves OUTDIR/study.tar.gz.
set -uo pipefail
vh=$1 out=$2 threads=$3 limit=$4
shift 4
mkdir -p "$out"
pids=()
names=()
while (($# >= 2)); do
  name=$1 args=$2
  shift 2
  (
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=$threads timeout "$limit" "$vh" run $args --output.dir="$out/$name" --quiet >"$out/$name.stdout" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    echo "$name: exit $rc, $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s" >"$out/$name.status"
  ) &
  pids+=($!)
  names+=("$name")
done
for p in "${pids[@]}"; do wait "$p"; done
files=()
for n in "${names[@]}"; do
  cat "$out/$n.status"
  for f in run.h5 log.txt summary.txt; do [ -f "$out/$n/$f" ] && files+=("$n/$f"); done
  files+=("$n.stdout" "$n.status")
done
tar -C "$out" -czf "$out/study.tar.gz" "${files[@]}"
