#!/usr/bin/env bash
# Installs what is missing, builds, and runs the test suite:
#
#   scripts/test.sh             ctest without the tests labelled "long" (run those with
#                               `ctest --test-dir build -L long`), then a build without CUDA and
#                               its tests (a CPU-only build is a supported build), then pytest
#                               for postprocess/
#   scripts/test.sh --sanitize  a CPU-only build with AddressSanitizer (LeakSanitizer included)
#                               and UndefinedBehaviorSanitizer in build-sanitize/, and its tests
#                               labelled "fast" plus the quick deck shortened (ctest -L fast):
#                               any report fails the test that made it
#
# .ci/run runs both.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --sanitize ]; then
  VH_BUILD_DIR=build-sanitize VH_CMAKE_ARGS="-DVH_ENABLE_CUDA=OFF -DVH_SANITIZE=address,undefined" scripts/setup.sh
  # Reports go to stderr, which ctest shows for a failed test; UBSan's with a stack trace.
  # allocator_may_return_null: HDF5 asks for absurd sizes on crafted files (fuzz regressions)
  # and handles the NULL that malloc returns for them; ASan must return it too, not abort.
  export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:strict_init_order=1:check_initialization_order=1
  export LSAN_OPTIONS=suppressions=$PWD/tests/lsan_suppressions.txt
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  ctest --test-dir build-sanitize -L fast --output-on-failure -j 2
  exit 0
fi

scripts/setup.sh
ctest --test-dir build -LE long --output-on-failure -j 2

if command -v nvcc >/dev/null 2>&1; then
  VH_BUILD_DIR=build-nocuda VH_CMAKE_ARGS="-DVH_ENABLE_CUDA=OFF" scripts/setup.sh
  ctest --test-dir build-nocuda -LE long --output-on-failure -j 2
fi

if [ -d postprocess/tests ]; then
  python3 -m pytest -q postprocess/tests
fi
