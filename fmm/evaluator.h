// A GPU FMM evaluator that keeps its state across calls and works on device-resident arrays
// (CUDA builds, VH_FMM_HAVE_CUDA): the vortex solver's particles live on the GPU between steps
// and only a few scalars cross to the host per step.
//
// Layouts (device memory, double): positions, strengths, u and targets are n × 3, xyz
// interleaved (the layout of std::vector<Vec3>); sigma n; grad n × 9, row-major
// grad[9 i + 3 m + k] = ∂u_m/∂x_k (the layout of std::vector<Mat3>). Units and the kernel as
// fmm/fmm.h. Positions need not be wrapped (periodic mode wraps them, as evaluate_self does).
//
// The evaluator keeps, across calls: its device buffers (from its own memory pool, which keeps
// freed memory for the next call: no allocation reaches the driver after the first call), the
// M2L and lattice tables, the sorted particles, their trees and the interaction lists. When the
// caller says the positions (and core radii) have not changed since the previous call of the
// same kind and size (`same_positions`; checked on the device, std::invalid_argument naming the
// first particle that moved), the trees and lists are reused: only P2M ... L2P and the P2P run.
//
// Work per call, all on the GPU: the input check (the host API's messages, one small download),
// the sort (keys, CUB radix sort, gathers), the octree from the sorted keys (fmm/tree_gpu.h: a
// few counts per level reach the host), the lists (fmm/traverse_gpu.h), then the far field
// (fmm/far_gpu_device.h) on one stream and the near field (P2P) beside it on another, the
// periodic lattice and mean correction on the device, and L2P writing u and ∇u straight into
// the caller's arrays. The call returns when they are written; the inputs must be ready (work of
// the caller on the legacy default stream or synchronized).
//
// Results: bit for bit those of fmm::evaluate_self / evaluate_at with use_gpu = true on the same
// inputs (the same kernels on the same trees and lists, in the same order: the device-built
// trees equal the host-split ones cell for cell), for every overlap mode — with fmm.m2l = lists.
// With fmm.m2l = fft a periodic evaluate_self whose tree is complete takes it by its uniform
// levels instead (fmm/uniform_gpu.h): the same field within the tolerance, not the same bits.
#pragma once

#include <cstddef>
#include <memory>

#include "fmm/fmm.h"

namespace vh {
class DeviceComm;
}

namespace vh::fmm {

class GpuEvaluator {
 public:
  /// prm.use_gpu is implied. Throws std::invalid_argument on bad parameters (Params::validate)
  /// and std::runtime_error without a CUDA build or a visible device.
  explicit GpuEvaluator(const Params& prm);
  ~GpuEvaluator();
  GpuEvaluator(const GpuEvaluator&) = delete;
  GpuEvaluator& operator=(const GpuEvaluator&) = delete;

  /// u and ∇u at the n sources themselves (self pairs left out, as evaluate_self). All pointers
  /// are device pointers; the call returns when d_u and d_grad are written.
  Timings evaluate_self(const double* d_x, const double* d_alpha, const double* d_sigma, std::size_t n,
                        double* d_u, double* d_grad, bool same_positions = false);

  /// u and ∇u at m targets d_targets (device) induced by the n sources; same_positions refers to
  /// both the sources and the targets.
  Timings evaluate_at(const double* d_x, const double* d_alpha, const double* d_sigma, std::size_t n,
                      const double* d_targets, std::size_t m, double* d_u, double* d_grad,
                      bool same_positions = false);

  /// Fixed targets (the lattice of the grid sampling): their sort and tree are built here once
  /// and kept; evaluate_at_fixed evaluates at them. Periodic mode only (in free space the cube
  /// depends on the sources); std::invalid_argument otherwise or on non-finite targets.
  void fix_targets(const double* d_targets, std::size_t m);
  /// evaluate_at at the fixed targets (results as evaluate_at with them); same_sources: the
  /// sources' positions and core radii are those of the previous call at the fixed targets.
  Timings evaluate_at_fixed(const double* d_x, const double* d_alpha, const double* d_sigma, std::size_t n,
                            double* d_u, double* d_grad, bool same_sources = false);

  /// Ranks that each evaluate at their own targets from one and the same set of sources (every
  /// rank passes every rank's sources in the same order: the vortex solver on R GPUs) share the
  /// upward pass: each rank forms the multipoles of its own sources only, input indices [first,
  /// first + count), and `comm` sums them over the ranks before the M2L (an all-reduce of
  /// n_cells x 3 x ncoef(p) complex values). The results are the unshared ones up to the order
  /// of the multipoles' sums (round-off). Kept for the later calls; every rank then evaluates
  /// collectively, none with zero targets. comm null (the default) or of one rank: no sharing.
  /// total > 0: the sources of evaluate_own are not every rank's but this rank's and the ghosts
  /// that source_planes() asks for, out of `total` over the ranks (below).
  void share_upward(DeviceComm* comm, std::size_t first, std::size_t count, long long total = 0);

