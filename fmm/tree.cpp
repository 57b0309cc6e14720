#include "fmm/tree.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace vh::fmm {

namespace {

constexpr int kBits = 21;

// Spreads the low 21 bits of v so that there are two zero bits between consecutive bits.
std::uint64_t spread(std::uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffULL;
  v = (v | v << 16) & 0x1f0000ff0000ffULL;
  v = (v | v << 8) & 0x100f00f00f00f00fULL;
  v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
  v = (v | v << 2) & 0x1249249249249249ULL;
  return v;
}

}  // namespace

void bounding_cube(const std::vector<Vec3>& a, const std::vector<Vec3>* b, Vec3& center, double& half) {
  Vec3 lo = {1e300, 1e300, 1e300}, hi = {-1e300, -1e300, -1e300};
  auto add = [&](const std::vector<Vec3>& v) {
    for (const auto& p : v)
      for (int d = 0; d < 3; ++d) {
        lo[d] = std::min(lo[d], p[d]);
        hi[d] = std::max(hi[d], p[d]);
      }
  };
  add(a);
  if (b) add(*b);
  half = 0;
  for (int d = 0; d < 3; ++d) {
    center[d] = 0.5 * (lo[d] + hi[d]);
    half = std::max(half, 0.5 * (hi[d] - lo[d]));
  }
  half = half * (1 + 1e-6) + 1e-300;
  if (half < 1e-12) half = 1.0;
}

Tree build_tree(const std::vector<Vec3>& x, const std::vector<double>& sigma, const Vec3& center,
                double half, int ncrit) {
  const int n = static_cast<int>(x.size());
  Tree t;
  // Morton keys relative to the cube's lower corner.
  std::vector<std::uint64_t> key(n);
  const double scale = double(1 << kBits) / (2 * half);
  for (int i = 0; i < n; ++i) {
    std::uint64_t k = 0;
    for (int d = 0; d < 3; ++d) {
      long long c = static_cast<long long>(std::floor((x[i][d] - (center[d] - half)) * scale));
      c = std::clamp(c, 0LL, (1LL << kBits) - 1);
      k |= spread(static_cast<std::uint64_t>(c)) << d;
    }
    key[i] = k;
  }
  t.perm.resize(n);
  std::iota(t.perm.begin(), t.perm.end(), 0);
  // Ties broken by input index are avoided on purpose: a permutation of the input must give the
  // same tree; equal keys only reorder a leaf's particles (round-off level).
  std::stable_sort(t.perm.begin(), t.perm.end(), [&](int a, int b) { return key[a] < key[b]; });
  std::vector<std::uint64_t> skey(n);
  t.x.resize(n);
  for (int i = 0; i < n; ++i) {
    skey[i] = key[t.perm[i]];
    t.x[i] = x[t.perm[i]];
  }

  Cell root;
  root.center = center;
  root.half = half;
  root.begin = 0;
  root.end = n;
  t.cells.push_back(root);
  // Breadth-first split: a cell's children are appended as one contiguous block.
  for (std::size_t ci = 0; ci < t.cells.size(); ++ci) {
    Cell c = t.cells[ci];
    if (c.end - c.begin <= ncrit || c.level >= kBits) continue;
    const int shift = 3 * (kBits - 1 - c.level);
    const int first = static_cast<int>(t.cells.size());
    int nchild = 0;
    int b = c.begin;
    for (int oct = 0; oct < 8 && b < c.end; ++oct) {
      // end of octant oct: first key whose octant digit exceeds oct
      int e = static_cast<int>(std::partition_point(skey.begin() + b, skey.begin() + c.end,
                                                    [&](std::uint64_t k) { return int((k >> shift) & 7) <= oct; }) -
                               skey.begin());
      if (e == b) continue;
      Cell ch;
      ch.half = 0.5 * c.half;
      for (int d = 0; d < 3; ++d) ch.center[d] = c.center[d] + (((oct >> d) & 1) ? ch.half : -ch.half);
      ch.begin = b;
      ch.end = e;
      ch.level = c.level + 1;
      ch.parent = static_cast<int>(ci);
      t.cells.push_back(ch);
      ++nchild;
      b = e;
    }
    t.cells[ci].child = first;
    t.cells[ci].nchild = nchild;
  }
  // Tight boxes, radii and sigma_max from the particles.
  for (std::size_t ci = 0; ci < t.cells.size(); ++ci) {
    Cell& c = t.cells[ci];
    c.bmin = {1e300, 1e300, 1e300};
    c.bmax = {-1e300, -1e300, -1e300};
    double r2 = 0, smax = 0;
    for (int i = c.begin; i < c.end; ++i)
      for (int d = 0; d < 3; ++d) {
        c.bmin[d] = std::min(c.bmin[d], t.x[i][d]);
        c.bmax[d] = std::max(c.bmax[d], t.x[i][d]);
      }
    for (int i = c.begin; i < c.end; ++i) {
      double d2 = 0;
      for (int d = 0; d < 3; ++d) d2 += (t.x[i][d] - c.center[d]) * (t.x[i][d] - c.center[d]);
      r2 = std::max(r2, d2);
      if (!sigma.empty()) smax = std::max(smax, sigma[t.perm[i]]);
    }
    c.radius = std::sqrt(r2);
    c.sigma_max = smax;
    if (static_cast<int>(t.levels.size()) <= c.level) t.levels.resize(c.level + 1);
  }
  for (int i = 0; i < static_cast<int>(t.cells.size()); ++i) t.levels[t.cells[i].level].push_back(i);
  return t;
}

}  // namespace vh::fmm
