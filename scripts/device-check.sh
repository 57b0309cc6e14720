#!/usr/bin/env bash
# GPU tests and benchmarks from binaries built here and carried to the GPU machine
# (../shared/DEVICE.md). Writes logs and CSV rows under $OUT (default ./device-out).
#
#   scripts/build-gpu.sh                 # here: build with CUDA for sm_90, fill .gpu/
#   device run, carry [".gpu"]:  export LD_LIBRARY_PATH=$PWD/.gpu; scripts/device-check.sh [tests|bench|all]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-device-out}
mkdir -p "$OUT"
what=${1:-all}
export LD_LIBRARY_PATH=$PWD/.gpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
status=0
# Put the reference data where the tests were compiled to look for it.
if [ -f .gpu/shared_dir.txt ] && [ ! -d "$(cat .gpu/shared_dir.txt)/data" ]; then
  mkdir -p "$(cat .gpu/shared_dir.txt)" && cp -r .gpu/shared/data "$(cat .gpu/shared_dir.txt)/"
fi

if [ "$what" = tests ] || [ "$what" = all ]; then
  # Every carried GoogleTest binary; GPU tests run here instead of skipping.
  for t in .gpu/test_* .gpu/*_test; do
    [ -x "$t" ] || continue
    echo "== $t" | tee -a "$OUT/tests.log"
    "$t" --gtest_brief=1 >>"$OUT/tests.log" 2>&1 || { status=1; echo "FAILED: $t" | tee -a "$OUT/tests.log"; }
  done
  tail -n 3 "$OUT/tests.log"
fi

if [ "$what" = bench ] || [ "$what" = all ]; then
  for b in .gpu/*_bench; do
    [ -x "$b" ] || continue
    echo "== $b" | tee -a "$OUT/bench.log"
    "$b" --device gpu --csv "$OUT/$(basename "$b").csv" 2>&1 | tee -a "$OUT/bench.log" || status=1
  done
fi
exit $status
