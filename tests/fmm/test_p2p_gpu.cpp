// GPU near field (fmm/p2p_gpu) against the CPU reference on the same trees and lists.
// Tolerances (issue 5): relative L2 of u <= 1e-5 and of grad u <= 1e-4 in single precision
// (float kernel and sums over ~1e3 pairs: a few 1e-7 per pair, growing like sqrt(pairs) in the
// sums; grad has more cancellation), <= 1e-10 for both in double (round-off only).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common.h"
#include "fmm/p2p.h"
#include "fmm/p2p_gpu.h"
#include "fmm/p2p_kernel.h"
#include "fmm/particles_gpu.h"
#include "fmm/periodic.h"
#include "fmm/traverse.h"
#include "fmm/tree.h"

namespace vh::fmm {
namespace {

using testing::Blobs;
using testing::random_blobs;
using testing::rel_l2;

struct Tol {
  double u, g;
};
Tol tolerance(GpuPrecision p) { return p == GpuPrecision::fp64 ? Tol{1e-10, 1e-10} : Tol{1e-5, 1e-4}; }
const char* name(GpuPrecision p) {
  return p == GpuPrecision::fp32 ? "fp32" : p == GpuPrecision::fp32_ieee ? "fp32_ieee" : "fp64";
}

// One tree of the blobs (self), its lists and the CPU P2P over them (as fmm.cpp sums the near
// field), in sorted order.
struct Case {
  Tree tree;
  std::vector<Vec3> shifts, as;
  std::vector<double> ss;
  Lists lists;
  std::vector<Vec3> u;
  std::vector<Mat3> g;
};

Case make_case(const Blobs& b, bool periodic, int ncrit, double theta, double tol) {
  Case c;
  const double half = 0.5 * kBoxLength;
  c.tree = build_tree(b.x, b.sigma, Vec3{half, half, half}, half, ncrit);
  const int n = static_cast<int>(b.x.size());
  c.as.resize(n);
  c.ss.resize(n);
  for (int i = 0; i < n; ++i) {
    c.as[i] = b.alpha[c.tree.perm[i]];
    c.ss[i] = b.sigma[c.tree.perm[i]];
  }
  c.shifts = periodic ? near_image_shifts(near_image_range(theta)) : std::vector<Vec3>{{0, 0, 0}};
  c.lists = build_lists(c.tree, c.tree, c.shifts,
                        Acceptance{theta, rcut_per_sigma(tol), 266});
  c.u.assign(n, Vec3{});
  c.g.assign(n, Mat3{});
  const Tree& t = c.tree;
  for (std::size_t ci = 0; ci < t.cells.size(); ++ci) {
    const Cell& A = t.cells[ci];
    for (const Interaction& in : c.lists.p2p[ci]) {
      const Cell& B = t.cells[in.source];
      p2p(&t.x[A.begin], A.end - A.begin, A.begin, &t.x[B.begin], &c.as[B.begin], &c.ss[B.begin], B.end - B.begin,
          B.begin, c.shifts[in.shift], in.shift == 0, &c.u[A.begin], &c.g[A.begin]);
    }
  }
  return c;
}

struct P2PParam {
  bool periodic;
  int ncrit;
  GpuPrecision prec;
};

class GpuP2P : public ::testing::TestWithParam<P2PParam> {};

TEST_P(GpuP2P, MatchesCpuOnSameLists) {
  VH_NEED_GPU();
  const P2PParam prm = GetParam();
  // Random blobs (not a lattice: leaves of every size, close pairs that take the small-rho
  // series), sigma = (0.8..1.2) h, fresh seed per case.
  const Blobs b = random_blobs(4000, 0.0, kBoxLength, 17 + prm.ncrit + 3 * prm.periodic, true);
  const Case c = make_case(b, prm.periodic, prm.ncrit, 0.4, 1e-6);
  const P2PLists fl = flatten_p2p_lists(c.tree, c.tree, c.lists, c.shifts, true);
  ASSERT_GT(fl.pairs(), 0);
  std::vector<Vec3> u;
  std::vector<Mat3> g;
  p2p_gpu(fl, {}, c.tree.x, c.as, c.ss, u, g, prm.prec);
  ASSERT_EQ(u.size(), c.u.size());
  for (const auto& v : u)
    for (double e : v) ASSERT_TRUE(std::isfinite(e));
  const double eu = rel_l2(u, c.u), eg = rel_l2(g, c.g);
  const Tol tol = tolerance(prm.prec);
  RecordProperty("err_u", std::to_string(eu));
  RecordProperty("err_grad", std::to_string(eg));
  std::printf("[ %s %s ncrit %d ] pairs %lld  err u %.3e  err grad %.3e\n", name(prm.prec),
              prm.periodic ? "periodic" : "free", prm.ncrit, fl.pairs(), eu, eg);
  EXPECT_LE(eu, tol.u);
  EXPECT_LE(eg, tol.g);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, GpuP2P,
    ::testing::Values(P2PParam{false, 64, GpuPrecision::fp32}, P2PParam{false, 64, GpuPrecision::fp32_ieee},
                      P2PParam{false, 64, GpuPrecision::fp64}, P2PParam{false, 12, GpuPrecision::fp32},
                      P2PParam{false, 12, GpuPrecision::fp64}, P2PParam{true, 64, GpuPrecision::fp32},
                      P2PParam{true, 40, GpuPrecision::fp32_ieee}, P2PParam{true, 40, GpuPrecision::fp64}),
    [](const ::testing::TestParamInfo<P2PParam>& i) {
      return std::string(i.param.periodic ? "periodic" : "free") + "_ncrit" + std::to_string(i.param.ncrit) + "_" +
             name(i.param.prec);
    });

// Lattices whose leaves hold 27 or 125 particles (24 and 20 points a side: leaves of 3^3 and
// 5^3, as the vortex solver's lattices of 3 2^k and 5 2^k points a side make): list entries
// that end in partly filled tiles of 32 sources, tasks of 27 targets, the self pair at r = 0
// in every leaf.  The vortex deck's acceptance (theta 0.6, tolerance 1e-4).
TEST(GpuP2P, LatticesWithLeavesOf27And125) {
  for (const auto& [side, ncrit, leaf] : {std::array<int, 3>{24, 32, 27}, std::array<int, 3>{20, 128, 125}}) {
    const Blobs b = testing::lattice_blobs(side, 0.0, 7 + side);
    const Case c = make_case(b, true, ncrit, 0.6, 1e-4);
    const P2PLists fl = flatten_p2p_lists(c.tree, c.tree, c.lists, c.shifts, true);
    for (std::size_t l = 0; l < fl.leaf_begin.size(); ++l) ASSERT_EQ(fl.leaf_end[l] - fl.leaf_begin[l], leaf) << l;
    std::printf("[ lattice %d^3, leaves of %d ] pairs a particle %.1f, entries a leaf %.1f\n", side, leaf,
                static_cast<double>(fl.pairs()) / b.x.size(),
                static_cast<double>(fl.offset.back()) / fl.leaf_begin.size());
    VH_NEED_GPU();
    for (GpuPrecision p : {GpuPrecision::fp32, GpuPrecision::fp64}) {
      std::vector<Vec3> u;
      std::vector<Mat3> g;
      p2p_gpu(fl, {}, c.tree.x, c.as, c.ss, u, g, p);
      const double eu = rel_l2(u, c.u), eg = rel_l2(g, c.g);
      std::printf("[ %s lattice %d^3 ] err u %.3e  err grad %.3e\n", name(p), side, eu, eg);
      EXPECT_LE(eu, tolerance(p).u) << side << " " << name(p);
      EXPECT_LE(eg, tolerance(p).g) << side << " " << name(p);
    }
  }
}

// The resident object: repeated runs give the same bits; new strengths replace the old ones
// (alpha x 2 is exact in binary, and the sums are linear in alpha: u x 2 exactly).
TEST(GpuP2PResident, RepeatableAndLinearInStrength) {
  VH_NEED_GPU();
  const Blobs b = random_blobs(3000, 0.0, kBoxLength, 99, true);
  const Case c = make_case(b, true, 32, 0.4, 1e-6);
  P2PGpu gpu(flatten_p2p_lists(c.tree, c.tree, c.lists, c.shifts, true));
  EXPECT_EQ(gpu.n_targets(), 3000);
  gpu.set_sources(c.tree.x, c.as, c.ss);
  std::vector<Vec3> u1, u2, u3;
  std::vector<Mat3> g1, g2, g3;
  gpu.run();
  gpu.get(u1, g1);
  EXPECT_GT(gpu.run(), 0.0);
  gpu.get(u2, g2);
  EXPECT_EQ(u1, u2);
  EXPECT_EQ(g1, g2);
  std::vector<Vec3> a2 = c.as;
  for (auto& a : a2)
    for (double& e : a) e *= 2;
  gpu.set_sources(c.tree.x, a2, c.ss);
  gpu.run();
  gpu.get(u3, g3);
  for (std::size_t i = 0; i < u1.size(); ++i)
    for (int m = 0; m < 3; ++m) {
      ASSERT_EQ(u3[i][m], 2 * u1[i][m]) << i;
      for (int k = 0; k < 3; ++k) ASSERT_EQ(g3[i][m][k], 2 * g1[i][m][k]) << i;
    }
  EXPECT_LE(rel_l2(u1, c.u), 1e-5);
}

// O(N^2) GPU direct sum against fmm::direct_sum at the sources (self pairs left out).
TEST(GpuDirect, MatchesCpuDirectSum) {
  VH_NEED_GPU();
  const Blobs b = random_blobs(3000, -1.0, 2.0, 5, false);
  std::vector<Vec3> uc;
  std::vector<Mat3> gc;
  direct_sum(b.x, b.alpha, b.sigma, b.x, true, uc, gc);
  for (GpuPrecision p : {GpuPrecision::fp32, GpuPrecision::fp32_ieee, GpuPrecision::fp64}) {
    std::vector<Vec3> u;
    std::vector<Mat3> g;
    direct_sum_gpu(b.x, b.alpha, b.sigma, u, g, p);
    const double eu = rel_l2(u, uc), eg = rel_l2(g, gc);
    std::printf("[ direct %s ] err u %.3e  err grad %.3e\n", name(p), eu, eg);
    EXPECT_LE(eu, tolerance(p).u) << name(p);
    EXPECT_LE(eg, tolerance(p).g) << name(p);
  }
}

// Separate targets (no pair left out, r = 0 allowed): direct lists with self = false.
TEST(GpuDirect, SeparateTargets) {
  VH_NEED_GPU();
  const Blobs b = random_blobs(2500, 0.0, 1.0, 8, false);
  Blobs t = random_blobs(777, 0.0, 1.0, 9, false);
  t.x[3] = b.x[10];  // a target on a blob: r = 0, the series limit
  std::vector<Vec3> uc, u;
  std::vector<Mat3> gc, g;
  direct_sum(b.x, b.alpha, b.sigma, t.x, false, uc, gc);
  for (GpuPrecision p : {GpuPrecision::fp32, GpuPrecision::fp64}) {
    P2PGpu gpu(direct_lists(777, 2500, false), p);
    gpu.set_sources(b.x, b.alpha, b.sigma);
    gpu.set_targets(t.x);
    gpu.run();
    gpu.get(u, g);
    EXPECT_LE(rel_l2(u, uc), tolerance(p).u) << name(p);
    EXPECT_LE(rel_l2(g, gc), tolerance(p).g) << name(p);
  }
}

// The single-precision near field's singular cut (p2p_singular_rho2): at its bound both radial
// factors of a pair, g (u) and F/3 (grad u), are within a tenth of the tolerance of the singular
// kernel's, and just inside it one of them is not (kernel_gF, erf - ce, against the bisection's
// erfc + ce); beyond far_rho2 it is clamped; double and tolerance 0 keep the round-off bounds.
TEST(GpuP2PSingular, BoundIsWhereTheKernelIsSingularToATenthOfTheTolerance) {
  auto deviation = [](double rho2) {
    double g, F;
    kernel_gF(std::sqrt(rho2), rho2, g, F);
    return std::max(1 - g, 1 - F / 3);
  };
  for (double tol : {1e-3, 1e-4, 1e-5}) {
    const double rho2 = p2p_singular_rho2(GpuPrecision::fp32, tol);
    EXPECT_EQ(p2p_singular_rho2(GpuPrecision::fp32_ieee, tol), rho2);
    EXPECT_LT(rho2, far_rho2<float>()) << tol;
    EXPECT_LE(deviation(rho2), tol / 10 * (1 + 1e-9)) << tol;
    EXPECT_GT(deviation(rho2 * (1 - 1e-6)), tol / 10) << tol;
  }
  EXPECT_EQ(p2p_singular_rho2(GpuPrecision::fp32, 1e-6), far_rho2<float>());  // 1 - F/3 = 1.2e-7 there
  EXPECT_EQ(p2p_singular_rho2(GpuPrecision::fp32, 0), far_rho2<float>());
  EXPECT_EQ(p2p_singular_rho2(GpuPrecision::fp64, 1e-3), far_rho2<double>());
}

// The cut on the GPU: the single-precision direct sum with tolerance 1e-2 equals, to single
// precision, a double sum on the host that takes g = 1, F = 3 beyond the bound and p2p_pair's
// factors within it; that sum differs from the exact one by five times more (so the GPU takes
// the cut: at tolerance 1e-3 the bias of u, 7.9e-7, was within single precision's 9.6e-7) and
// by at most a tenth of the tolerance (each pair's factors are within it).
TEST(GpuP2PSingular, PairsBeyondTheBoundTakeTheSingularKernel) {
  VH_NEED_GPU();
  const Blobs b = random_blobs(3000, 0.0, 1.0, 17, false);
  const double tol = 1e-2, cut = p2p_singular_rho2(GpuPrecision::fp32, tol);
  const int n = static_cast<int>(b.x.size());
  std::vector<Vec3> uc, ux, ug;
  std::vector<Mat3> gc(n), gx, gg;
  uc.assign(n, Vec3{});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (j == i) continue;
      const double r[3] = {b.x[i][0] - b.x[j][0], b.x[i][1] - b.x[j][1], b.x[i][2] - b.x[j][2]};
      const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2], s = b.sigma[j];
      double G, F5;
      if (r2 / (2 * s * s) > cut) {
        G = 1 / (kFourPi * r2 * std::sqrt(r2));
        F5 = 3 * G / r2;
      } else {
        kernel_radial(r2, s, G, F5);
      }
      const Vec3& a = b.alpha[j];
      const double c[3] = {a[1] * r[2] - a[2] * r[1], a[2] * r[0] - a[0] * r[2], a[0] * r[1] - a[1] * r[0]};
      for (int m = 0; m < 3; ++m) {
        uc[i][m] += G * c[m];
        for (int k = 0; k < 3; ++k) gc[i][m][k] -= F5 * r[k] * c[m];
      }
      gc[i][0][1] -= G * a[2], gc[i][0][2] += G * a[1], gc[i][1][0] += G * a[2];
      gc[i][1][2] -= G * a[0], gc[i][2][0] -= G * a[1], gc[i][2][1] += G * a[0];
    }
  direct_sum(b.x, b.alpha, b.sigma, b.x, true, ux, gx);
  P2PGpu gpu(direct_lists(n, n, true), GpuPrecision::fp32, tol);
  gpu.set_sources(b.x, b.alpha, b.sigma);
  gpu.run();
  gpu.get(ug, gg);
  const double eu = rel_l2(ug, uc), eg = rel_l2(gg, gc), bu = rel_l2(uc, ux), bg = rel_l2(gc, gx);
  std::printf(
      "[ singular beyond rho^2 = %.3f ] GPU - host with the cut: u %.3e grad %.3e; cut - exact: u %.3e grad %.3e\n",
      cut, eu, eg, bu, bg);
  EXPECT_LE(eu, tolerance(GpuPrecision::fp32).u);
  EXPECT_LE(eg, tolerance(GpuPrecision::fp32).g);
  EXPECT_GT(bu, 5 * eu);
  EXPECT_GT(bg, 5 * eg);
  EXPECT_LE(bu, tol / 10);
  EXPECT_LE(bg, tol / 10);
}

