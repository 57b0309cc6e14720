// The parallel tree build and traversal give the serial results exactly, for any number of
// threads, and the vectorised CPU P2P matches the per-pair formula of fmm/p2p_kernel.h.
// The references below are the serial algorithms as they were before the parallel versions
// (std::stable_sort of the Morton keys, breadth-first split, one recursion per shift).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>

#include "common.h"
#include "fmm/p2p.h"
#include "fmm/p2p_kernel.h"
#include "fmm/periodic.h"
#include "fmm/traverse.h"
#include "fmm/tree.h"

namespace vh::fmm {
namespace {

// --- serial references ----------------------------------------------------------------------

std::uint64_t spread_ref(std::uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffULL;
  v = (v | v << 16) & 0x1f0000ff0000ffULL;
  v = (v | v << 8) & 0x100f00f00f00f00fULL;
  v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
  v = (v | v << 2) & 0x1249249249249249ULL;
  return v;
}

Tree build_tree_ref(const std::vector<Vec3>& x, const std::vector<double>& sigma, const Vec3& center, double half,
                    int ncrit) {
  constexpr int kBits = 21;
  const int n = static_cast<int>(x.size());
  Tree t;
  std::vector<std::uint64_t> key(n);
  const double scale = double(1 << kBits) / (2 * half);
  for (int i = 0; i < n; ++i) {
    std::uint64_t k = 0;
    for (int d = 0; d < 3; ++d) {
      long long c = static_cast<long long>(std::floor((x[i][d] - (center[d] - half)) * scale));
      c = std::clamp(c, 0LL, (1LL << kBits) - 1);
      k |= spread_ref(static_cast<std::uint64_t>(c)) << d;
    }
    key[i] = k;
  }
  t.perm.resize(n);
  std::iota(t.perm.begin(), t.perm.end(), 0);
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
  for (std::size_t ci = 0; ci < t.cells.size(); ++ci) {
    Cell c = t.cells[ci];
    if (c.end - c.begin <= ncrit || c.level >= kBits) continue;
    const int shift = 3 * (kBits - 1 - c.level);
    const int first = static_cast<int>(t.cells.size());
    int nchild = 0;
    int b = c.begin;
    for (int oct = 0; oct < 8 && b < c.end; ++oct) {
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

struct TraversalRef {
  const Tree& tgt;
  const Tree& src;
  const Vec3& shift;
  int s;
  const Acceptance& mac;
  Lists& lists;
  void interact(int i, int j) {
    const Cell& A = tgt.cells[i];
    const Cell& B = src.cells[j];
    double dc, db;
    testing::reference_distances(A, B, shift, dc, db);
    if (mac.far(A.radius, B.radius, dc, db, B.sigma_max)) {
      const long long pairs = static_cast<long long>(A.end - A.begin) * (B.end - B.begin);
      if (A.leaf() && s == 0 && pairs <= mac.p2p_max_pairs)
        lists.p2p[i].push_back({j, s});
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

Lists build_lists_ref(const Tree& tgt, const Tree& src, const std::vector<Vec3>& shifts, const Acceptance& mac) {
  Lists lists;
  lists.m2l.resize(tgt.cells.size());
  lists.p2p.resize(tgt.cells.size());
  if (tgt.x.empty() || src.x.empty()) return lists;
  for (int s = 0; s < static_cast<int>(shifts.size()); ++s) {
    TraversalRef t{tgt, src, shifts[s], s, mac, lists};
    t.interact(0, 0);
  }
  return lists;
}

// --- comparisons -----------------------------------------------------------------------------

// n == 0 first: memcmp of the null data() of empty vectors is undefined (UBSan reports it).
bool same_bits(const void* a, const void* b, std::size_t n) { return n == 0 || std::memcmp(a, b, n) == 0; }

void expect_same_tree(const Tree& a, const Tree& b) {
  ASSERT_EQ(a.perm, b.perm);
  ASSERT_EQ(a.x.size(), b.x.size());
  EXPECT_TRUE(same_bits(a.x.data(), b.x.data(), a.x.size() * sizeof(Vec3)));
  ASSERT_EQ(a.cells.size(), b.cells.size());
  for (std::size_t c = 0; c < a.cells.size(); ++c) {
    const Cell &p = a.cells[c], &q = b.cells[c];
    const bool same = same_bits(&p.center, &q.center, sizeof(Vec3)) && same_bits(&p.half, &q.half, 8) &&
                      same_bits(&p.radius, &q.radius, 8) && same_bits(&p.bmin, &q.bmin, sizeof(Vec3)) &&
                      same_bits(&p.bmax, &q.bmax, sizeof(Vec3)) && same_bits(&p.sigma_max, &q.sigma_max, 8) &&
                      p.begin == q.begin && p.end == q.end && p.child == q.child && p.nchild == q.nchild &&
                      p.level == q.level && p.parent == q.parent;
    ASSERT_TRUE(same) << "cell " << c;
  }
  EXPECT_EQ(a.levels, b.levels);
}

void expect_same_lists(const Lists& a, const Lists& b) {
  ASSERT_EQ(a.m2l.size(), b.m2l.size());
  ASSERT_EQ(a.p2p.size(), b.p2p.size());
  auto eq = [](const std::vector<Interaction>& x, const std::vector<Interaction>& y) {
    if (x.size() != y.size()) return false;
    for (std::size_t k = 0; k < x.size(); ++k)
      if (x[k].source != y[k].source || x[k].shift != y[k].shift) return false;
    return true;
  };
  for (std::size_t c = 0; c < a.m2l.size(); ++c) {
    ASSERT_TRUE(eq(a.m2l[c], b.m2l[c])) << "M2L list of cell " << c;
    ASSERT_TRUE(eq(a.p2p[c], b.p2p[c])) << "P2P list of cell " << c;
  }
}

// Restores the thread count at the end of a test.
struct Threads {
  int saved = omp_get_max_threads();
  ~Threads() { omp_set_num_threads(saved); }
};

const int kThreadCounts[] = {1, 2, 3, 4, 7};

// Random blobs plus exact duplicates (equal keys: the sort must be stable) and a clustered
// part (deep, uneven tree).
testing::Blobs mixed_blobs(int n, unsigned seed) {
  auto b = testing::random_blobs(n, 0.0, kBoxLength, seed, true);
  std::mt19937_64 gen(seed + 7);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  for (int i = 0; i < n / 10; ++i) b.x[i] = b.x[n - 1 - i];  // duplicates
  for (int i = n / 10; i < n / 4; ++i)                       // a dense clump
    for (int d = 0; d < 3; ++d) b.x[i][d] = 1.0 + 0.05 * U(gen);
  return b;
}

TEST(FmmParallel, TreeEqualsSerialBuild) {
  Threads keep;
  for (int n : {0, 1, 500, 70000}) {
    const auto b = mixed_blobs(std::max(n, 1), 11 + n);
    std::vector<Vec3> x(b.x.begin(), b.x.begin() + n);
    std::vector<double> s(b.sigma.begin(), b.sigma.begin() + n);
    for (int ncrit : {1, 64}) {
      if (ncrit == 1 && n > 1000) continue;
      Vec3 c;
      double h;
      bounding_cube(x, nullptr, c, h);
      const Tree ref = build_tree_ref(x, s, c, h, ncrit);
      for (int nt : kThreadCounts) {
        omp_set_num_threads(nt);
        SCOPED_TRACE("n = " + std::to_string(n) + ", ncrit = " + std::to_string(ncrit) + ", threads " +
                     std::to_string(nt));
        Vec3 c2;
        double h2;
        bounding_cube(x, nullptr, c2, h2);
        ASSERT_TRUE(same_bits(&c, &c2, sizeof c) && h == h2);
        expect_same_tree(build_tree(x, s, c, h, ncrit), ref);
        expect_same_tree(build_tree(x, {}, c, h, ncrit), build_tree_ref(x, {}, c, h, ncrit));
      }
    }
  }
}

TEST(FmmParallel, ListsEqualSerialTraversal) {
  Threads keep;
  const double rcut = rcut_per_sigma(1e-6);
  // Periodic, self (729 shifts at theta = 0.4).
  {
    const auto b = mixed_blobs(12000, 5);
    std::vector<Vec3> x = b.x;
    wrap_into_box(x);
    const Vec3 c = {0.5 * kBoxLength, 0.5 * kBoxLength, 0.5 * kBoxLength};
    const Tree t = build_tree_ref(x, b.sigma, c, 0.5 * kBoxLength, 32);
    const auto shifts = near_image_shifts(near_image_range(0.4));
    const Acceptance mac{0.4, rcut, 266};
    const Lists ref = build_lists_ref(t, t, shifts, mac);
    for (int nt : kThreadCounts) {
      omp_set_num_threads(nt);
      SCOPED_TRACE("periodic, threads " + std::to_string(nt));
      expect_same_lists(build_lists(t, t, shifts, mac), ref);
    }
  }
  // Free space, separate targets, several theta / ncrit.
  for (double theta : {0.3, 0.6}) {
    const auto b = mixed_blobs(30000, 9);
    const auto tg = testing::random_blobs(20000, -1.0, 9.0, 3, false);
    Vec3 c;
    double h;
    bounding_cube(b.x, &tg.x, c, h);
    const Tree src = build_tree_ref(b.x, b.sigma, c, h, 16);
    const Tree tgt = build_tree_ref(tg.x, {}, c, h, 40);
    const Acceptance mac{theta, rcut, 100};
    const std::vector<Vec3> zero{{0, 0, 0}};
    const Lists ref = build_lists_ref(tgt, src, zero, mac);
    const Lists ref_self = build_lists_ref(src, src, zero, mac);
    for (int nt : kThreadCounts) {
      omp_set_num_threads(nt);
      SCOPED_TRACE("free space, theta " + std::to_string(theta) + ", threads " + std::to_string(nt));
      expect_same_lists(build_lists(tgt, src, zero, mac), ref);
      expect_same_lists(build_lists(src, src, zero, mac), ref_self);
    }
  }
}

// --- P2P -------------------------------------------------------------------------------------

// Long double reference of one pair (the formula of p2p_kernel.h).
void pair_ref(const Vec3& x, const Vec3& xq, const Vec3& a, double sigma, long double u[3], long double g[3][3]) {
  const long double r[3] = {(long double)x[0] - xq[0], (long double)x[1] - xq[1], (long double)x[2] - xq[2]};
  const long double al[3] = {a[0], a[1], a[2]};
  p2p_pair<long double>(r, al, sigma, u, g);
}

TEST(FmmParallel, P2PMatchesPairFormulaOverRho) {
  // One source per call, rho = r / (sqrt(2) sigma) from 0 to 10 (through the series branch,
  // the closed form and the far branch), random directions, strengths and sigma.
  std::mt19937_64 gen(17);
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  double worst_u = 0, worst_g = 0, worst_u_old = 0, worst_g_old = 0;
  for (int k = 0; k <= 4000; ++k) {
    const double rho = 10.0 * k / 4000.0, sigma = std::exp(2 * U(gen));
    Vec3 dir = {U(gen), U(gen), U(gen)};
    const double nd = std::sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
    const Vec3 xq = {U(gen), U(gen), U(gen)}, a = {U(gen), U(gen), U(gen)};
    const double r = rho * std::sqrt(2.0) * sigma;
    const Vec3 x = {xq[0] + r * dir[0] / nd, xq[1] + r * dir[1] / nd, xq[2] + r * dir[2] / nd};
    long double ur[3] = {}, gr[3][3] = {};
    pair_ref(x, xq, a, sigma, ur, gr);
    Vec3 u{};
    Mat3 g{};
    const Vec3 zero{};
    p2p(&x, 1, 0, &xq, &a, &sigma, 1, 1, zero, false, &u, &g);
    double uo[3] = {}, go[3][3] = {};  // the previous CPU p2p: p2p_pair in double
    const double rd[3] = {x[0] - xq[0], x[1] - xq[1], x[2] - xq[2]};
    p2p_pair(rd, a.data(), sigma, uo, go);
    long double nu = 0, ng = 0, eu = 0, eg = 0, eu_old = 0, eg_old = 0;
    for (int m = 0; m < 3; ++m) {
      nu += ur[m] * ur[m];
      eu += (u[m] - ur[m]) * (u[m] - ur[m]);
      eu_old += (uo[m] - ur[m]) * (uo[m] - ur[m]);
      for (int l = 0; l < 3; ++l) {
        ng += gr[m][l] * gr[m][l];
        eg += (g[m][l] - gr[m][l]) * (g[m][l] - gr[m][l]);
        eg_old += (go[m][l] - gr[m][l]) * (go[m][l] - gr[m][l]);
      }
    }
    nu = std::max(nu, 1e-300L);  // rho = 0: u = 0 exactly (r = 0)
    worst_u = std::max(worst_u, double(std::sqrt(eu / nu)));
    worst_g = std::max(worst_g, double(std::sqrt(eg / ng)));
    worst_u_old = std::max(worst_u_old, double(std::sqrt(eu_old / nu)));
    worst_g_old = std::max(worst_g_old, double(std::sqrt(eg_old / ng)));
    ASSERT_LE(std::sqrt(eu / nu), 1e-13) << "rho = " << rho;
    ASSERT_LE(std::sqrt(eg / ng), 1e-13) << "rho = " << rho;
  }
  std::printf("p2p vs long double pair formula, rho in [0, 10]: max rel. error u %.1e, grad %.1e "
              "(previous double p2p: %.1e, %.1e)\n", worst_u, worst_g, worst_u_old, worst_g_old);
}

TEST(FmmParallel, P2PSumsWithSelfShiftAndTiles) {
  // 700 sources (several tiles), close pairs and duplicates, the self pair left out, a shift;
  // against the long double sum of the pair formula.
  std::mt19937_64 gen(23);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const int n = 700;
  std::vector<Vec3> x(n), a(n);
  std::vector<double> s(n);
  for (int i = 0; i < n; ++i) {
    for (int d = 0; d < 3; ++d) x[i][d] = U(gen), a[i][d] = U(gen) - 0.5;
    s[i] = 0.05 + 0.1 * U(gen);
  }
  x[5] = x[600];  // a duplicate: r = 0 for a pair that is not the self pair
  for (const bool periodic_image : {false, true}) {
    const Vec3 shift = periodic_image ? Vec3{1.0, 0.0, -1.0} : Vec3{0, 0, 0};
    std::vector<Vec3> u(n, Vec3{});
    std::vector<Mat3> g(n, Mat3{});
    p2p(x.data(), n, 0, x.data(), a.data(), s.data(), n, 0, shift, !periodic_image, u.data(), g.data());
    std::vector<Vec3> uref(n, Vec3{});
    std::vector<Mat3> gref(n, Mat3{});
    for (int i = 0; i < n; ++i) {
      long double ur[3] = {}, gr[3][3] = {};
      const Vec3 xi = {x[i][0] - shift[0], x[i][1] - shift[1], x[i][2] - shift[2]};
      for (int j = 0; j < n; ++j)
        if (periodic_image || i != j) pair_ref(xi, x[j], a[j], s[j], ur, gr);
      for (int m = 0; m < 3; ++m) {
        uref[i][m] = double(ur[m]);
        for (int l = 0; l < 3; ++l) gref[i][m][l] = double(gr[m][l]);
      }
    }
    EXPECT_LE(testing::rel_l2(u, uref), 1e-13);
    EXPECT_LE(testing::rel_l2(g, gref), 1e-13);
    // direct_sum (free space, self) is the same sum.
    if (!periodic_image) {
      std::vector<Vec3> ud;
      std::vector<Mat3> gd;
      direct_sum(x, a, s, x, true, ud, gd);
      EXPECT_LE(testing::rel_l2(ud, uref), 1e-13);
      EXPECT_LE(testing::rel_l2(gd, gref), 1e-13);
    }
  }
}

}  // namespace
}  // namespace vh::fmm
