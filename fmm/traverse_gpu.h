// The dual tree traversal of fmm/traverse.h on the GPU, writing the interaction lists directly in
// the device formats that FarGpu (M2L) and P2PGpu (P2P) consume, so that the lists never pass
// through the host.  Host API: no CUDA types; CUDA builds only (VH_FMM_HAVE_CUDA).
//
// Method (breadth first, one launch pair per frontier level):
//   The frontier holds (target cell A, shift s, source cell B) triples, starting with (0, s, 0)
//   for every shift.  One thread per triple takes exactly the decision of build_lists (the same
//   acceptance test, rounded as the host rounds it: separate multiplies and adds, IEEE sqrt, no
//   fused multiply-add, the sums over x, y, z in that order): far -> M2L entry (or P2P entry for
//   a leaf target, shift 0 and n_A n_B <= p2p_max_pairs); two leaves -> P2P entry; otherwise the
//   children of the larger cell (split A unless B is a leaf or A is not a leaf and
//   R_A >= R_B) go to the next frontier.  Each level counts, scans (CUB) and writes, so the
//   output does not depend on scheduling.
//   The serial recursion appends, for one target and one shift, its sources in increasing
//   depth-first (pre-order) rank in the source tree (they are disjoint subtrees visited children
//   first-to-last), and the shifts in increasing index.  So one radix sort of the 64-bit keys
//   (target, shift, source pre-order rank) gives the lists of build_lists entry for entry; an M2L
//   list that mixes shifts is keyed (target, source index, shift) instead, the order FarGpu
//   sorts such lists into.  The sorted keys then become FarGpu's groups and P2PGpu's tasks and
//   merged entries by flag scans and scatters.
// Cost: O(entries) work and one small download (the level's counts) per frontier level.
// Measured on an H200 at 2^24 lattice particles (periodic, theta 0.6, ncrit 64: 8.6e7 M2L and
// 8.9e6 P2P entries): 0.049 s (traversal 0.016, M2L arrays 0.010, P2P arrays 0.004, the rest
// host packing and upload of cells, ranks and leaves), against 1.32 s for build_lists and the
// host conversions (tests/fmm/test_traverse_gpu.cpp, TraverseGpuTiming).  Device memory at the peak (the M2L sort): ~40 bytes per M2L entry.
#pragma once

#include <memory>
#include <vector>

#include "fmm/far_gpu.h"
#include "fmm/p2p_gpu.h"
#include "fmm/traverse.h"
#include "fmm/tree.h"
#include "fmm/types.h"

namespace vh::fmm {

struct GpuListsDevice;  // the device arrays (fmm/traverse_gpu_device.h, CUDA sources only)

/// The interaction lists on the device, as FarGpu and P2PGpu take them over (their
/// constructors from a GpuLists), plus the counts the host needs.  Movable, not copyable.
struct GpuLists {
  bool self = false;          ///< targets are the sources (P2P pairs i == i at shift 0 skipped)
  std::vector<Vec3> shifts;   ///< periodic shifts, as given to build_lists_gpu
  // M2L, in FarGpu's layout (far_gpu.h, M2LArrays): targets with a non-empty list in increasing
  // cell order, their groups (one source and its images) and the (source, shift) entries.
  int n_m2l_targets = 0;      ///< target cells with a non-empty M2L list
  long long n_m2l = 0;        ///< M2L entries (images counted one by one)
  long long n_m2l_groups = 0; ///< (target, source) groups
  // P2P, in P2PGpu's layout (p2p_gpu.h, P2PArrays): tasks of <= 32 targets and merged entries.
  int n_p2p_tasks = 0;
  long long n_p2p_entries = 0;  ///< after merging adjacent source ranges
  long long p2p_pairs = 0;      ///< particle pairs per P2P evaluation (P2PLists::pairs())
  int p2p_targets = 0;          ///< number of target particles (P2PGpu::n_targets())
  int p2p_max_source = 0;       ///< largest source end index of an entry (0 without entries)
  /// Device arrays; FarGpu and P2PGpu take their part (then null there).
  std::unique_ptr<GpuListsDevice> dev;

  GpuLists();
  ~GpuLists();
  GpuLists(GpuLists&&) noexcept;
  GpuLists& operator=(GpuLists&&) noexcept;

  /// The device arrays downloaded (for tests): the same arrays FarGpu and P2PGpu build from the
  /// host lists (m2l_arrays, p2p_arrays).  Throws std::logic_error after a part was taken.
  M2LArrays m2l_to_host() const;
  P2PArrays p2p_to_host() const;
};

/// Builds the M2L and P2P lists of target tree `tgt` against source tree `src` (the same tree
/// with self) for the periodic shifts `shifts` (shifts[0] the zero shift) and acceptance `mac`:
/// the lists of build_lists(tgt, src, shifts, mac) in FarGpu's and P2PGpu's device formats, the
/// P2P entries as flatten_p2p_lists(..., self, merge_p2p) gives them.  Uploads the cells of both
/// trees (no particles).  Synchronous; throws std::runtime_error on CUDA errors and
/// std::invalid_argument when the cell and shift counts need more than 64 key bits.
GpuLists build_lists_gpu(const Tree& tgt, const Tree& src, bool self, const std::vector<Vec3>& shifts,
                         const Acceptance& mac, bool merge_p2p = true);

}  // namespace vh::fmm
