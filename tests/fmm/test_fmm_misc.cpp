// Single-blob handover, invariances, thread independence, parameters (issue 4, "Must show" 3-5).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <stdexcept>

#include "common.h"
#include "fmm/fmm.h"
#include "fmm/morton.h"
#include "fmm/p2p_kernel.h"
#include "fmm/periodic.h"
#include "fmm/traverse.h"

namespace vh::fmm {
namespace {

TEST(FmmBlob, FarFieldHandsOverWithoutJump) {
  // One blob; 3000 targets on three rays at r = 0.1 sigma ... 20 sigma (geometric spacing).
  // Targets closer than rcut = sqrt(2) rho_tol sigma are P2P by construction: exact to 1e-12.
  // Beyond, a target may get the far field: its error is 1 - g(rho) <= tolerance = 1e-6 plus
  // the expansion truncation, ~((R_A + R_B) / d)^(p+1) <= theta^25 < 3e-8 at p = 24, so no
  // jump larger than 2e-6 anywhere (the default p = 10 bounds it by ~1e-3 for a lone source).
  const double sigma = 0.05;
  const Vec3 x0 = {0.3, -0.2, 0.1}, a = {0.4, -0.9, 0.3};
  const Vec3 dirs[3] = {{1, 0, 0}, {0.36, 0.48, 0.8}, {-0.6, 0.0, -0.8}};
  std::vector<Vec3> tg;
  std::vector<double> dist;
  for (const auto& d : dirs)
    for (int i = 0; i < 1000; ++i) {
      const double r = 0.1 * sigma * std::pow(200.0, i / 999.0);
      tg.push_back({x0[0] + r * d[0], x0[1] + r * d[1], x0[2] + r * d[2]});
      dist.push_back(r);
    }
  Params prm = testing::reference_params();
  prm.ncrit = 4;
  prm.p = 24;
  prm.p2p_max_pairs = 0;  // no far pair replaced by P2P: exercise the expansions
  std::vector<Vec3> u;
  std::vector<Mat3> g;
  const Timings t = evaluate_at(prm, {x0}, {a}, {sigma}, tg, u, g);
  ASSERT_GT(t.n_m2l, 0) << "the far-field branch was not exercised";
  ASSERT_GT(t.n_p2p_pairs, 0);
  const double rcut = rcut_per_sigma(prm.tolerance) * sigma;
  int n_near = 0;
  double max_near = 0, max_far = 0;
  for (std::size_t i = 0; i < tg.size(); ++i) {
    const double r[3] = {tg[i][0] - x0[0], tg[i][1] - x0[1], tg[i][2] - x0[2]};
    double ue[3] = {}, ge[3][3] = {};
    p2p_pair(r, a.data(), sigma, ue, ge);  // closed form (checked against quadrature in test_kernel)
    const double nu = std::sqrt(ue[0] * ue[0] + ue[1] * ue[1] + ue[2] * ue[2]);
    const double err = std::sqrt(std::pow(u[i][0] - ue[0], 2) + std::pow(u[i][1] - ue[1], 2) +
                                 std::pow(u[i][2] - ue[2], 2)) / nu;
    (dist[i] < rcut ? max_near : max_far) = std::max(dist[i] < rcut ? max_near : max_far, err);
    if (dist[i] < rcut) {
      ++n_near;
      EXPECT_LE(err, 1e-12) << "r/sigma = " << dist[i] / sigma;
    } else {
      EXPECT_LE(err, 2e-6) << "r/sigma = " << dist[i] / sigma;
    }
  }
  EXPECT_GT(n_near, 100);
  std::printf("single blob: rcut = %.2f sigma, max rel. error below rcut %.2e, beyond %.2e\n", rcut / sigma,
              max_near, max_far);
}

testing::Blobs periodic_blobs(int n, unsigned seed) {
  // Zero total strength, as any periodic vorticity field has.
  return testing::random_blobs(n, 0.0, kBoxLength, seed, true);
}

TEST(FmmInvariance, PermutationOfParticles) {
  for (bool periodic : {false, true}) {
    const auto b = periodic_blobs(3000, 21);
    std::vector<int> perm(b.x.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), std::mt19937(5));
    testing::Blobs q = b;
    for (std::size_t i = 0; i < perm.size(); ++i) {
      q.x[i] = b.x[perm[i]];
      q.alpha[i] = b.alpha[perm[i]];
      q.sigma[i] = b.sigma[perm[i]];
    }
    Params prm = testing::reference_params();
    prm.periodic = periodic;
    std::vector<Vec3> u0, u1, u1b(perm.size());
    std::vector<Mat3> g0, g1, g1b(perm.size());
    evaluate_self(prm, b.x, b.alpha, b.sigma, u0, g0);
    evaluate_self(prm, q.x, q.alpha, q.sigma, u1, g1);
    for (std::size_t i = 0; i < perm.size(); ++i) {
      u1b[perm[i]] = u1[i];
      g1b[perm[i]] = g1[i];
    }
    // Same tree, same lists; only the order of sums inside a leaf pair changes: round-off.
    EXPECT_LE(testing::rel_l2(u1b, u0), 1e-12) << "periodic " << periodic;
    EXPECT_LE(testing::rel_l2(g1b, g0), 1e-12) << "periodic " << periodic;
  }
}

// The periodic field of the blobs b and of the same blobs at the positions `moved`: the
// relative L2 differences of u (du) and grad u (dg).
void periodic_difference(const testing::Blobs& b, const std::vector<Vec3>& moved, double& du, double& dg) {
  Params prm = testing::reference_params();
  prm.periodic = true;
  std::vector<Vec3> u0, u1;
  std::vector<Mat3> g0, g1;
  evaluate_self(prm, b.x, b.alpha, b.sigma, u0, g0);
  evaluate_self(prm, moved, b.alpha, b.sigma, u1, g1);
  du = testing::rel_l2(u1, u0);
  dg = testing::rel_l2(g1, g0);
}

TEST(FmmInvariance, PeriodicTranslation) {
  // Translating all particles (and wrapping) moves the field with them; the two evaluations see
  // different trees, so they agree to the FMM error (~1e-5 for u, 1e-4 for grad u, each).
  const auto b = periodic_blobs(3000, 33);
  auto moved = b.x;
  const Vec3 v = {1.2345, -2.71828, 5.5};
  for (auto& x : moved)
    for (int d = 0; d < 3; ++d) x[d] += v[d];
  wrap_into_box(moved);
  double du, dg;
  periodic_difference(b, moved, du, dg);
  EXPECT_LE(du, 2e-5);
  EXPECT_LE(dg, 2e-4);
}

TEST(FmmInvariance, WrapsParticlesOutsideTheBox) {
  // Periodic mode wraps positions into [0, 2 pi)^3: shifting particles by whole periods changes
  // nothing but the round-off of the wrapped coordinates (~1e-15 relative in positions).
  const auto b = periodic_blobs(2000, 8);
  auto out = b.x;
  for (std::size_t i = 0; i < out.size(); ++i) out[i][i % 3] += (i % 2 ? 1 : -2) * kBoxLength;
  double du, dg;
  periodic_difference(b, out, du, dg);
  EXPECT_LE(du, 1e-12);
  EXPECT_LE(dg, 1e-12);
}

TEST(FmmInvariance, OneAndTwoThreadsAgree) {
  // Lists are built serially and every target cell sums its list in a fixed order, so the
  // result does not depend on the thread count (bitwise in practice; 1e-13 required).
  const auto b = periodic_blobs(3000, 44);
  Params prm = testing::reference_params();
  prm.periodic = true;
  std::vector<Vec3> u1, u2;
  std::vector<Mat3> g1, g2;
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  evaluate_self(prm, b.x, b.alpha, b.sigma, u1, g1);
  omp_set_num_threads(2);
  evaluate_self(prm, b.x, b.alpha, b.sigma, u2, g2);
  omp_set_num_threads(saved);
  EXPECT_LE(testing::rel_l2(u2, u1), 1e-13);
  EXPECT_LE(testing::rel_l2(g2, g1), 1e-13);
}

// The vortex solver's lattice (points i h, h = 2 pi / n) on the faces of the octree's cells:
// each face point falls into the cell above (morton::kFaceNudge), so that a lattice of m 2^k
// points a side fills every leaf of side m h with m points a side, whatever m.  Without the
// nudge, x scale rounded below the whole number i 2^21 / n put some face points of 3 2^k and
// 5 2^k lattices into the cell below: at n = 192, 32 of the 64 leaf columns held 2 or 4 points.
TEST(FmmTree, LatticePointsOnCellFacesFallIntoTheCellAbove) {
  const double lo[3] = {0, 0, 0}, scale = std::ldexp(1.0, morton::kBits) / kBoxLength;
  for (int m : {3, 4, 5})
    for (int level = 1; level <= 8; ++level) {
      const int n = m << level;
      const double h = kBoxLength / n;
      std::vector<int> count(1 << level, 0);
      for (int i = 0; i < n; ++i) {
        const double x[3] = {i * h, 0, 0};
        const std::uint64_t k = morton::key(x, lo, scale);
        long long c = 0;  // the x bits of the key
        for (int b = 0; b < morton::kBits; ++b) c |= static_cast<long long>((k >> (3 * b)) & 1) << b;
        ++count[c >> (morton::kBits - level)];
      }
      for (int leaf = 0; leaf < (1 << level); ++leaf) ASSERT_EQ(count[leaf], m) << "n " << n << " leaf " << leaf;
    }
  // A whole 3D tree of the 24^3 face lattice: 512 leaves of 27.
  const int n = 24;
  const double h = kBoxLength / n;
  std::vector<Vec3> x;
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) x.push_back({i * h, j * h, k * h});
  const std::vector<double> sigma(x.size(), h);
  const Tree t = build_tree(x, sigma, Vec3{kBoxLength / 2, kBoxLength / 2, kBoxLength / 2}, kBoxLength / 2, 32);
  int leaves = 0;
  for (const Cell& c : t.cells)
    if (c.leaf()) {
      ++leaves;
      EXPECT_EQ(c.end - c.begin, 27);
    }
  EXPECT_EQ(leaves, 512);
}

