#include "fmm/partition.h"

#include <algorithm>
#include <cmath>

#include "base/comm.h"
#include "fmm/morton.h"

namespace vh::fmm {

namespace {

// Tight box of points (wrapped first with wrap); min and max are exact, so the reduction over
// threads gives the serial box.
void extend(const std::vector<Vec3>& x, bool wrap, Vec3& lo, Vec3& hi) {
  const long long n = static_cast<long long>(x.size());
  double l0 = lo[0], l1 = lo[1], l2 = lo[2], h0 = hi[0], h1 = hi[1], h2 = hi[2];
#pragma omp parallel for schedule(static) reduction(min : l0, l1, l2) reduction(max : h0, h1, h2) if (n > 16384)
  for (long long i = 0; i < n; ++i) {
    const double v0 = wrap ? morton::wrap(x[i][0]) : x[i][0], v1 = wrap ? morton::wrap(x[i][1]) : x[i][1],
                 v2 = wrap ? morton::wrap(x[i][2]) : x[i][2];
    l0 = std::min(l0, v0);
    l1 = std::min(l1, v1);
    l2 = std::min(l2, v2);
    h0 = std::max(h0, v0);
    h1 = std::max(h1, v1);
    h2 = std::max(h2, v2);
  }
  lo = {l0, l1, l2};
  hi = {h0, h1, h2};
}

}  // namespace

RankBox rank_box(const std::vector<Vec3>& x, const std::vector<double>& sigma, const std::vector<Vec3>* targets,
                 bool wrap) {
  RankBox b;
  b.source_lo = {1e300, 1e300, 1e300};
  b.source_hi = {-1e300, -1e300, -1e300};
  extend(x, wrap, b.source_lo, b.source_hi);
  b.target_lo = b.source_lo;
  b.target_hi = b.source_hi;
  if (targets) {
    b.target_lo = {1e300, 1e300, 1e300};
    b.target_hi = {-1e300, -1e300, -1e300};
    extend(*targets, wrap, b.target_lo, b.target_hi);
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
