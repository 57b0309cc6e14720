// The octree of points sorted on the GPU (SortedSourcesGpu, fmm/particles_gpu.h), built on the
// device: the cells of fmm::split_cells with the extents of fmm::cell_extents (fmm/tree.h), the
// same cells in the same order bit for bit, and what the traversal (fmm/traverse_gpu.h) and
// the far field (fmm/far_gpu.h) read of them: cell records in both layouts, the sources'
// depth-first pre-order ranks, the leaves holding points, the parents per level (M2M) and the
// levels' ranges (L2L).  The host sees a few counts per level, nothing per cell or point.
// Host API (no CUDA types; device addresses as void/int pointers); CUDA builds only
// (VH_FMM_HAVE_CUDA).
//
// Method, level by level (level l's cells are one contiguous range, children after parents):
// one thread per cell of the level finds its octants' bounds by binary search in the sorted keys
// (the octant digit is monotone inside a cell: std::partition_point's bounds), a scan over the
// children counts places the next level, a second kernel writes it; then a warp per chunk of
// 1024 points measures boxes, radii and sigma_max by exact min/max (order-independent);
// subtree sizes bottom-up and ranks top-down, one launch per level.  Cost: O(N log) in the
// binary searches, one small download per level.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "fmm/tree.h"

namespace vh::fmm {

class SortedSourcesGpu;

class DeviceTree {
 public:
  DeviceTree();
  ~DeviceTree();
  DeviceTree(const DeviceTree&) = delete;
  DeviceTree& operator=(const DeviceTree&) = delete;

  /// Builds the tree of the points of `pts` (their sorted keys and positions; its cube) with
  /// at most ncrit points per leaf (or level 21).  Buffers grow as needed and are kept.
  /// Synchronous; throws std::runtime_error on CUDA errors.
  /// min_level > 0: every cell above that level is split too, whatever its count (the uniform
  /// levels of fmm/uniform_gpu.h want every leaf of a near-uniform set on one level; points on
  /// the cells' faces otherwise leave some cells of a level at ncrit or fewer).
  /// fill: the cells above min_level get all eight children, empty ones too, and empty cells
  /// of min_level are leaves: the complete tree of a set of which `pts` is a part (one rank's
  /// sources and ghosts, GpuEvaluator::evaluate_own), cell for cell in the whole set's order.
  void build(const SortedSourcesGpu& pts, int ncrit, int min_level = 0, bool fill = false);

  int cells() const;   ///< number of cells (cells[0] the root)
  int levels() const;  ///< number of levels (the root's is 0)
  int points() const;
  /// The cells as fmm::Cell (for the tests: those of build_tree / tree_from_sorted).
  std::vector<Cell> download_cells() const;

  // Device arrays, one entry per cell unless said otherwise (evaluator.cu, tests).
  const void* tcells() const;      ///< TCell (fmm/traverse_gpu_device.h)
  const void* gcells() const;      ///< GCell (fmm/far_gpu_device.h)
  const int* first_child() const;  ///< Cell::child (-1 for leaves)
  const int* nchild() const;
  const int* rank() const;          ///< depth-first pre-order rank, children in index order
  const int* rank_to_cell() const;  ///< its inverse
  const int* leaves() const;        ///< leaves holding points, cell order (n_leaves() entries)
  const int* leaf_of() const;       ///< cell -> index in leaves(), or -1
  int n_leaves() const;
  const int* parents() const;       ///< cells with children, level by level, cell order
  /// (offset, count) into parents() per level with parents, deepest first (M2M's order).
  const std::vector<std::pair<int, int>>& m2m_levels() const;
  const int* children() const;      ///< cells 1 .. cells() - 1 (every cell below the root)
  /// (offset, count) into children() per level 1, 2, ... (L2L's order).
  const std::vector<std::pair<int, int>>& l2l_levels() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// cell_extents (fmm/tree.h) on the device for cells split on the host from the keys of `pts`
/// (SortedSourcesGpu::tree): boxes, radii and sigma_max from its sorted positions, the same
/// bits as the host.
void measure_cells_gpu(std::vector<Cell>& cells, const SortedSourcesGpu& pts);

}  // namespace vh::fmm
