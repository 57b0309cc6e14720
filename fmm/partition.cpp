#include "fmm/partition.h"

#include <algorithm>
#include <cmath>

#include "base/comm.h"
#include "fmm/tree.h"  // extend_bounds

namespace vh::fmm {

RankBox rank_box(const std::vector<Vec3>& x, const std::vector<double>& sigma, const std::vector<Vec3>* targets,
                 bool wrap) {
  RankBox b;
  b.source_lo = {1e300, 1e300, 1e300};
  b.source_hi = {-1e300, -1e300, -1e300};
  extend_bounds(x, wrap, b.source_lo, b.source_hi);
  b.target_lo = b.source_lo;
  b.target_hi = b.source_hi;
  if (targets) {
    b.target_lo = {1e300, 1e300, 1e300};
    b.target_hi = {-1e300, -1e300, -1e300};
    extend_bounds(*targets, wrap, b.target_lo, b.target_hi);
  }
  for (double s : sigma) b.sigma_max = std::max(b.sigma_max, s);
  b.sources = static_cast<long long>(x.size());
  b.targets = static_cast<long long>(targets ? targets->size() : x.size());
  return b;
}

std::vector<RankBox> allgather_boxes(const Comm& comm, const RankBox& mine) {
  std::vector<RankBox> all(comm.size());
  comm.allgather(&mine, sizeof(RankBox), all.data());
  return all;
}

double point_box_distance(const Vec3& p, const Vec3& lo, const Vec3& hi) {
  double d2 = 0;
  for (int d = 0; d < 3; ++d) {
    const double gap = std::max(lo[d] - p[d], p[d] - hi[d]);
    if (gap > 0) d2 += gap * gap;
  }
  return std::sqrt(d2);
}

double box_box_distance(const Vec3& alo, const Vec3& ahi, const Vec3& blo, const Vec3& bhi) {
  double d2 = 0;
  for (int d = 0; d < 3; ++d) {
    const double gap = std::max(alo[d] - bhi[d], blo[d] - ahi[d]);
    if (gap > 0) d2 += gap * gap;
  }
  return std::sqrt(d2);
}

}  // namespace vh::fmm