TEST(FmmParams, BadParametersThrow) {
  const std::vector<Vec3> x = {{0.1, 0.2, 0.3}, {0.5, 0.5, 0.5}}, a = {{1, 0, 0}, {0, 1, 0}};
  const std::vector<double> s = {0.1, 0.1};
  std::vector<Vec3> u;
  std::vector<Mat3> g;
  auto expect_bad = [&](const Params& prm, const std::vector<Vec3>& xx, const std::vector<double>& ss) {
    EXPECT_THROW(evaluate_self(prm, xx, a, ss, u, g), std::invalid_argument);
  };
  Params prm;
  prm.p = 0;
  expect_bad(prm, x, s);
  prm.p = 31;
  expect_bad(prm, x, s);
  prm = Params{};
  for (double th : {0.0, 1.0, -0.5, 1.5, std::nan("")}) {
    prm.theta = th;
    expect_bad(prm, x, s);
  }
  prm = Params{};
  prm.ncrit = 0;
  expect_bad(prm, x, s);
  prm = Params{};
  prm.images = -1;
  expect_bad(prm, x, s);
  prm = Params{};
  prm.tolerance = 0;
  expect_bad(prm, x, s);
  prm = Params{};
  prm.p2p_max_pairs = -2;
  expect_bad(prm, x, s);
  prm = Params{};
  auto xn = x;
  xn[1][2] = std::nan("");
  expect_bad(prm, xn, s);
  expect_bad(prm, x, {0.1, 0.0});
  expect_bad(prm, x, {-0.1, 0.1});
  expect_bad(prm, x, {0.1});
  EXPECT_THROW(evaluate_at(prm, x, a, s, xn, u, g), std::invalid_argument);
  // the message names the parameter
  try {
    Params bad;
    bad.p = 40;
    bad.validate();
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("p = 40"), std::string::npos) << e.what();
  }
  EXPECT_THROW(prm.set("nosuch", "1"), std::invalid_argument);
  EXPECT_THROW(prm.set("p", "ten"), std::invalid_argument);
  EXPECT_THROW(prm.set("theta", "0.5x"), std::invalid_argument);
  EXPECT_THROW(prm.set("periodic", "maybe"), std::invalid_argument);
}

