// A blob's 1-D weights (vortex/blobs_kernel.h): the run recurrence that the GPU gather stages its
// weights with (two exponentials a run of points instead of one a point) against the closed form
// `weight`, over the cores and positions the solvers use.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "vortex/blobs_kernel.h"

namespace vh::vortex::blob {
namespace {

// Runs of 8 points (a tile of the gather) from every start inside the cut-off, for cores 0.6 h …
// 2.5 h and random positions. Each step multiplies w by r and r by q, each rounded, and the
// exponentials round their arguments: r's |(2δh + h²)/2σ²| ≤ cutoff h/σ + h²/2σ² ≈ 11 and q's
// h²/σ² ≈ 2.8 for the narrowest core, so after k ≤ 7 steps the relative error is of order
// ε (k 11 + k²/2 2.8 + 2 · 18) ≈ 2e-14, a few times that with exp's own rounding, largest at the
// cut-off's tail (measured: 7.5e-14 for σ = 0.6 h at δ ≈ 5.9 σ, 2.3e-14 for σ ≥ 1.5 h): the
// bound is 1e-13, which the GPU sums' test (relative L2 1e-13 against the CPU) can afford. A
// wrong q (exp(−h²/2σ²), say) is off from the third point on, by up to 5e12 over these runs.
TEST(BlobKernel, WeightRunEqualsTheClosedForm) {
  const double h = 2 * kPi / 64, cutoff = 6;
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> U(0, 2 * kPi);
  double worst = 0, worst_first = 0;
  int points = 0;
  for (const double core_h : {0.6, 1.0, 1.5, 2.5}) {
    const Core c = core(core_h * h, cutoff);
    const double q = weight_run_q(c, h);
    for (int trial = 0; trial < 200; ++trial) {
      const double x = U(gen);
      const int i0 = stencil_start(x, c.R, h);
      for (int a = 0; inside(offset(i0 + a, h, x), c); ++a) {
        WeightRun run(offset(i0 + a, h, x), c, h, q);
        for (int k = 0; k < 8 && inside(offset(i0 + a + k, h, x), c); ++k, run.next()) {
          double w, dw;
          weight(offset(i0 + a + k, h, x), c, w, dw);
          const double e = std::abs(run.w - w) / w;
          (k == 0 ? worst_first : worst) = std::max(k == 0 ? worst_first : worst, e);
          ++points;
        }
      }
    }
  }
  std::printf("WeightRun against weight: %d points, worst relative difference %.2e (first points %.2e)\n", points,
              worst, worst_first);
  EXPECT_EQ(worst_first, 0.0);  // the run's first point is the closed form itself
  EXPECT_LE(worst, 1e-13);
  EXPECT_GT(points, 20000);
}

TEST(BlobKernel, SlopeIsTheDerivativeOfTheWeight) {
  const double h = 0.1, sigma = 1.3 * h;
  const Core c = core(sigma, 6);
  for (const double delta : {-0.5, -0.13, 0.0, 0.07, 0.6}) {
    double w, dw, wp, wm, unused;
    weight(delta, c, w, dw);
    const double e = 1e-6;
    weight(delta + e, c, wp, unused);
    weight(delta - e, c, wm, unused);
    // ∂w/∂x_i with δ = x_i − x_p: the centred difference in δ, O(e²) ≈ 1e-12 relative
    EXPECT_NEAR(dw, (wp - wm) / (2 * e), 1e-8 * c.norm / sigma) << delta;
    EXPECT_EQ(slope(delta, c, w), dw);
  }
}

}  // namespace
}  // namespace vh::vortex::blob