  /// The z planes by which a rank's sources for evaluate_own may be a part of the whole set
  /// (issue 25): the leaves' planes of the uniform levels (`planes` of side `side`, for `total`
  /// sources over the ranks), the arc [first, first + count) (mod planes) that this rank's n
  /// sources x (device, 3 a source) occupy, and `reach`, the planes either way whose sources the
  /// near field of those leaves takes at the core radius sigma_max (near_stencil without the
  /// lattice's slack, and one plane for a source on a leaves' face). Every rank's sources whose
  /// plane floor(z / side) lies within reach of the arc (base/planes.h: near_window), this rank's
  /// among them, are what evaluate_own needs with share_upward's total: its multipoles come from
  /// this rank's sources only and the other ranks' by the exchange of the uniform levels.
  struct SourcePlanes {
    int planes = 1;
    double side = 0;
    int first = 0, count = 0, reach = 0;
  };
  SourcePlanes source_planes(const double* d_x, std::size_t n, long long total, double sigma_max) const;
  /// Whether the last evaluate_own took the uniform levels. With a part of the sources
  /// (share_upward's total) one that could not (a tree that is not complete, tables that do not
  /// fit) wrote nothing: every rank then passes every rank's sources instead (collective: the
  /// ranks decide it together).
  bool took_uniform() const;

  /// evaluate_self at this rank's sources only: the n sources are every rank's (as share_upward
  /// says), u and ∇u are written for sources [first, first + count) of share_upward, at d_u[3 (i -
  /// first) + m] and d_grad[9 (i - first) + ...]. The tree, and with fmm.m2l = fft its uniform
  /// levels, are the whole set's, as evaluate_self builds them on one rank; the P2P, the L2P and
  /// the lists' M2L run for the leaves and cells that hold this rank's sources only, the uniform
  /// levels' FFTs over the windows of planes above them, and with the upward pass shared M and L
  /// keep only the cells of those windows (fmm/expansion_rows.h). The results are evaluate_self's
  /// rows [first, first + count)
  /// up to the order of the multipoles' sums when the upward pass is shared (round-off), and bit
  /// for bit when it is not, except where the leaves are alike (set_lattice_leaves) and this
  /// rank's are not one consecutive run of them: its L2P then takes the per-leaf kernel where
  /// evaluate_self takes the matrix product (round-off). Timings: n_p2p_pairs counts this rank's
  /// P2P tasks' pairs, n_m2l the translations of its windows, n_p2p_entries the list entries of
  /// the leaves of its targets' planes, expansion_cells the cells M and L keep.
  /// std::invalid_argument when [first, first + count) is not within n.
  Timings evaluate_own(const double* d_x, const double* d_alpha, const double* d_sigma, std::size_t n,
                       double* d_u, double* d_grad, bool same_positions = false);

  /// How the near field (P2P) shares the GPU with the far field (the results do not depend on
  /// it). serial: the P2P, then the far field, on one stream (the sum of the two, for
  /// measurements). streams (the default): the whole P2P grid on a low-priority stream beside
  /// the far field on a high-priority one, which takes SMs first as they free up. split: the
  /// P2P on `p2p_blocks_per_sm` blocks per SM (of the 8 (fp32) or 4 (fp64) that fit one) beside
  /// the far field, its warps taking tasks from a queue; after the L2L a whole-GPU launch takes
  /// the tasks left.
  enum class Overlap { serial, streams, split };
  void set_overlap(Overlap mode, int p2p_blocks_per_sm = 4);

  /// Where every leaf holds the same points (a lattice in a uniform tree: the vortex solver's
  /// particles just reinitialised; fmm/lattice_leaves.h), the P2M and the L2P as matrix products,
  /// and on the full levels of a uniform tree the M2M and the L2L (on, the default), or the
  /// per-cell kernels (off, for comparisons): the same results up to the order of the sums.
  /// Timings::lattice_leaves and lattice_levels say which ran.
  void set_lattice_leaves(bool on);
  /// The full levels' M2M and L2L as matrix products from `parents` parents a level up (the
  /// default, LatticeLevels::kMinParents, where they paid on an H200; lower for tests).
  void set_lattice_levels_from(int parents);

  const Params& params() const;

  /// Device memory of the evaluator's own pool (every buffer its calls allocate, kept at the
  /// high-water mark for the next call): reserved from the driver, and in use now. 0 and 0 where
  /// the device has no memory pools (plain cudaMalloc then, not counted).
  struct Memory {
    std::size_t reserved = 0, in_use = 0;
  };
  Memory memory() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vh::fmm
