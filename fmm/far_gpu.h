// Far field of the FMM on the GPU: P2M, M2M, M2L, L2L and L2P over the CPU-built trees and M2L
// lists (from build_lists, or already on the device from build_lists_gpu, fmm/traverse_gpu.h),
// with the same expansions as fmm/expansions.h (complex scaled solid harmonics, degrees 0..p,
// m >= 0 stored) in double precision, resident on the device; the M2L optionally in float
// (set_single_m2l).  Host API: no CUDA types; built only with VH_ENABLE_CUDA (VH_FMM_HAVE_CUDA).
// The stages are the launches of fmm/far_gpu_device.h, one file per operator:
//   P2M  block per source leaf (upward_gpu.cu): the regular harmonics of a chunk of particles go
//        to shared memory (one particle per thread), then each thread sums its coefficient.
//   M2M  per level, bottom-up, block per parent (upward_gpu.cu): child multipoles and
//        R(child - parent) staged.
//   M2L  block per target cell with a non-empty list (m2l_gpu.cu), entries sorted by source so
//        that the periodic images of one source add their I_lm(d) tables first (as on the CPU)
//        and one contraction serves them all.  The warps of a block walk different sources
//        independently; in a warp, p + 1 lanes build the table (one per order m, up its column)
//        and the 32 lanes share the (l, m) outputs round-robin, each lane all three components
//        of its outputs; the warps' partial sums are added in warp order at the end.
//   L2L  per level, top-down, block per child (downward_gpu.cu).
//   L2P  block per target leaf, thread per target (downward_gpu.cu): the local expansion is
//        shifted to degree 2 at the target, which gives the gradient and Hessian of the three
//        potentials, hence u and grad u; the near-field sums of P2PGpu and the periodic mean
//        correction are added in the same pass, which writes the targets in their input order.
// Where every leaf holds the same points (a lattice in a uniform tree: fmm/lattice_leaves.h) the
// P2M and the L2P are instead one matrix each applied to every leaf: matrix products on the FP64
// tensor cores (lattice_leaves_gpu.cu, dgemm_gpu.h).
// Every output coefficient has one owner and a fixed summation order: no atomics, repeatable.
// The periodic far lattice (M2L of the root multipole into the root's local expansion) and the
// sums of the mean correction run on the device too (periodic_gpu.cu, the host's bits).
#pragma once

#include <array>
#include <complex>
#include <memory>
#include <vector>

#include "fmm/expansion_rows.h"
#include "fmm/mean_correction.h"
#include "fmm/traverse.h"
#include "fmm/tree.h"
#include "fmm/types.h"

namespace vh::fmm {

class P2PGpu;
class SortedSourcesGpu;
struct GpuLists;

/// FarGpu's M2L arrays on the host (what it uploads; GpuLists::m2l_to_host for the GPU-built
/// ones).  Target cells with a non-empty list, in increasing order; target t has the groups
/// [goffset[t], goffset[t+1]); group g (one source cell and all its images) is the entries
/// [groups[g], groups[g+1]); an entry is (source cell, shift index).  A list is in
/// build_lists' order, or sorted by (source, shift) when it mixes shifts.
struct M2LArrays {
  std::vector<int> targets;                ///< n_targets
  std::vector<int> goffset;                ///< n_targets + 1
  std::vector<int> groups;                 ///< n_groups + 1 (the last: number of entries)
  std::vector<std::array<int, 2>> entries;  ///< (source, shift)
};
/// The arrays FarGpu builds from `lists` (lists.m2l; one entry per target cell of `tgt`).
M2LArrays m2l_arrays(const Tree& tgt, const Lists& lists);

/// Time of each GPU stage of the last evaluation, milliseconds (CUDA events).
struct FarGpuTimes {
  double p2m_m2m = 0, m2l = 0, l2l_l2p = 0;
  /// The P2M or the L2P as matrix products: every leaf held the same points (fmm/lattice_leaves.h).
  bool lattice_leaves = false;
  /// Levels whose M2M or L2L ran as matrix products (full levels: far_gpu_device.h LatticeLevels).
  int lattice_levels = 0;
};

/// Resident GPU far field for one pair of trees and one set of M2L lists.
class FarGpu {
 public:
  /// Uploads the cells of both trees, the sorted positions (src.x, tgt.x) and the M2L lists
  /// (lists.m2l, shift indices into `shifts`).  With self, tgt and src are the same tree.
  /// With `near` (a P2PGpu over the same trees, its sources and targets set), its device
  /// positions are used instead of uploading them again; it must outlive this object.
  FarGpu(const Tree& tgt, const Tree& src, bool self, const Lists& lists, const std::vector<Vec3>& shifts, int p,
         const P2PGpu* near = nullptr);
  /// The same with the lists built on the GPU (build_lists_gpu(tgt, src, self, shifts, ...)):
  /// takes over lists' M2L device arrays (no copy; lists.dev keeps its P2P part).
  FarGpu(const Tree& tgt, const Tree& src, bool self, GpuLists& lists, const std::vector<Vec3>& shifts, int p,
         const P2PGpu* near = nullptr);
  ~FarGpu();
  FarGpu(const FarGpu&) = delete;
  FarGpu& operator=(const FarGpu&) = delete;

