#!/usr/bin/env bash
# Builds with CUDA for Hopper (sm_90) into build-gpu/ and copies the executables the GPU
# machine needs, plus Boost.Program_options (missing there), into .gpu/ (../shared/DEVICE.md).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build-gpu/CMakeCache.txt ] ||
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DVH_ENABLE_CUDA=ON >/dev/null
cmake --build build-gpu -j "$(nproc)"
rm -rf .gpu && mkdir -p .gpu
cp build-gpu/vortexhit .gpu/
# The test programs with GPU tests (the CLI tests exec build-gpu/vortexhit by its path here,
# so they stay behind) and every benchmark.
for t in test_initial_field test_diagnostics test_spectral_gpu fmm_gpu_test test_fmm_gpu test_traverse_gpu test_blobs_gpu; do
  find build-gpu/tests -name "$t" -type f -executable -exec cp {} .gpu/ \;
done
find build-gpu/bench -maxdepth 3 -type f -executable \( -name '*_bench' -o -name 'tgv_check' \) -exec cp {} .gpu/ \;
cp /usr/lib/x86_64-linux-gnu/libboost_program_options.so.1.74.0 .gpu/
# The tests read reference data from the path compiled in (VH_SHARED_DIR = <repo>/../shared).
mkdir -p .gpu/shared && cp -r ../shared/data .gpu/shared/
echo "$(cd .. && pwd)/shared" > .gpu/shared_dir.txt
du -sh .gpu
