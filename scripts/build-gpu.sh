#!/usr/bin/env bash
# Builds with CUDA for Hopper (sm_90) into build-gpu/ and copies the executables of one set, plus
# Boost.Program_options (missing on the GPU machine), into .gpu/ (docs/design.md, "The GPU machine"):
#
#   scripts/build-gpu.sh [SET]      SET: fmm (default), spectral, tgv, vortex or all
#
#   fmm       the FMM, P2P, blob, initial-field, diagnostics and device-memory GPU tests and the
#             FMM/P2P benchmarks (device-check.sh tests, sanitize; bench without the spectral one)
#   spectral  test_spectral_gpu, spectral_bench (device-check.sh tests, bench)
#   tgv       tgv_check (the Taylor-Green check against the 512^3 reference)
#   vortex    vortexhit, the blob and GPU-solver tests, blobs_bench and vortex_step_bench
#             (device-check.sh vortex, vstep, study, sc09, memory, bench)
#   mpi       test_spectral_mpi, test_vortex_mpi, test_fmm_mpi, spectral_bench, vortex_step_bench, vortexhit
#             (device-check.sh mpi and gpus: both solvers on several ranks and GPUs)
#   all       every one of them, packed into .gpu.tar.xz (below)
#
# Sets, because the device tool carries at most 64 MiB and every program that links the spectral
# solver holds its fused transforms' device code (about 26 MB each).
set -euo pipefail
cd "$(dirname "$0")/.."
set_name=${1:-fmm}
case "$set_name" in
  fmm) progs="fmm_gpu_test test_fmm_gpu test_traverse_gpu test_blobs_gpu test_initial_field test_diagnostics
              test_device_memory fmm_bench p2p_gpu_bench p2p_cpu_bench" ;;
  spectral) progs="test_spectral_gpu spectral_bench" ;;
  tgv) progs="tgv_check" ;;
  vortex) progs="vortexhit test_blobs_gpu test_vortex_gpu blobs_bench vortex_step_bench" ;;
  mpi) progs="test_spectral_mpi test_vortex_mpi test_fmm_mpi spectral_bench vortex_step_bench vortexhit" ;;
  all) progs="fmm_gpu_test test_fmm_gpu test_traverse_gpu test_blobs_gpu test_initial_field test_diagnostics
              test_device_memory fmm_bench p2p_gpu_bench p2p_cpu_bench test_spectral_gpu spectral_bench tgv_check vortexhit blobs_bench
              test_vortex_gpu vortex_step_bench test_spectral_mpi test_vortex_mpi test_fmm_mpi" ;;
  *) echo "build-gpu.sh: unknown set '$set_name' (allowed: fmm, spectral, tgv, vortex, mpi, all)" >&2; exit 2 ;;
esac
# ccache, where installed, shares objects with the other build folders of this checkout.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
# cuFFTDx and NCCL into third_party/, as scripts/setup.sh fetches them: without cuFFTDx the spectral
# solver builds without its fused transforms and every GPU figure of it is the cuFFT path's. The
# configure step runs every time, so that a folder configured before they came finds them.
bash scripts/third-party.sh
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DVH_ENABLE_CUDA=ON \
  "${launcher[@]}" >/dev/null
cmake --build build-gpu -j "$(nproc)"
rm -rf .gpu && mkdir -p .gpu
for p in $progs; do
  f=$(find build-gpu -name "$p" -type f -executable -not -path '*/CMakeFiles/*' | head -n 1)
  [ -n "$f" ] || { echo "build-gpu.sh: $p was not built" >&2; exit 1; }
  cp "$f" .gpu/
done
cp /usr/lib/x86_64-linux-gnu/libboost_program_options.so.1.74.0 .gpu/
# The reference data travel with the working tree (validation/data, tracked); device-check.sh
# points the carried programs at them with VH_DATA_DIR.
size=$(du -sm .gpu | cut -f1)
echo ".gpu: set $set_name, ${size} MiB"
if [ "$size" -gt 64 ]; then
  # More than the device tool carries (64 MiB): xz's 64 MiB window stores the fused transforms'
  # device code, which every spectral program holds, once (set all: 180 MiB travel as 10 MiB).
  # device-check.sh unpacks .gpu.tar.xz into .gpu/ on the GPU machine.
  strip .gpu/* 2>/dev/null || true
  rm -f .gpu.tar.xz
  tar -C .gpu -cf - . | xz -9 -T1 >.gpu.tar.xz
  rm -rf .gpu
  echo ".gpu.tar.xz: set $set_name, $(du -sm .gpu.tar.xz | cut -f1) MiB; carry [\".gpu.tar.xz\"]"
fi