TEST(GpuP2PResident, RejectsBadInput) {
  VH_NEED_GPU();
  P2PLists l = direct_lists(10, 10, true);
  l.src_shift[0] = 3;  // no such shift
  EXPECT_THROW(P2PGpu{l}, std::invalid_argument);
  P2PGpu ok(direct_lists(10, 10, true));
  std::vector<Vec3> x(5), a(5);
  std::vector<double> s(5, 1.0);
  EXPECT_THROW(ok.set_sources(x, a, s), std::invalid_argument);  // lists use 10 sources
}

// The tree's GPU key sort (fmm/sort_gpu.h) and the all-GPU sort of the sources
// (fmm/particles_gpu.h: keys, sort, wrap and gathers on the device, the host splitting the cells
// by the downloaded keys and the device measuring them) against the CPU: the same permutation,
// ties included (positions repeated four times, which only a stable sort orders the same way),
// the same sorted positions, and the same cells bit for bit (boxes, radii, sigma_max, links).
// Periodic: wrapped positions (some outside the box) as the FMM builds them; free space: a
// clustered cloud with negative coordinates in its bounding cube (uneven depth, big and small
// cells, so both the one-chunk and the many-chunk cells of the extents kernel are exercised).
void expect_same_cells(const Tree& gpu, const Tree& cpu, const std::string& what) {
  ASSERT_EQ(gpu.cells.size(), cpu.cells.size()) << what;
  for (std::size_t k = 0; k < cpu.cells.size(); ++k) {
    const Cell &g = gpu.cells[k], &c = cpu.cells[k];
    EXPECT_TRUE(g.begin == c.begin && g.end == c.end && g.child == c.child && g.nchild == c.nchild &&
                g.level == c.level && g.parent == c.parent && g.half == c.half && g.center == c.center)
        << what << ": cell " << k << " structure";
    EXPECT_TRUE(g.bmin == c.bmin && g.bmax == c.bmax && g.radius == c.radius && g.sigma_max == c.sigma_max)
        << what << ": cell " << k << " extents (radius " << g.radius << " vs " << c.radius << ")";
  }
  EXPECT_EQ(gpu.levels, cpu.levels) << what;
}