  /// Uploads the strengths (sorted source order).
  void set_strengths(const std::vector<Vec3>& alpha);
  /// Reads the strengths where a SortedSourcesGpu keeps them (no upload); `s` must outlive
  /// the evaluation.  With self, also its permutation (the tree it built has none).
  void set_strengths(const SortedSourcesGpu& s);
  /// M2L in single precision (on): the contraction in float on expansions scaled by the
  /// target cell's side (fmm.precision single); off (the default): double.  Call before the
  /// first downward(); the other stages and the expansions stay double either way.
  void set_single_m2l(bool on);
  /// P2M and M2M.
  void upward();
  /// M2L, L2L and L2P.  When `near` is given (same target order, its run() or launch() already
  /// issued), its sums are added at L2P.  periodic: first the far lattice of `images` levels
  /// beyond the near images [-r0, r0]^3 into the root (images > 0), and the periodic mean
  /// correction at L2P, both from the device's expansions and particles (fmm/periodic.h).  L2P
  /// writes u and grad in the targets' input order (tgt.perm, or the SortedSourcesGpu's with
  /// self).  The result stays on the device.
  void downward(const P2PGpu* near, bool periodic = false, int r0 = 0, int images = 0);
  /// Copies u and grad of the last downward() to the host, input order of the targets (resized
  /// to the number of targets; every entry overwritten).
  void get(std::vector<Vec3>& u, std::vector<Mat3>& grad) const;
  /// Stage times of the last upward() and downward().
  FarGpuTimes times() const;
  long long n_m2l() const;  ///< M2L table evaluations per downward() (images counted one by one)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// lattice_m2l (fmm/periodic.h) on the GPU, host arrays in and out (for the tests): the same
/// operations in the same order, hence the same bits.
void lattice_m2l_gpu(int p, int r0, int images, const std::complex<double>* Mroot, std::complex<double>* Lroot);
/// The rows of the far field's M and L that UniformFar::keep_rows makes on the device
/// (fmm/expansion_rows.h: the levels below `from` whole, the others in `windows`, one a level)
/// for host cells in the cube [lo_z, lo_z + side0) along z, for the tests; returns the count.
int expansion_rows_gpu(const std::vector<Cell>& cells, double lo_z, double side0, int from,
                       const std::vector<PlaneWindow>& windows, std::vector<int>& rows);
/// mean_terms(xs, alpha) (fmm/periodic.h, positions already wrapped) on the GPU, for the tests:
/// the same bits.
MeanTerms mean_terms_gpu(const std::vector<Vec3>& xs, const std::vector<Vec3>& alpha);

}  // namespace vh::fmm
