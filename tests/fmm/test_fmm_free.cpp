// Free-space FMM against the O(N^2) direct sum (issue 4, "Must show" 1).
#include <gtest/gtest.h>

#include <cstdio>

#include "common.h"
#include "fmm/fmm.h"
#include "fmm/p2p.h"

namespace vh::fmm {
namespace {

#ifdef VH_FMM_LONG
constexpr int kN = 20000;
#else
constexpr int kN = 4000;
#endif

TEST(VH_FMM_SUITE(FmmFree), ErrorFallsWithOrderAgainstDirectSum) {
  // Random blobs in the unit cube, sigma ~ mean spacing; default theta (0.4), ncrit (64) and
  // tolerance (1e-6).  Errors decay roughly like theta^(p+1); issue 4 bounds at p = 10.
  const auto b = testing::random_blobs(kN, 0.0, 1.0, 11, false);
  std::vector<Vec3> ud;
  std::vector<Mat3> gd;
  direct_sum(b.x, b.alpha, b.sigma, b.x, true, ud, gd);
  const Params d = testing::reference_params();
  std::printf("free space, N = %d, theta = %g, ncrit = %d, tolerance = %g\n", kN, d.theta, d.ncrit, d.tolerance);
  std::printf("  p   rel L2 err u   rel L2 err grad u   time [s]\n");
  double prev_u = 1, prev_g = 1;
  for (int p : {4, 6, 8, 10, 12}) {
    Params prm = testing::reference_params();
    prm.p = p;
    std::vector<Vec3> u;
    std::vector<Mat3> g;
    const Timings t = evaluate_self(prm, b.x, b.alpha, b.sigma, u, g);
    const double eu = testing::rel_l2(u, ud), eg = testing::rel_l2(g, gd);
    std::printf(" %2d   %.3e      %.3e           %.3f\n", p, eu, eg, t.total);
    EXPECT_LT(eu, prev_u) << "p " << p;
    EXPECT_LT(eg, prev_g) << "p " << p;
    prev_u = eu;
    prev_g = eg;
    if (p == 10) {
      EXPECT_LE(eu, 1e-5);
      EXPECT_LE(eg, 1e-4);
    }
    EXPECT_GT(t.n_m2l, 0);
  }
}

TEST(VH_FMM_SUITE(FmmFree), SeparateTargetsAgainstDirectSum) {
  // Targets: 1500 random points plus 500 that coincide with sources (r = 0 is regular and included).
  const auto b = testing::random_blobs(kN / 2, -1.0, 2.0, 5, false);
  auto tg = testing::random_blobs(1500, -1.2, 2.4, 6, false).x;
  for (int i = 0; i < 500; ++i) tg.push_back(b.x[3 * i]);
  std::vector<Vec3> ud, u;
  std::vector<Mat3> gd, g;
  direct_sum(b.x, b.alpha, b.sigma, tg, false, ud, gd);
  evaluate_at(testing::reference_params(), b.x, b.alpha, b.sigma, tg, u, g);
  EXPECT_LE(testing::rel_l2(u, ud), 1e-5);
  EXPECT_LE(testing::rel_l2(g, gd), 1e-4);
}

}  // namespace
}  // namespace vh::fmm
