// fmm/m2l_fft_gpu.h: the M2L of a lattice's uniform levels by FFTs against the translations of
// its stencil one by one on the CPU (m2l of fmm/expansions.h, the far field's reference).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "common.h"
#include "fmm/level_stencil.h"
#include "fmm/m2l_fft_gpu.h"
#include "level_setup.h"

namespace vh::fmm {
namespace {

// max over the level's cells of |L - ref| / |ref| (all three components, all coefficients).
double worst_cell_error(const testing::LevelSetup& s, int p, int level, const std::vector<cplx>& L,
                        const std::vector<cplx>& ref) {
  const int k = 3 * ncoef(p);
  double worst = 0;
  for (int a : s.tree.levels[level]) {
    double num = 0, den = 0;
    for (int c = 0; c < k; ++c) {
      num += std::norm(L[static_cast<std::size_t>(a) * k + c] - ref[static_cast<std::size_t>(a) * k + c]);
      den += std::norm(ref[static_cast<std::size_t>(a) * k + c]);
    }
    worst = std::max(worst, std::sqrt(num / den));
  }
  return worst;
}

// rcut_leaf: the regularisation cut-off in cells of the deepest level (0: none), as the
// evaluator gives it to every level in that level's cells.
void expect_fft_equals_direct(int N, int ncrit, double theta, int p, double rcut_leaf = 0) {
  const testing::LevelSetup s = testing::lattice_setup(N, ncrit, p, 7);
  const int deepest = static_cast<int>(s.tree.levels.size()) - 1;
  for (int level = 2; level <= deepest; ++level) {
    const LevelStencil st = uniform_stencil(level, theta, rcut_leaf * std::ldexp(1.0, level - deepest));
    const std::vector<cplx> ref = testing::stencil_m2l_direct(s, p, st);
    std::vector<cplx> L(s.M.size(), cplx(0));
    M2LFftGpu fft(p, kBoxLength, st);
    fft.apply(s.M, L, level_grid(s.tree, level));
    const double e = worst_cell_error(s, p, level, L, ref);
    std::printf("N %d level %d p %d: %lld translations, worst cell error %.3g\n", N, level, p, st.translations(), e);
    // Double precision throughout: the transforms' round-off over m^3 points, relative to the
    // largest table entries, which the nearest sources give.
    EXPECT_LT(e, 1e-12) << "level " << level;
    // Cells of other levels untouched.
    for (std::size_t c = 0; c < s.tree.cells.size(); ++c) {
      if (s.tree.cells[c].level == level) continue;
      for (int k = 0; k < 3 * ncoef(p); ++k) ASSERT_EQ(L[c * 3 * ncoef(p) + k], cplx(0));
    }
  }
}

TEST(M2LFftGpu, EqualsTheStencilsTranslationsAtP10) {
  VH_NEED_GPU();
  expect_fft_equals_direct(32, 64, 0.6, 10);
}

TEST(M2LFftGpu, EqualsTheStencilsTranslationsAtP4WithFourLevels) {
  VH_NEED_GPU();
  expect_fft_equals_direct(32, 8, 0.5, 4);
}

// With the cut-off of tolerance 1e-4 at σ = h on 4³-point leaves (1.15 leaf sides, the vortex
// deck's): more offsets stay near on the deeper levels, and the parities still share 27 tables.
TEST(M2LFftGpu, EqualsTheStencilsTranslationsWithTheCutOff) {
  VH_NEED_GPU();
  expect_fft_equals_direct(32, 64, 0.6, 8, 1.15);
}

// Windows of parent planes (issue 25: a rank's targets): the transforms over e < m planes in z,
// not periodic, give the cells of the window's planes the whole level's sums and touch no other
// cell; windows that wrap around the box included, and the whole level's operator restricted to
// a window. Level 4 of a 32^3 lattice (m = 8 parent planes; at theta 0.6 the stencil reaches two
// parent planes either way, so e = 5, 6, 7 hold windows of 1, 2, 3 planes).
TEST(M2LFftGpu, WindowsOfParentPlanesEqualTheStencilsTranslations) {
  VH_NEED_GPU();
  const int p = 6, level = 4, m = 8;
  const testing::LevelSetup s = testing::lattice_setup(32, 8, p, 7);
  ASSERT_EQ(static_cast<int>(s.tree.levels.size()) - 1, level);
  const LevelStencil st = uniform_stencil(level, 0.6, 1.15);
  const ParentReach r = parent_z_reach(st);
  ASSERT_EQ(r.lo, -2);
  ASSERT_EQ(r.hi, 2);
  EXPECT_EQ(m2l_fft_window_extent(level, r, 1), 5);
  EXPECT_EQ(m2l_fft_window_extent(level, r, 3), 7);
  EXPECT_EQ(m2l_fft_window_extent(level, r, 4), m);  // 8 planes are the whole level's
  EXPECT_LT(m2l_fft_bytes(level, p, false, 5), 0.7 * m2l_fft_bytes(level, p, false));
  const std::vector<cplx> ref = testing::stencil_m2l_direct(s, p, st);
  const std::vector<int> grid = level_grid(s.tree, level);
  const int k = 3 * ncoef(p), n = 2 * m;
  for (const int e : {5, 6, 7, m}) {
    M2LFftGpu fft(p, kBoxLength, st, e);
    EXPECT_EQ(fft.planes(), e == m ? m : e - 4);
    for (const int z0 : {0, 3, m - 1}) {
      for (const int nz : {1, std::min(fft.planes(), 3)}) {
        std::vector<cplx> L(s.M.size(), cplx(0));
        fft.apply(s.M, L, grid, z0, nz);
        double worst = 0;
        int inside = 0;
        for (int g = 0; g < n * n * n; ++g) {
          const std::size_t a = static_cast<std::size_t>(grid[g]);
          const int pz = g / (n * n) / 2;
          if ((pz - z0 + m) % m < nz) {
            ++inside;
            double num = 0, den = 0;
            for (int c = 0; c < k; ++c) {
              num += std::norm(L[a * k + c] - ref[a * k + c]);
              den += std::norm(ref[a * k + c]);
            }
            worst = std::max(worst, std::sqrt(num / den));
          } else {
            for (int c = 0; c < k; ++c) ASSERT_EQ(L[a * k + c], cplx(0)) << "e " << e << " z0 " << z0 << " cell " << a;
          }
        }
        EXPECT_EQ(inside, nz * 2 * n * n);
        std::printf("extent %d, planes %d + %d: worst cell error %.3g\n", e, z0, nz, worst);
        EXPECT_LT(worst, 1e-12) << "e " << e << " z0 " << z0 << " nz " << nz;
      }
    }
  }
  EXPECT_THROW(M2LFftGpu(p, kBoxLength, st, 4), std::invalid_argument);  // its window would wrap
  EXPECT_THROW(M2LFftGpu(p, kBoxLength, st, m + 1), std::invalid_argument);
  M2LFftGpu w(p, kBoxLength, st, 6);
  std::vector<cplx> L(s.M.size(), cplx(0));
  EXPECT_THROW(w.apply(s.M, L, grid, 0, 3), std::invalid_argument);
  EXPECT_THROW(w.apply(s.M, L, grid, m, 1), std::invalid_argument);
}

// The 64 (target, source parity) pairs share one table a parity difference because the rule
// makes their offsets the same (level_stencil.h); a stencil that breaks it is refused, not
// summed into a wrong table. Parity 0 loses an offset that parity 1 keeps (the same x parity
// difference, 0).
TEST(M2LFftGpu, RefusesAStencilWhoseParitiesDisagree) {
  VH_NEED_GPU();
  LevelStencil st = uniform_stencil(3, 0.6);
  auto& o = st.offsets[0];
  const auto it = std::find_if(o.begin(), o.end(), [](const std::array<int, 3>& t) { return t[0] % 2 == 0; });
  ASSERT_NE(it, o.end());
  o.erase(it);
  EXPECT_THROW(M2LFftGpu(4, kBoxLength, st), std::logic_error);
}

// The contraction's threads (no GPU needed): every (target parity, output) of every order taken by
// exactly one thread of a block of at most 1 024, and, where the outputs go by degree (p <= 13),
// every warp's outputs of one degree (a warp runs as long as its lowest degree's sums).
TEST(M2LFftGpu, ContractionThreadsTakeEveryOutputOnceAWarpOneDegree) {
  for (int p = 1; p <= 14; ++p) {
    const int threads = m2l_fft_contract_threads(p);
    ASSERT_LE(threads, 1024) << "p " << p;
    ASSERT_EQ(threads % 32, 0) << "p " << p;
    EXPECT_EQ(m2l_fft_by_degree(p), p <= 13) << "p " << p;
    std::vector<int> taken(8 * ncoef(p), 0);
    for (int w = 0; w < threads / 32; ++w) {
      int degree = -1;
      bool one_degree = true;
      for (int t = 32 * w; t < 32 * w + 32; ++t) {
        int ct, l, m;
        m2l_fft_contract_slot(p, t, ct, l, m);
        if (ct == 8) continue;
        ASSERT_TRUE(ct >= 0 && ct < 8 && l >= 0 && l <= p && m >= 0 && m <= l) << "p " << p << " thread " << t;
        ++taken[ct * ncoef(p) + cidx(l, m)];
        one_degree = one_degree && (degree < 0 || degree == l);
        degree = l;
      }
      if (m2l_fft_by_degree(p)) {
        EXPECT_TRUE(one_degree) << "p " << p << " warp " << w;
      }
    }
    for (std::size_t k = 0; k < taken.size(); ++k) EXPECT_EQ(taken[k], 1) << "p " << p << " output " << k;
  }
}

TEST(M2LFftGpu, RefusesLevelsAndOrdersItCannotHold) {
  VH_NEED_GPU();
  LevelStencil st;
  st.level = 1;
  EXPECT_THROW(M2LFftGpu(10, kBoxLength, st), std::invalid_argument);
  st.level = 3;
  EXPECT_THROW(M2LFftGpu(15, kBoxLength, st), std::invalid_argument);
}

}  // namespace
}  // namespace vh::fmm