// p, ncrit and theta default to auto and come from the measured table by tolerance; explicit
// values win; "auto" is a deck value.
TEST(FmmParams, AutoSettingsFollowTheTolerance) {
  const auto& t = auto_settings();
  ASSERT_GE(t.size(), 3u);
  for (std::size_t i = 0; i + 1 < t.size(); ++i) EXPECT_GT(t[i].tolerance, t[i + 1].tolerance);
  for (const auto& row : t) {
    EXPECT_LE(row.err_u, row.tolerance);
    Params prm;
    prm.tolerance = row.tolerance;
    const Params r = prm.resolved();
    EXPECT_EQ(r.p, row.p);
    EXPECT_EQ(r.ncrit, row.ncrit);
    EXPECT_EQ(r.theta, row.theta);
  }
  Params prm;
  prm.tolerance = 2e-4;  // between 1e-3 and 1e-4: the 1e-4 row
  EXPECT_EQ(prm.resolved().p, t[1].p);
  prm.tolerance = 1e-12;  // tighter than the table: its last row
  EXPECT_EQ(prm.resolved().p, t.back().p);
  prm.p = 7;
  prm.set("theta", "0.45");
  const Params r = prm.resolved();
  EXPECT_EQ(r.p, 7);
  EXPECT_EQ(r.theta, 0.45);
  EXPECT_EQ(r.ncrit, t.back().ncrit);
  prm.set("p", "auto");
  EXPECT_EQ(prm.p, -1);
}

