#!/usr/bin/env bash
# Installs what vortexhit needs on Debian 12 (as root, or with sudo), then configures and
# builds into build/ (incrementally on later calls). Used by scripts/run.sh and scripts/test.sh.
#   VH_BUILD_DIR      build folder (default build)
#   VH_CMAKE_ARGS     extra arguments to cmake's configure step (e.g. -DVH_ENABLE_CUDA=OFF)
#   VH_BUILD_TARGETS  targets to build (default: all)
#   VH_EXTRA_PACKAGES Debian packages a caller needs besides these (scripts/fuzz.sh: Clang)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config git libhdf5-dev libboost-program-options-dev
          libfftw3-dev libopenmpi-dev openmpi-bin libgtest-dev libxml2-utils libxxhash-dev
          python3 python3-pip ${VH_EXTRA_PACKAGES:-})
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python packages of postprocess/ (figures, compare scripts, their tests).
if [ -f postprocess/requirements.txt ]; then
  py=python3
  if ! $py -c "import importlib, sys; [importlib.import_module(m) for m in ('numpy','h5py','matplotlib','skimage','pytest')]" 2>/dev/null; then
    echo "setup: pip install -r postprocess/requirements.txt"
    $py -m pip install -q -r postprocess/requirements.txt 2>/dev/null ||
      $py -m pip install -q --break-system-packages -r postprocess/requirements.txt
  fi
fi

# Header and library packages of NVIDIA's from PyPI wheels, unpacked into third_party/ (git-ignored)
# where CMake looks by default; only with nvcc (a build without CUDA needs neither).
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
    echo "setup: $package $version in third_party/$dir"
  else
    echo "setup: $package not fetched; $without" >&2
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

build=${VH_BUILD_DIR:-build}
if [ ! -f "$build/CMakeCache.txt" ]; then
  # shellcheck disable=SC2086
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release ${VH_CMAKE_ARGS:-} >/dev/null
fi
# shellcheck disable=SC2086
cmake --build "$build" -j "$(nproc)" ${VH_BUILD_TARGETS:+--target $VH_BUILD_TARGETS}
