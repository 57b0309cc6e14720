// fmm/m2l_fft_gpu.h: the M2L of a lattice's uniform levels by FFTs against the translations of
// its stencil one by one on the CPU (m2l of fmm/expansions.h, the far field's reference).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

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

void expect_fft_equals_direct(int N, int ncrit, double theta, int p) {
  const testing::LevelSetup s = testing::lattice_setup(N, ncrit, p, 7);
  for (int level = 2; level < static_cast<int>(s.tree.levels.size()); ++level) {
    const LevelStencil st = uniform_stencil(level, theta);
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
