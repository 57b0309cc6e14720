// Leaves that hold the same points: every leaf K points whose offsets from the leaf's centre are,
// point for point in sorted order, those of the first leaf.  A lattice in the leaves of a
// uniform tree is such a set (the vortex solver's particles just reinitialised: 4³ or 3³ lattice
// points a leaf); the GPU's P2M and L2P are then one matrix each for every leaf (LatticeLeaves,
// fmm/far_gpu_device.h).  Here the test of one point, which the device's check and the host's
// below both apply.
#pragma once

#include <math.h>

#include <vector>

#include "base/hd.h"
#include "fmm/tree.h"

namespace vh::fmm {

/// How far a point may sit from the first leaf's point, as a fraction of the root cube's side.
/// Lattice positions and cell centres are each within a few ulp of their exact values (1e-13 of
/// the side is ~100 ulp at 2 pi); a point this close moves its far field by ~1e-12 of itself.
constexpr double kLatticeLeafTolerance = 1e-13;

/// Whether a point at offset (dx, dy, dz) from its leaf's centre sits where the first leaf's
/// point at (ex, ey, ez) does, within tol in each coordinate (false for NaN).
VH_HD inline bool same_leaf_offset(double dx, double dy, double dz, double ex, double ey, double ez, double tol) {
  return fabs(dx - ex) <= tol && fabs(dy - ey) <= tol && fabs(dz - ez) <= tol;
}

/// The number K of points of each of `leaves` (cell indices into `cells`, x the sorted
/// positions) when the leaves are alike: consecutive cells, each holding K points, leaf b's
/// range beginning K b after the first's, and point t of each at the first leaf's offset t
/// (same_leaf_offset, tol = kLatticeLeafTolerance times the root's side); 0 otherwise.
inline int lattice_leaf_points(const std::vector<Cell>& cells, const std::vector<int>& leaves,
                               const std::vector<Vec3>& x) {
  if (leaves.empty()) return 0;
  const Cell& c0 = cells[leaves[0]];
  const int k = c0.end - c0.begin;
  const double tol = kLatticeLeafTolerance * 2 * cells[0].half;
  for (std::size_t b = 0; b < leaves.size(); ++b) {
    const Cell& c = cells[leaves[b]];
    if (leaves[b] != leaves[0] + static_cast<int>(b) || c.begin != c0.begin + static_cast<int>(b) * k ||
        c.end - c.begin != k)
      return 0;
    for (int t = 0; t < k; ++t) {
      const Vec3& p = x[c.begin + t];
      const Vec3& q = x[c0.begin + t];
      if (!same_leaf_offset(p[0] - c.center[0], p[1] - c.center[1], p[2] - c.center[2], q[0] - c0.center[0],
                            q[1] - c0.center[1], q[2] - c0.center[2], tol))
        return 0;
    }
  }
  return k;
}

}  // namespace vh::fmm
