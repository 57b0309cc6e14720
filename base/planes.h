// Planes of a periodic grid along z: how the vortex solver's ranks say which particles their
// sums need of the others' (vortex/halo_gpu.h) and which planes a rank's sources occupy
// (fmm::GpuEvaluator::source_planes). One spelling of the rule for host and device:
//   plane_of       the plane floor(z / side) mod planes of a height z (any z: the box's images
//                  fold onto it);
//   near_window    whether a plane lies in a window of planes [first, first + count) mod planes
//                  widened by `reach` planes either way;
//   occupied_arc   the shortest window that holds every occupied plane (host);
//   PlaneCounts    whether any occupied plane is near a window (host).
#pragma once

#include <math.h>

#include <algorithm>
#include <vector>

#include "base/hd.h"

namespace vh {

/// The plane floor(z / side) mod planes (0 … planes − 1) of a height z.
VH_HD inline int plane_of(double z, double side, int planes) {
  int p = static_cast<int>(floor(z / side)) % planes;
  if (p < 0) p += planes;
  return p;
}

/// Whether plane p (any integer, taken mod n) lies within `reach` planes of the window
/// [first, first + count) mod n, periodically. reach ≥ n/2 takes every plane.
VH_HD inline bool near_window(int p, int first, int count, int n, int reach) {
  const int d = ((p - first) % n + n) % n;  // planes above first, periodically
  return d < count + reach || d >= n - reach;
}

/// The shortest run of planes [first, first + count) mod n that holds every plane whose
/// occupied[] is nonzero; count 0 where all are occupied or none.
inline void occupied_arc(const std::vector<int>& occupied, int& first, int& count) {
  const int n = static_cast<int>(occupied.size());
  int gap = 0, gap_end = 0;  // the longest run of empty planes, cyclically, and where it ends
  for (int z = 0, run = 0; z < 2 * n; ++z) {
    run = occupied[z % n] ? 0 : std::min(run + 1, n);
    if (run > gap) gap = run, gap_end = (z + 1) % n;
  }
  first = gap == 0 || gap == n ? 0 : gap_end;
  count = gap == 0 || gap == n ? 0 : n - gap;
}

/// The occupied planes of a grid of n (occupied[p] nonzero), counted over windows: whether a
/// window widened by a reach holds any of them, in O(1) a window (prefix sums over two periods).
class PlaneCounts {
 public:
  explicit PlaneCounts(const std::vector<int>& occupied)
      : n_(static_cast<int>(occupied.size())), prefix_(2 * static_cast<std::size_t>(n_) + 1, 0) {
    for (int p = 0; p < 2 * n_; ++p) prefix_[p + 1] = prefix_[p] + (occupied[p % n_] ? 1 : 0);
  }
  /// Whether some occupied plane p has near_window(p, first, count, n, reach).
  bool near(int first, int count, int reach) const {
    if (n_ == 0) return false;
    const int span = std::min(count + 2 * reach, n_);
    const int lo = ((first - reach) % n_ + n_) % n_;
    return prefix_[lo + span] > prefix_[lo];
  }

 private:
  int n_;
  std::vector<int> prefix_;
};

}  // namespace vh
