// fmm/level_stencil.h: the uniform-level stencil partitions the pairs of cells with the near
// field and the coarser levels, and the grid of a lattice's level names every cell once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "fmm/expansion_rows.h"
#include "fmm/level_stencil.h"
#include "level_setup.h"

namespace vh::fmm {
namespace {

// The header's test written out: full cells of side 1, 2 (sqrt(3)/2) < theta |t| and the
// boxes' gap at least rcut, the boxes apart by |t_d| - 1 + slack along each axis with t_d != 0.
bool far_cells(const std::array<int, 3>& t, double theta, double rcut, double slack = 0) {
  double gap2 = 0;
  for (int d = 0; d < 3; ++d) gap2 += t[d] == 0 ? 0.0 : std::pow(std::abs(t[d]) - 1 + slack, 2);
  const double r = std::sqrt(double(t[0]) * t[0] + double(t[1]) * t[1] + double(t[2]) * t[2]);
  return std::sqrt(3.0) < theta * r && std::sqrt(gap2) >= rcut;
}

// Every pair of leaves that the rule makes far at theta, rcut and the slack of a lattice of q
// points a leaf side (points at 0 .. q - 1 of q, in leaves / q) has its closest points at least
// rcut apart, counted point by point over the offsets |t_d| <= reach.
void expect_far_pairs_beyond_the_cut_off(int q, double theta, double rcut, int reach) {
  const double slack = 1.0 / q;
  for (int x = -reach; x <= reach; ++x)
    for (int y = -reach; y <= reach; ++y)
      for (int z = -reach; z <= reach; ++z) {
        const std::array<int, 3> t{x, y, z};
        if (!uniform_far(t, theta, rcut, slack)) continue;
        double d2 = 1e300;  // the closest points of leaf 0 and leaf t, in leaves
        for (int a = 0; a < q * q * q; ++a)
          for (int b = 0; b < q * q * q; ++b) {
            const int pa[3] = {a % q, a / q % q, a / (q * q)}, pb[3] = {b % q, b / q % q, b / (q * q)};
            double e2 = 0;
            for (int d = 0; d < 3; ++d) e2 += std::pow(double(q * t[d] + pb[d] - pa[d]) / q, 2);
            d2 = std::min(d2, e2);
          }
        EXPECT_GE(std::sqrt(d2), rcut * (1 - 1e-12)) << "q " << q << " t " << x << " " << y << " " << z;
      }
}

TEST(LevelStencil, EverySourceCellIsNearTakenHereOrTakenAbove) {
  // A target of parity c and a source at offset t (cells of the level): either the pair is
  // near (not far: the next level down or the P2P), or this level's stencil takes it, or its
  // parents are far (a coarser level took it): exactly one, for every t, images included.
  for (double slack : {0.0, 1.0 / 3, 1.0})
    for (double rcut : {0.0, 0.9, 2.5})
      for (double theta : {0.4, 0.5, 0.6, 0.8}) {
        const LevelStencil st = uniform_stencil(5, theta, rcut, slack);
        const int R = 3 * static_cast<int>(std::ceil(2 * std::sqrt(3.0) / theta + rcut));
        for (int c = 0; c < 8; ++c) {
          const int cv[3] = {c & 1, (c >> 1) & 1, c >> 2};
          long long taken = 0;
          for (int x = -R; x <= R; ++x)
            for (int y = -R; y <= R; ++y)
              for (int z = -R; z <= R; ++z) {
                const std::array<int, 3> t{x, y, z};
                std::array<int, 3> T;
                for (int d = 0; d < 3; ++d) T[d] = static_cast<int>(std::floor((cv[d] + t[d]) / 2.0));
                const bool here = std::binary_search(st.offsets[c].begin(), st.offsets[c].end(), t);
                ASSERT_EQ(
                    int(!far_cells(t, theta, rcut, slack)) + int(here) + int(far_cells(T, theta, rcut / 2, slack / 2)),
                    1)
                    << "slack " << slack << " rcut " << rcut << " theta " << theta << " parity " << c << " t " << x
                    << " " << y << " " << z;
                taken += here;
              }
          EXPECT_EQ(taken, static_cast<long long>(st.offsets[c].size()));
        }
        // The near stencil: every offset of the box that is not far, itself included.
        const auto near = near_stencil(theta, rcut, slack);
        long long n_near = 0;
        int z_reach = 0;
        for (int x = -R; x <= R; ++x)
          for (int y = -R; y <= R; ++y)
            for (int z = -R; z <= R; ++z) {
              const std::array<int, 3> t{x, y, z};
              const bool in = std::binary_search(near.begin(), near.end(), t);
              ASSERT_EQ(in, !far_cells(t, theta, rcut, slack)) << "near: slack " << slack << " rcut " << rcut;
              n_near += in;
              if (in) z_reach = std::max(z_reach, std::abs(z));
            }
        EXPECT_EQ(n_near, static_cast<long long>(near.size()));
        EXPECT_EQ(near_z_reach(theta, rcut, slack), z_reach) << "slack " << slack << " rcut " << rcut;
      }
  EXPECT_EQ(near_stencil(0.6, 0).size(), 93u);  // |t|^2 <= 8: the leaves of the dual traversal's near field
  // The level's translations: n^3 / 8 times the entries of the eight parities.
  const LevelStencil st = uniform_stencil(6, 0.6);
  long long e = 0;
  for (const auto& o : st.offsets) e += static_cast<long long>(o.size());
  EXPECT_EQ(st.translations(), e * 64 * 64 * 64 / 8);
}

// The slack on the vortex solver's lattice of 3 points a leaf side (points at 0, h, 2h of a
// leaf [0, 3h); the margins 0 below and h above: slack h, a third of a leaf): every pair of
// leaves the slack makes far has its closest points at least the cut-off apart (counted point
// by point), and with the deck's cut-off (tolerance 1e-4: 4.59 h) the near leaves fall from 117
// to the 93 of theta alone.
TEST(LevelStencil, TheSlackOfALatticeKeepsEveryFarPairBeyondTheCutOff) {
  const double rcut = 4.59 / 3;  // in leaves
  const auto near0 = near_stencil(0.6, rcut), near1 = near_stencil(0.6, rcut, 1.0 / 3);
  EXPECT_EQ(near0.size(), 117u);
  EXPECT_EQ(near1.size(), 93u);
  EXPECT_EQ(near1, near_stencil(0.6, 0));
  expect_far_pairs_beyond_the_cut_off(3, 0.6, rcut, 4);
}

// The lattice of 4 points a leaf side (N = 2^k at refine 1: points at 0 .. 3h of a leaf [0, 4h),
// slack h, a quarter of a leaf): with the deck's cut-off the near leaves are those of theta alone,
// 93, 81, 57 and 33 at theta 0.6, 0.7, 0.75 and 0.8 (sc09_256.ini takes 0.8: bench/RESULTS.md,
// 2026-12-03 "theta 0.8 and p 13 on the lattice"), and at 0.8 every far pair's closest points are
// at least the cut-off apart (point by point). Without the slack the cut-off keeps 81 from 0.7 up.
TEST(LevelStencil, TheSlackOfLeavesOfFourPointsLetsThetaSetTheNearField) {
  const double rcut = 4.59 / 4, slack = 0.25;  // in leaves
  const double thetas[] = {0.6, 0.7, 0.75, 0.8};
  const std::size_t expect[] = {93, 81, 57, 33};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(near_stencil(thetas[i], rcut, slack).size(), expect[i]) << "theta " << thetas[i];
    EXPECT_EQ(near_stencil(thetas[i], rcut, slack), near_stencil(thetas[i], 0)) << "theta " << thetas[i];
  }
  EXPECT_EQ(near_stencil(0.8, rcut).size(), 81u);
  expect_far_pairs_beyond_the_cut_off(4, 0.8, rcut, 3);
}

TEST(LevelStencil, TheGridNamesEveryCellOnce) {
  const testing::LevelSetup s = testing::lattice_setup(16, 8, 4, 2);
  const std::vector<int> g = level_grid(s.tree, 3);
  ASSERT_EQ(g.size(), 512u);
  const double side = kBoxLength / 8;
  for (int iz = 0; iz < 8; ++iz)
    for (int iy = 0; iy < 8; ++iy)
      for (int ix = 0; ix < 8; ++ix) {
        const Cell& C = s.tree.cells[g[(iz * 8 + iy) * 8 + ix]];
        EXPECT_EQ(C.level, 3);
        EXPECT_NEAR(C.center[0], (ix + 0.5) * side, 1e-12);
        EXPECT_NEAR(C.center[1], (iy + 0.5) * side, 1e-12);
        EXPECT_NEAR(C.center[2], (iz + 0.5) * side, 1e-12);
      }
  EXPECT_TRUE(level_grid(s.tree, 4).empty());  // no such level
}

// A lattice of N points a side keeps every cell of the uniform depth a leaf: the most points a
// cell of that level holds, counted axis by axis (points i h, h = 2π/N, in cell floor(i h / s)),
// one more a side for points moved across a face, stays within uniform_leaf_limit, for every N
// from 16 to 420 (the weak-scaling lattices 322 and 406 among them) and ncrit 64 to 256; and all
// the points in one cell exceed it.
TEST(LevelStencil, TheUniformDepthsLeavesHoldALatticeOfAnySize) {
  EXPECT_EQ(uniform_depth(322.0 * 322 * 322, 128), 6);
  EXPECT_EQ(uniform_leaf_limit(322.0 * 322 * 322, 128), 1018);  // 8 x 322^3 / 8^6 = 1018.9
  EXPECT_EQ(uniform_leaf_limit(256.0 * 256 * 256, 128), 512);
  EXPECT_EQ(uniform_leaf_limit(10, 128), 128);  // level 0 with fewer than ncrit / 8 points: ncrit
  for (int ncrit : {64, 128, 256})
    for (int N = 16; N <= 420; ++N) {
      const double n = double(N) * N * N;
      const int cells = 1 << uniform_depth(n, ncrit);
      const double h = kBoxLength / N, s = kBoxLength / cells;
      std::vector<int> count(cells, 0);
      for (int i = 0; i < N; ++i) ++count[std::min(cells - 1, static_cast<int>(std::floor(i * h / s)))];
      const int most = *std::max_element(count.begin(), count.end()) + 1;
      EXPECT_LE(most * most * most, uniform_leaf_limit(n, ncrit)) << "N " << N << ", ncrit " << ncrit;
      EXPECT_GT(n, uniform_leaf_limit(n, ncrit)) << "N " << N << ", ncrit " << ncrit;
    }
}

// A window of target parent planes (fmm/m2l_fft_gpu.h) reads the source parent planes
// [z0 + lo, z0 + nz + hi): every offset of every parity, its target child in either z half of
// its parent, lands there (floor division of negative offsets included), and lo and hi are
// reached. The stencils of theta 0.5 to 0.8 with the cut-offs the deck's lattices give (0 to 2.3
// leaf sides at the deepest level) reach 3 parent planes either way at 0.5, 2 above.
TEST(LevelStencil, AWindowsSourcesLieWithinTheParentReach) {
  for (double theta : {0.5, 0.6, 0.8})
    for (double rcut : {0.0, 1.15, 2.3})
      for (int level = 2; level <= 7; ++level) {
        const LevelStencil st = uniform_stencil(level, theta, rcut * std::ldexp(1.0, level - 7));
        const ParentReach r = parent_z_reach(st);
        EXPECT_EQ(r.hi, theta < 0.6 ? 3 : 2) << theta << " " << rcut << " " << level;
        EXPECT_EQ(r.lo, -r.hi) << theta << " " << rcut << " " << level;
        bool lo = false, hi = false;
        for (int c = 0; c < 8; ++c)
          for (const auto& t : st.offsets[c]) {
            const int child = (c >> 2) + t[2];  // from the target's parent's lower child plane
            const int T = static_cast<int>(std::floor(child / 2.0));
            EXPECT_GE(T, r.lo);
            EXPECT_LE(T, r.hi);
            lo = lo || T == r.lo;
            hi = hi || T == r.hi;
          }
        EXPECT_TRUE(lo && hi);
      }
}

// The windows' z extent: the planes with the reach, up to a length of factors 2, 3, 5 and 7 (the
// transforms' sizes), the whole level where that is not less; and the bytes of a rank's windows
// on R > 1 against the whole levels: at 256³ on 4 ranks (64 lattice planes a rank and one of
// drift either way, under up to 10 of level 6's 32 parent planes of 8, 14 with the reach) about
// 14/32 of them.
TEST(LevelStencil, TheWindowsExtentAndBytes) {
  const ParentReach r{-2, 2};
  EXPECT_EQ(m2l_fft_window_extent(6, r, 8), 12);
  EXPECT_EQ(m2l_fft_window_extent(6, r, 9), 14);   // 13 is prime
  EXPECT_EQ(m2l_fft_window_extent(6, r, 28), 32);  // 32: the whole level
  EXPECT_EQ(m2l_fft_window_extent(7, r, 19), 24);  // 23 is prime
  EXPECT_EQ(m2l_fft_window_extent(3, r, 1), 4);
  EXPECT_EQ(m2l_fft_bytes(6, 10, false, 32), m2l_fft_bytes(6, 10, false));
  EXPECT_DOUBLE_EQ(m2l_fft_bytes(6, 10, false, 8), m2l_fft_bytes(6, 10, false) / 4);
  const double rcut = 1.15;
  double whole = m2l_fft_bytes(6, 13, true);
  for (int l = 2; l < 6; ++l) whole += m2l_fft_bytes(l, 13, false);
  EXPECT_DOUBLE_EQ(m2l_fft_set_bytes(6, 13, 0.8, rcut, 256, 1), whole);
  const double four = m2l_fft_set_bytes(6, 13, 0.8, rcut, 256, 4);
  EXPECT_NEAR(four / whole, 14.0 / 32, 0.03);
  EXPECT_LT(m2l_fft_set_bytes(6, 13, 0.8, rcut, 256, 8), four);
}

// The cells whose expansions a rank keeps, as the memory estimate counts them, at 256³ (level 6)
// on 4 ranks (θ 0.8, every level's stencil reaching 2 parent planes either way): a rank's 64
// lattice planes and 2 of drift are 10 parent planes of 8 at level 6, 6 of 16 at level 5, so its
// windows are 2 (10 + 4) = 28 of level 6's 64 planes and 2 (6 + 4) = 20 of level 5's 32; levels
// 4 (2 (4 + 4) = 16 of 16) and below whole: 9 + 64 + 512 + 4 096 + 20 · 4⁵ + 28 · 4⁶ cells.
TEST(LevelStencil, TheExpansionCellsOfARanksWindows) {
  const double rcut = 1.15;
  EXPECT_DOUBLE_EQ(uniform_expansion_cells(6, 0.8, rcut, 256, 1), static_cast<double>(level_offset(7)));
  EXPECT_DOUBLE_EQ(uniform_expansion_cells(6, 0.8, rcut, 256, 4), 9 + 64 + 512 + 4096 + 20 * 1024 + 28 * 4096);
  // Fewer with more ranks, never fewer than a rank's own planes of each level.
  double last = level_offset(7);
  for (int R : {2, 3, 4, 8, 16, 32, 64}) {
    const double kept = uniform_expansion_cells(6, 0.8, rcut, 256, R);
    EXPECT_LE(kept, last) << R;
    EXPECT_GE(kept, static_cast<double>(level_offset(7)) / R) << R;
    last = kept;
  }
}

// fmm/expansion_rows.h: a rank keeps the expansions of the levels below `from` and of its
// windows' planes, numbered in cell order. The tree of a 16³ lattice (ncrit 8: levels 0 .. 3,
// complete), windows across the box's top face (level 2: planes 3, 0; level 3: 6, 7, 0, 1):
// 9 cells of levels 0 and 1, 2 planes of 16 cells, 4 of 64, each cell once and in order.
TEST(ExpansionRows, TheLevelsBelowWholeAndTheWindowsPlanes) {
  std::vector<Vec3> x;
  const double h = kBoxLength / 16;
  for (int k = 0; k < 16; ++k)
    for (int j = 0; j < 16; ++j)
      for (int i = 0; i < 16; ++i) x.push_back({(i + 0.5) * h, (j + 0.5) * h, (k + 0.5) * h});
  const double half = kBoxLength / 2;
  const Tree t = build_tree(x, std::vector<double>(x.size(), h), {half, half, half}, half, 8, TreeBuild{true, false});
  ASSERT_EQ(t.cells.size(), 1u + 8 + 64 + 512);
  std::vector<int> level, plane;
  for (const Cell& c : t.cells) {
    level.push_back(c.level);
    plane.push_back(cell_plane(c.center[2], c.level, 0.0, kBoxLength));
  }
  const std::vector<PlaneWindow> w{{0, 1}, {0, 2}, {3, 2}, {6, 4}};
  std::vector<int> rows;
  const int n = expansion_rows(level, plane, 2, w, rows);
  EXPECT_EQ(n, 9 + 2 * 16 + 4 * 64);
  int next = 0;
  for (std::size_t c = 0; c < rows.size(); ++c) {
    // The window written out: the planes (cz / side) of the cell's level.
    const int z = static_cast<int>(std::floor(t.cells[c].center[2] / (kBoxLength / (1 << level[c]))));
    const bool kept = level[c] < 2 || (level[c] == 2 && (z == 3 || z == 0)) || (level[c] == 3 && (z >= 6 || z <= 1));
    EXPECT_EQ(rows[c], kept ? next : -1) << "cell " << c << " level " << level[c] << " plane " << z;
    if (kept) ++next;
  }
  // Below `from` the rows are the cells' indices; from past the last level, every cell is kept.
  for (int c = 0; c < 9; ++c) EXPECT_EQ(rows[c], c);
  EXPECT_EQ(expansion_rows(level, plane, 4, w, rows), static_cast<int>(t.cells.size()));
}

}  // namespace
}  // namespace vh::fmm
