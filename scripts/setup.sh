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
          procps python3 python3-pip ${VH_EXTRA_PACKAGES:-})
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

# cuFFTDx and NCCL from NVIDIA's PyPI wheels into third_party/ (only with nvcc).
bash scripts/third-party.sh

build=${VH_BUILD_DIR:-build}
if [ ! -f "$build/CMakeCache.txt" ]; then
  # shellcheck disable=SC2086
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release ${VH_CMAKE_ARGS:-} >/dev/null
fi
# shellcheck disable=SC2086
cmake --build "$build" -j "$(nproc)" ${VH_BUILD_TARGETS:+--target $VH_BUILD_TARGETS}