// The device's permutation, sorted positions and core radii against the CPU tree's.
void expect_same_sorting(const SortedSourcesGpu& sorted, const Tree& cpu, const std::string& what) {
  std::vector<int> ps;
  std::vector<Vec3> xs;
  std::vector<double> ss;
  sorted.download_sorted(ps, xs, ss);
  EXPECT_EQ(ps, cpu.perm) << what;
  EXPECT_EQ(xs, cpu.x) << what;
  EXPECT_EQ(ss, cpu.sigma) << what;
}

TEST(TreeSortGpu, SameTreeAsTheCpuSort) {
  VH_NEED_GPU();
  Blobs b = random_blobs(30000, -1.0, 2 * kBoxLength, 7, false);
  for (int r = 1; r < 4; ++r)
    for (int i = 0; i < 30000; ++i) {
      b.x.push_back(b.x[i]);
      b.sigma.push_back(b.sigma[i]);
    }
  const double half = 0.5 * kBoxLength;
  const Vec3 c{half, half, half};
  std::vector<Vec3> alpha(b.x.size(), Vec3{1, 2, 3});
  for (int ncrit : {8, 64}) {
    const std::string what = "periodic, ncrit " + std::to_string(ncrit);
    const Tree cpu = build_tree(b.x, b.sigma, c, half, ncrit, TreeBuild{true, false});
    const Tree gpu_sort = build_tree(b.x, b.sigma, c, half, ncrit, TreeBuild{true, true});
    EXPECT_EQ(gpu_sort.perm, cpu.perm) << what;
    EXPECT_EQ(gpu_sort.x, cpu.x) << what;
    EXPECT_EQ(gpu_sort.sigma, cpu.sigma) << what;
    expect_same_cells(gpu_sort, cpu, what + ", GPU key sort");
    // Keys, sort and gathers all on the device.
    SortedSourcesGpu sorted(b.x, b.sigma, alpha, c, half, true);
    const Tree gpu_all = sorted.tree(ncrit);
    EXPECT_TRUE(gpu_all.perm.empty() && gpu_all.x.empty() && gpu_all.sigma.empty()) << what;
    EXPECT_EQ(gpu_all.size(), cpu.size()) << what;
    expect_same_sorting(sorted, cpu, what);
    expect_same_cells(gpu_all, cpu, what + ", all on the GPU");
  }
  // Free space: three Gaussian clusters of very different widths, one tight enough for deep
  // cells, and a uniform background; 2e5 points so that the top cells span many chunks.
  std::mt19937_64 gen(11);
  std::normal_distribution<double> N01(0.0, 1.0);
  std::uniform_real_distribution<double> U(-3.0, 2.0);
  std::vector<Vec3> x;
  std::vector<double> sigma;
  const Vec3 centres[3] = {{-2.0, 0.5, 1.0}, {1.0, -1.5, -0.5}, {0.3, 0.3, 0.3}};
  const double widths[3] = {0.5, 0.05, 1e-3};
  for (int i = 0; i < 200000; ++i) {
    Vec3 p;
    const int k = i % 4;
    for (int d = 0; d < 3; ++d) p[d] = k < 3 ? centres[k][d] + widths[k] * N01(gen) : U(gen);
    x.push_back(p);
    sigma.push_back(0.01 * (1.0 + 0.5 * std::abs(N01(gen))));
  }
  Vec3 fc;
  double fh;
  bounding_cube(x, nullptr, fc, fh);
  std::vector<Vec3> ones(x.size(), Vec3{1, 0, 0});
  for (int ncrit : {1, 16, 200}) {
    const std::string what = "free space, ncrit " + std::to_string(ncrit);
    const Tree cpu = build_tree(x, sigma, fc, fh, ncrit);
    SortedSourcesGpu sorted(x, sigma, ones, fc, fh, false);
    const Tree gpu = sorted.tree(ncrit);
    expect_same_sorting(sorted, cpu, what);
    expect_same_cells(gpu, cpu, what);
  }
}

}  // namespace
}  // namespace vh::fmm
