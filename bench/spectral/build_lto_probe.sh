#!/usr/bin/env bash
# Builds cufft_lto_probe (cufft_lto_probe.cu) here with nvcc, for running on the GPU machine.
# Usage: bench/spectral/build_lto_probe.sh [build dir, default build-lto] [bin dir, default .gpu-lto]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
b=${1:-$root/build-lto}
out=${2:-$root/.gpu-lto}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
bin2c=$(dirname "$nvcc")/bin2c
src=$root/bench/spectral
mkdir -p "$b" "$out"
# The callbacks as LTO-IR, as d7a6ad4 (and NVIDIA's cuFFT LTO sample) built them: -dc -fatbin.
for a in 75 90; do
  "$nvcc" -std=c++17 -O3 --generate-code arch=compute_$a,code=lto_$a -dc -fatbin \
    "$src/cufft_lto_probe_cb.cu" -o "$b/probe_cb_lto$a.fatbin"
  "$bin2c" --name probe_cb_lto$a --type longlong "$b/probe_cb_lto$a.fatbin" > "$b/probe_cb_lto$a.h"
done
"$bin2c" --name probe_cb_src --type char --padd 0 "$src/cufft_lto_probe_cb.cu" > "$b/probe_cb_src.h"
# driverjit: a kernel calling the callback (LTO-IR) and a plain PTX kernel (driver JIT).
"$nvcc" -std=c++17 -O3 --generate-code arch=compute_90,code=lto_90 -dc -fatbin \
  "$src/cufft_lto_probe_kernel.cu" -o "$b/probe_kernel_lto90.fatbin"
"$bin2c" --name probe_kernel_lto90 --type longlong "$b/probe_kernel_lto90.fatbin" > "$b/probe_kernel_lto90.h"
for f in kernel cb; do
  "$nvcc" -std=c++17 -O3 -arch=compute_90 -rdc=true -ptx "$src/cufft_lto_probe_$f.cu" -o "$b/probe_$f.ptx"
  "$bin2c" --name probe_${f}_ptx --type char --padd 0 "$b/probe_$f.ptx" > "$b/probe_${f}_ptx.h"
done
# d7a6ad4's own callbacks (spectral/fft_callbacks.cu, reverted in e2bcdb4), from git.
rm -rf "$b/d7" && mkdir -p "$b/d7"
git -C "$root" archive d7a6ad4 spectral src | tar -x -C "$b/d7"
"$nvcc" -std=c++17 -O3 -I"$b/d7" -I"$b/d7/src" --generate-code arch=compute_75,code=lto_75 -dc -fatbin \
  "$b/d7/spectral/fft_callbacks.cu" -o "$b/vh_cb_lto75.fatbin"
"$bin2c" --name vh_cb_lto75 --type longlong "$b/vh_cb_lto75.fatbin" > "$b/vh_cb_lto75.h"
# The working tree's callbacks (C++ linkage), built as spectral/CMakeLists.txt builds them.
"$nvcc" -std=c++17 -O3 -I"$root" -I"$root/src" --generate-code arch=compute_75,code=lto_75 -dc -fatbin \
  "$root/spectral/fft_callbacks.cu" -o "$b/vhfix_cb_lto75.fatbin"
"$bin2c" --name vhfix_cb_lto75 --type longlong "$b/vhfix_cb_lto75.fatbin" > "$b/vhfix_cb_lto75.h"
"$nvcc" -std=c++17 -O2 -arch=sm_90 -I"$b" "$src/cufft_lto_probe.cu" -o "$out/cufft_lto_probe" -lcufft -ldl
ls -la "$out"
