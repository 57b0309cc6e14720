// The FMM's points (sources, or targets without strengths) sorted into Morton order on the GPU
// and kept there for the evaluation: positions, core radii and strengths come from host arrays
// (uploaded once in input order) or device arrays (sort()); the keys (fmm/morton.h, the CPU
// tree's own function), the stable sort (CUB) and the gathers run on the device.  Their tree:
// tree() brings the keys back for the host to split (fmm::split_cells) and has the device
// measure the cells (fmm/tree_gpu.h measure_cells_gpu, the twin of fmm::cell_extents): the
// cells of the Tree fmm::build_tree builds on the CPU, its permutation, sorted positions and
// core radii left on the device (Tree::perm, x and sigma empty; FarGpu reads the permutation
// there); or DeviceTree (fmm/tree_gpu.h) builds the same cells on the device.  The P2P and the
// far field read the sorted points where they are (P2PGpu::set_sources(const SortedSourcesGpu&),
// FarGpu::set_strengths(const SortedSourcesGpu&), GpuEvaluator).  CUDA builds only
// (VH_FMM_HAVE_CUDA).
#pragma once

#include <memory>
#include <vector>

#include "fmm/tree.h"
#include "fmm/types.h"

namespace vh::fmm {

class SortedSourcesGpu {
 public:
  /// Sorts N sources in the cube (center, half); with wrap, positions are first wrapped into
  /// [0, 2 pi)^3 (fmm/morton.h).  Throws std::runtime_error on CUDA errors.
  SortedSourcesGpu(const std::vector<Vec3>& x, const std::vector<double>& sigma, const std::vector<Vec3>& alpha,
                   const Vec3& center, double half, bool wrap);
  /// Empty; sort() fills it from device arrays.
  SortedSourcesGpu();
  ~SortedSourcesGpu();
  SortedSourcesGpu(const SortedSourcesGpu&) = delete;
  SortedSourcesGpu& operator=(const SortedSourcesGpu&) = delete;

  /// The same from device arrays of n points (x: n x 3, sigma: n, alpha: n x 3; sigma and
  /// alpha may be null: targets, sigma 0), into this object's buffers (grown as needed, kept).
  void sort(const double* d_x, const double* d_sigma, const double* d_alpha, int n, const Vec3& center, double half,
            bool wrap);
  /// New strengths (device, n x 3, input order) for the sorted points: gathered by the kept
  /// permutation, nothing re-sorted.
  void set_strengths(const double* d_alpha);
  /// For callers that keep the sort: the input index of the first point whose position (wrapped
  /// as sort() wraps it) or core radius differs from the sorted copy, or -1 when all agree
  /// (sigma null: positions only).  One small download.
  long long first_change(const double* d_x, const double* d_sigma, bool wrap) const;

  /// The octree of the sorted sources: the cells (perm, x and sigma stay on the device).
  Tree tree(int ncrit) const;
  /// The permutation, sorted positions (wrapped) and core radii, downloaded (for tests).
  void download_sorted(std::vector<int>& perm, std::vector<Vec3>& x, std::vector<double>& sigma) const;

  int size() const;
  const Vec3& center() const;
  double half() const;
  /// Device arrays in sorted order: double4 (x, y, z, sigma); strengths as double4 (a, 0) and
  /// float4 (a, 0).
  const void* positions_sigma() const;
  const void* alpha_double() const;
  const void* alpha_float() const;
  /// Device array: sorted index -> input index (int).
  const int* permutation() const;
  /// Device array: the sorted Morton keys (std::uint64_t, fmm/morton.h).
  const void* keys() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vh::fmm
