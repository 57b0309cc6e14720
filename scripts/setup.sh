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

# cuFFTDx (NVIDIA MathDx, header-only) for the GPU spectral solver's fused transforms
# (spectral/fused.h): the PyPI wheel, unpacked into third_party/mathdx (git-ignored), where
# CMake's VH_MATHDX_DIR looks by default. Only with nvcc; without it (or without network) the
# GPU solver builds with its cuFFT path alone.
mathdx_version=25.6.0
if command -v nvcc >/dev/null 2>&1 && [ ! -f third_party/mathdx/include/cufftdx.hpp ]; then
  tmp=$(mktemp -d)
  if python3 -m pip download -q --no-deps "nvidia-mathdx==$mathdx_version" -d "$tmp" >/dev/null 2>&1 &&
     python3 -m zipfile -e "$tmp"/nvidia_mathdx-*.whl "$tmp/x" &&
     [ -f "$tmp/x/nvidia/mathdx/include/cufftdx.hpp" ]; then
    mkdir -p third_party && rm -rf third_party/mathdx && mv "$tmp/x/nvidia/mathdx" third_party/mathdx
    echo "setup: cuFFTDx (nvidia-mathdx $mathdx_version) in third_party/mathdx"
  else
    echo "setup: nvidia-mathdx not fetched; the GPU spectral solver builds without fused transforms" >&2
  fi
  rm -rf "$tmp"
fi

# NCCL (headers and libnccl.so.2) for the device-to-device exchanges of GPU runs on several
# ranks (base/device_comm.h): the PyPI wheel nvidia-nccl-cu13, unpacked into third_party/nccl
# (git-ignored), where CMake's VH_NCCL_DIR looks by default. 2.28 is the oldest NCCL this
# project was run with; a newer libnccl.so.2 at run time is fine. Only with nvcc; without it the
# GPU build exchanges through MPI and says so. A cluster's own NCCL: -DVH_NCCL_DIR=<prefix>.
nccl_version=2.28.9
if command -v nvcc >/dev/null 2>&1 && [ ! -f third_party/nccl/include/nccl.h ]; then
  tmp=$(mktemp -d)
  if python3 -m pip download -q --no-deps "nvidia-nccl-cu13==$nccl_version" -d "$tmp" >/dev/null 2>&1 &&
     python3 -m zipfile -e "$tmp"/nvidia_nccl_cu13-*.whl "$tmp/x" &&
     [ -f "$tmp/x/nvidia/nccl/include/nccl.h" ]; then
    mkdir -p third_party && rm -rf third_party/nccl && mv "$tmp/x/nvidia/nccl" third_party/nccl
    echo "setup: NCCL (nvidia-nccl-cu13 $nccl_version) in third_party/nccl"
  else
    echo "setup: nvidia-nccl-cu13 not fetched; GPU runs on several ranks exchange through MPI" >&2
  fi
  rm -rf "$tmp"
fi

build=${VH_BUILD_DIR:-build}
if [ ! -f "$build/CMakeCache.txt" ]; then
  # shellcheck disable=SC2086
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release ${VH_CMAKE_ARGS:-} >/dev/null
fi
# shellcheck disable=SC2086
cmake --build "$build" -j "$(nproc)" ${VH_BUILD_TARGETS:+--target $VH_BUILD_TARGETS}
