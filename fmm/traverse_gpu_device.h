// The device side of the GPU traversal (fmm/traverse_gpu.h), CUDA sources only: the arrays of a
// GpuLists, for the sources that build them (traverse_gpu.cu) and take them over (far_gpu.cu,
// p2p_gpu.cu, evaluator.cu); the cell record the traversal reads; and the traversal over trees
// already on the device (build_lists_device: GpuEvaluator's trees, tree_gpu.h).
#pragma once

#include <utility>
#include <vector>

#include "fmm/cuda_util.h"
#include "fmm/traverse.h"
#include "fmm/traverse_gpu.h"

namespace vh::fmm {

struct GpuListsDevice {
  // M2L, FarGpu's layout (M2LArrays): int targets, int goffset, int groups, int2 entries.
  DevBuf m2l_targets, m2l_goffset, m2l_groups, m2l_entries;
  // P2P, P2PGpu's layout (P2PArrays): int4 tasks, int4 entries.
  DevBuf p2p_tasks, p2p_entries;
  bool m2l_taken = false, p2p_taken = false;
};

/// What the traversal reads of a cell (fmm::Cell).
struct TCell {
  double c[3];          // centre
  double r;             // radius
  double lo[3], hi[3];  // tight box
  double smax;          // sigma_max
  int begin, end, child, nchild;
};

/// Two trees on the device as the traversal reads them (the same with self).
struct ListTrees {
  const TCell* T = nullptr;          ///< target cells, tree order
  const TCell* S = nullptr;          ///< source cells
  int nct = 0, ncs = 0;              ///< cell counts
  int nt = 0, ns = 0;                ///< point counts
  const int* rank = nullptr;         ///< source cell -> depth-first pre-order rank (children in index order)
  const int* rank_to_cell = nullptr; ///< its inverse
  const int* leaves = nullptr;       ///< target leaves holding points, in cell order
  const int* leaf_of = nullptr;      ///< target cell -> its index in `leaves`, or -1
  int nl = 0;
  const double* shifts = nullptr;    ///< 3 per shift, shifts[0] = 0
};

/// build_lists_gpu on trees already on the device: the lists into out (out.dev created when
/// null, its buffers grown as needed and reused); `shifts` as on the device.  Synchronous.
void build_lists_device(const ListTrees& in, bool self, const std::vector<Vec3>& shifts, const Acceptance& mac,
                        bool merge_p2p, GpuLists& out);

/// Moves the allocation of `from` into `to` (whose old one is freed); `from` ends empty.
inline void take_buffer(DevBuf& to, DevBuf& from) {
  to.release();
  to.swap(from);
}

}  // namespace vh::fmm
