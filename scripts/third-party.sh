#!/usr/bin/env bash
# Fetches what a CUDA build takes from outside Debian into third_party/ (git-ignored), where CMake
# looks by default: used by scripts/setup.sh and scripts/build-gpu.sh, so that every GPU build of
# this tree has the same parts. Does nothing without nvcc (a build without CUDA needs neither).
set -euo pipefail
cd "$(dirname "$0")/.."

#   wheel_into DIR PACKAGE VERSION PATH_IN_WHEEL FILE WITHOUT
# unpacks PATH_IN_WHEEL of PACKAGE==VERSION into third_party/DIR unless third_party/DIR/FILE is
# there already; when it cannot (no network), says what the build does without it (WITHOUT).
wheel_into() {
  local dir=$1 package=$2 version=$3 inner=$4 file=$5 without=$6 tmp
  command -v nvcc >/dev/null 2>&1 || return 0
  [ -f "third_party/$dir/$file" ] && return 0
  tmp=$(mktemp -d)
  if python3 -m pip download -q --no-deps "$package==$version" -d "$tmp" >/dev/null 2>&1 &&
     python3 -m zipfile -e "$tmp"/*.whl "$tmp/x" && [ -f "$tmp/x/$inner/$file" ]; then
    mkdir -p third_party && rm -rf "third_party/$dir" && mv "$tmp/x/$inner" "third_party/$dir"
    echo "third-party: $package $version in third_party/$dir"
  else
    echo "third-party: $package not fetched; $without" >&2
  fi
  rm -rf "$tmp"
}
# cuFFTDx (NVIDIA MathDx, header-only) for the GPU spectral solver's fused transforms
# (spectral/fused.h; CMake's VH_MATHDX_DIR).
wheel_into mathdx nvidia-mathdx 25.6.0 nvidia/mathdx include/cufftdx.hpp \
  "the GPU spectral solver builds without fused transforms"
# NCCL (headers and libnccl.so.2) for the device-to-device exchanges of GPU runs on several ranks
# (base/device_comm.h; CMake's VH_NCCL_DIR). 2.28 is the oldest NCCL this project was run with; a
# newer libnccl.so.2 at run time is fine. A cluster's own NCCL: -DVH_NCCL_DIR=<prefix>.
wheel_into nccl nvidia-nccl-cu13 2.28.9 nvidia/nccl include/nccl.h \
  "GPU runs on several ranks exchange through MPI"
