#!/usr/bin/env bash
# Installs what is missing, builds, and runs the test suite: ctest without the tests
# labelled "long" (run those with `ctest --test-dir build -L long`), then a build without
# CUDA and its tests (a CPU-only build is a supported build), then pytest for postprocess/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir build -LE long --output-on-failure -j 2

if command -v nvcc >/dev/null 2>&1; then
  VH_BUILD_DIR=build-nocuda VH_CMAKE_ARGS="-DVH_ENABLE_CUDA=OFF" scripts/setup.sh
  ctest --test-dir build-nocuda -LE long --output-on-failure -j 2
fi

if [ -d postprocess/tests ]; then
  python3 -m pytest -q postprocess/tests
fi
