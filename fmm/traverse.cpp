#include "fmm/traverse.h"

#include <cmath>

namespace vh::fmm {

double rho_tolerance(double tol) {
  // 1 - g(rho) = erfc(rho) + (2/sqrt(pi)) rho exp(-rho^2), decreasing in rho.
  auto one_minus_g = [](double r) { return std::erfc(r) + 2.0 / std::sqrt(M_PI) * r * std::exp(-r * r); };
  double lo = 0, hi = 30;
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (one_minus_g(mid) > tol) lo = mid; else hi = mid;
  }
  return hi;
}

namespace {

struct Traversal {
  const Tree& tgt;
  const Tree& src;
  const Vec3& shift;
  int s;
  const Acceptance& mac;
  Lists& lists;

  void interact(int i, int j) {
    const Cell& A = tgt.cells[i];
    const Cell& B = src.cells[j];
    double dc2 = 0, db2 = 0;
    for (int d = 0; d < 3; ++d) {
      const double dc = A.center[d] - B.center[d] - shift[d];
      dc2 += dc * dc;
      const double gap = std::max(A.bmin[d] - (B.bmax[d] + shift[d]), (B.bmin[d] + shift[d]) - A.bmax[d]);
      if (gap > 0) db2 += gap * gap;
    }
    if (mac.far(A.radius, B.radius, std::sqrt(dc2), std::sqrt(db2), B.sigma_max)) {
      const long long pairs = static_cast<long long>(A.end - A.begin) * (B.end - B.begin);
      if (A.leaf() && s == 0 && pairs <= mac.p2p_max_pairs)
        lists.p2p[i].push_back({j, s});  // only leaves own P2P lists: no two threads share a target
      else
        lists.m2l[i].push_back({j, s});
      return;
    }
    if (A.leaf() && B.leaf()) {
      lists.p2p[i].push_back({j, s});
      return;
    }
    if (B.leaf() || (!A.leaf() && A.radius >= B.radius)) {
      for (int c = A.child; c < A.child + A.nchild; ++c) interact(c, j);
    } else {
      for (int c = B.child; c < B.child + B.nchild; ++c) interact(i, c);
    }
  }
};

}  // namespace

Lists build_lists(const Tree& tgt, const Tree& src, const std::vector<Vec3>& shifts, const Acceptance& mac) {
  Lists lists;
  lists.m2l.resize(tgt.cells.size());
  lists.p2p.resize(tgt.cells.size());
  if (tgt.x.empty() || src.x.empty()) return lists;
  for (int s = 0; s < static_cast<int>(shifts.size()); ++s) {
    Traversal t{tgt, src, shifts[s], s, mac, lists};
    t.interact(0, 0);
  }
  return lists;
}

}  // namespace vh::fmm