TEST(FmmParams, TableDescribesEveryParameter) {
  const auto table = describe_params();
  ASSERT_EQ(table.size(), 9u);
  Params p;
  p.p = 3;
  p.ncrit = 7;
  p.theta = 0.9;
  p.images = 1;
  p.tolerance = 0.01;
  p.periodic = true;
  p.p2p_max_pairs = 5;
  p.precision = "double";
  p.m2l = "fft";
  for (const auto& e : table) {
    EXPECT_FALSE(e.help.empty()) << e.key;
    p.set(e.key, e.default_value);
  }
  const Params d;
  EXPECT_EQ(p.p, d.p);
  EXPECT_EQ(p.ncrit, d.ncrit);
  EXPECT_EQ(p.theta, d.theta);
  EXPECT_EQ(p.images, d.images);
  EXPECT_EQ(p.tolerance, d.tolerance);
  EXPECT_EQ(p.periodic, d.periodic);
  EXPECT_EQ(p.p2p_max_pairs, d.p2p_max_pairs);
  EXPECT_EQ(p.precision, d.precision);
  EXPECT_EQ(p.m2l, d.m2l);
}

// fmm.m2l takes lists (the default) or fft, on any back end (the CPU path ignores it).
TEST(FmmParams, M2lTakesListsOrFft) {
  Params p;
  EXPECT_EQ(p.m2l, "lists");
  p.set("m2l", "fft");
  EXPECT_EQ(p.m2l, "fft");
  EXPECT_EQ(p.resolved().m2l, "fft");
  EXPECT_NO_THROW(p.validate());
  EXPECT_THROW(p.set("m2l", "FFT"), std::invalid_argument);
  p.m2l = "direct";
  EXPECT_THROW(p.validate(), std::invalid_argument);
}

// fmm.precision takes single/double/auto (auto: single down to tolerance 1e-5, double below);
// use_gpu is not a deck key and needs a CUDA build.
TEST(FmmParams, PrecisionAndGpu) {
  Params p;
  EXPECT_EQ(p.precision, "auto");
  p.tolerance = 1e-4;
  EXPECT_EQ(p.resolved().precision, "single");
  p.tolerance = 1e-6;
  EXPECT_EQ(p.resolved().precision, "double");
  EXPECT_FALSE(p.use_gpu);
  p.set("precision", "double");
  EXPECT_EQ(p.precision, "double");
  EXPECT_THROW(p.set("precision", "half"), std::invalid_argument);
  EXPECT_THROW(p.set("use_gpu", "true"), std::invalid_argument);
  p.precision = "quad";
  EXPECT_THROW(p.validate(), std::invalid_argument);
  p.precision = "single";
  p.use_gpu = true;
#ifdef VH_FMM_HAVE_CUDA
  EXPECT_NO_THROW(p.validate());
#else
  try {
    p.validate();
    ADD_FAILURE() << "use_gpu without CUDA must throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
  }
  std::vector<Vec3> u;
  std::vector<Mat3> g;
  EXPECT_THROW(evaluate_self(p, {{1, 1, 1}}, {{1, 0, 0}}, {0.1}, u, g), std::invalid_argument);
#endif
}

TEST(FmmParams, EmptyInputs) {
  std::vector<Vec3> u;
  std::vector<Mat3> g;
  Params prm;
  EXPECT_NO_THROW(evaluate_self(prm, {}, {}, {}, u, g));
  EXPECT_TRUE(u.empty());
  prm.periodic = true;
  EXPECT_NO_THROW(evaluate_at(prm, {{1, 1, 1}}, {{1, 0, 0}}, {0.1}, {}, u, g));
  EXPECT_NO_THROW(evaluate_at(prm, {}, {}, {}, {{1, 1, 1}}, u, g));
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0][0], 0.0);
}

}  // namespace
}  // namespace vh::fmm
