// The device arrays of a GpuLists (fmm/traverse_gpu.h), for the CUDA sources that build them
// (traverse_gpu.cu) and take them over (far_gpu.cu, p2p_gpu.cu).  CUDA sources only.
#pragma once

#include <utility>

#include "fmm/cuda_util.h"

namespace vh::fmm {

struct GpuListsDevice {
  // M2L, FarGpu's layout (M2LArrays): int targets, int goffset, int groups, int2 entries.
  DevBuf m2l_targets, m2l_goffset, m2l_groups, m2l_entries;
  // P2P, P2PGpu's layout (P2PArrays): int4 tasks, int4 entries.
  DevBuf p2p_tasks, p2p_entries;
  bool m2l_taken = false, p2p_taken = false;
};

/// Moves the allocation of `from` into `to` (whose old one is freed); `from` ends empty.
inline void take_buffer(DevBuf& to, DevBuf& from) {
  to.resize(0);
  std::swap(to.p, from.p);
  std::swap(to.bytes, from.bytes);
}

}  // namespace vh::fmm
