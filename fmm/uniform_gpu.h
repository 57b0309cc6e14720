// The far field of a complete periodic tree by its uniform levels on the device (issue 26; CUDA
// sources only).  Where every level of the tree is full and every leaf sits on the last level L
// (the vortex solver's particle lattice), the traversal's lists are replaced by the uniform-level
// rule of fmm/level_stencil.h, with the acceptance test on full cells (radius and box of the
// cube: valid wherever the particles lie in their cells, which they always do), the cut-off's
// gaps widened by the particles' margins inside their leaves, measured at every build:
//   level 0    the root takes the images of the box that are far (the near images; the far
//              lattice beyond them is fmm/periodic.h's, as before),
//   level 1    the eight cells take their stencil by the per-pair M2L (FarPlan's M2L arrays),
//   2 .. L     each level's stencil by FFTs (fmm/m2l_fft_gpu.h, double precision),
//   leaves     each leaf takes the leaves that are not far from it by P2P (near_stencil), the
//              source ranges of leaves that follow one another in Morton order as one entry.
// Every pair of leaves is near or taken on exactly one level (level_stencil.h), so each target
// takes each source once per near image, as with the lists.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/device_buffer.h"
#include "fmm/far_gpu_device.h"
#include "fmm/level_stencil.h"
#include "fmm/m2l_fft_gpu.h"
#include "fmm/multipole_halo_gpu.h"
#include "fmm/traverse.h"

namespace vh {
class Comm;
}

namespace vh::fmm {

class UniformFar {
 public:
  /// Whether a tree of `cells` cells, `levels` levels and `leaves` leaves is complete with
  /// every leaf on its last level L, and 2 <= L <= 7.
  static bool complete(int cells, int levels, int leaves);

  /// Builds the level grids, the lists of levels 0 and 1, the P2P tasks and the FFT operators
  /// (kept while their stencils stay the same) for the device cells of a complete tree (tree
  /// order, the root cube of side side0 with lower corner lo), order p, the acceptance `mac`
  /// with the largest core radius sigma_max, and the near images `shifts` of half width r0;
  /// x: the sorted source positions (device), whose margins inside their leaves give the slack.
  /// Where only the leaves of the z planes [first_plane, first_plane + planes) of level L (mod
  /// 2^L; planes 0: all) need their local expansions (evaluate_own: one rank's targets), each
  /// level whose window of their ancestors' parent planes, with the stencil's reach, is
  /// narrower than the level takes its FFTs over the window only (m2l_fft_gpu.h); the other
  /// cells of that level then get no M2L of their level, and the P2P's tasks are those of the
  /// leaves of those planes only.
  /// Returns false, building nothing the caller uses, when p > 14 or the FFTs' tables would not
  /// fit in the device's free memory; the caller then takes the traversal's lists.
  /// over: the ranks whose sources make the tree together, each a part of them (evaluate_own
  /// with ghosts): the slack is the whole set's, the smallest margins over the ranks, so that
  /// every rank takes the one-rank stencils (collective over them then).
  bool build(const GCell* cells, int ncells, int levels, const double4_32a* x, int p, const Acceptance& mac,
             double sigma_max, int r0, const std::vector<Vec3>& shifts, double side0, const Vec3& lo,
             int first_plane = 0, int planes = 0, const Comm* over = nullptr);
  /// Why the last build() returned false ("" after a true).
  const std::string& refused() const { return refused_; }

  // The per-pair M2L of levels 0 and 1, FarPlan's layout (M2LArrays, far_gpu.h).
  const int* m2l_targets() const { return targets_.data(); }
  const int* m2l_goffset() const { return goffset_.data(); }
  const int* m2l_groups() const { return groups_.data(); }
  const int2* m2l_entries() const { return entries_.data(); }
  int n_m2l_targets() const { return n_targets_; }
  /// Translations per evaluation: the lists' and the stencils' (n^3 / 8 times their entries,
  /// the window's share of them).
  long long n_m2l() const { return n_m2l_; }
  // The P2P, P2PGpu's layout (P2PArrays, p2p_gpu.h): the tasks of build()'s leaf planes (all,
  // or a window's).
  const int4* p2p_tasks() const { return tasks_.data(); }
  int n_p2p_tasks() const { return n_tasks_; }
  const int4* p2p_entries() const { return p2p_entries_.data(); }
  long long p2p_pairs() const { return pairs_; }
  /// The tasks' list entries a leaf summed over the leaves, after merging (build()).
  long long p2p_entry_count() const { return n_entries_; }

  /// The z planes of cells whose multipoles the M2L of each level 0 .. L reads: all of them,
  /// or of a level in windows (build's first_plane, planes) the children of the window's
  /// source parent planes (fmm/multipole_halo_gpu.h).
  std::vector<PlaneWindow> source_planes() const;
  /// Keeps in M and L (FarPlan::rows) every cell of the levels below `from` and, from `from` on,
  /// the cells of each level's source planes (source_planes()), which hold every cell that this
  /// rank's P2M, M2M, M2L, L2L and L2P touch (fmm/expansion_rows.h); from > L: every cell at its
  /// index (rows() null).  cells: build()'s.  Until the next build().
  void keep_rows(const GCell* cells, int from);
  /// Cell -> row of M and L, -1 for the cells kept nowhere (keep_rows); null: every cell's index.
  const int* rows() const { return n_rows_ > 0 ? rows_.data() : nullptr; }
  int n_rows() const { return n_rows_; }
  /// The cells 0 .. whole() - 1 are kept at their index (the levels below keep_rows' `from`).
  int whole() const { return whole_; }

  /// The M2L of levels 2 .. L from the multipoles M into the locals L (FarWork's arrays: by the
  /// rows of keep_rows), on s.
  void m2l(const double2* M, double2* L, cudaStream_t s) const;

 private:
  std::string refused_;
  DeviceArray<unsigned long long> margins_;  // margin_kernel's two minima
  DeviceArray<int> grid_;  // level l's cells in grid order at offset (8^l - 1) / 7
  DeviceArray<int> rows_, row_grid_;  // keep_rows: cell -> row; grid_ as rows
  int n_rows_ = 0, whole_ = 0;
  int ncells_ = 0, L_ = 0;  // build()'s tree
  double lo_z_ = 0, side0_ = 0;
  DeviceArray<int> targets_, goffset_, groups_;
  DeviceArray<int2> entries_;
  int n_targets_ = 0;
  long long n_m2l_ = 0;
  DeviceArray<int4> tasks_, p2p_entries_;
  DeviceArray<int> near_, shift_of_, ntask_, task_first_;  // ntask_: nl + 1 (the scan's zero last)
  DeviceArray<int> entry_count_;                           // a leaf's entries after merging
  DeviceBytes scan_temp_;
  DeviceArray<unsigned long long> counts_dev_;  // the P2P pairs, the merged entries
  int n_tasks_ = 0;
  long long pairs_ = 0, n_entries_ = 0;
  struct Fft {
    int p = -1;
    double side0 = 0;
    int z0 = 0, nz = 0;  // the target parent planes
    LevelStencil st;
    std::unique_ptr<M2LFftGpu> op;
  };
  std::map<int, Fft> fft_;  // by level
};

}  // namespace vh::fmm
