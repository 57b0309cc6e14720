// The acceptance test of the dual tree traversal (fmm/traverse.h) for one pair (target cell A,
// source cell B translated by the shift s): one inline definition for build_lists (traverse.cpp)
// and the GPU traversal (traverse_gpu.cu), VH_HD, rounded operation by operation on both
// (add_rn, ... of base/hd.h; sums over x, y, z in that order), so that both take the same
// decisions bit for bit and build the same lists.
//   far  <=>  R_A + R_B < theta |c_A - c_B - s|  and  dist(box_A, box_B + s) >= rcut_per_sigma sigma_max(B)
// c: cube centres, R: tight radii, box: tight particle boxes [lo, hi], sigma_max(B) the largest
// core radius among B's particles.
#pragma once

#include "base/hd.h"

namespace vh::fmm {

/// The criterion from the distances: centres dist_centres, boxes dist_boxes.
VH_HD inline bool accept(double ra, double rb, double dist_centres, double dist_boxes, double smax_b, double theta,
                         double rcut_per_sigma) {
  return add_rn(ra, rb) < mul_rn(theta, dist_centres) && dist_boxes >= mul_rn(rcut_per_sigma, smax_b);
}

/// The criterion for (A, B + s) from the cells' centres, radii, boxes and sigma_max(B).
VH_HD inline bool far_pair(const double* ca, double ra, const double* loa, const double* hia, const double* cb,
                           double rb, const double* lob, const double* hib, double smax_b, const double* s,
                           double theta, double rcut_per_sigma) {
  double dc2 = 0, db2 = 0;
  for (int d = 0; d < 3; ++d) {
    const double dc = sub_rn(sub_rn(ca[d], cb[d]), s[d]);
    dc2 = add_rn(dc2, mul_rn(dc, dc));
    const double g1 = sub_rn(loa[d], add_rn(hib[d], s[d]));
    const double g2 = sub_rn(add_rn(lob[d], s[d]), hia[d]);
    const double gap = g1 < g2 ? g2 : g1;  // max(g1, g2)
    if (gap > 0) db2 = add_rn(db2, mul_rn(gap, gap));
  }
  return accept(ra, rb, sqrt_rn(dc2), sqrt_rn(db2), smax_b, theta, rcut_per_sigma);
}

}  // namespace vh::fmm
