// The whole FMM on the GPU (Params::use_gpu: P2P in the working precision, P2M, M2M, M2L, L2L
// and L2P in double) against the CPU FMM on the same inputs: the trees and lists are the same
// code, so the difference is round-off.  Tolerances (issue 5): relative L2 of u <= 1e-5 and of
// grad u <= 1e-4 in single precision, <= 1e-10 in double; and the GPU periodic field against the
// exact spectral sum of tests/fmm/spectral_reference.h at 64^3 lattice particles (u <= 3e-5,
// grad u <= 3e-4).  Skipped without a GPU, except the list-merging check, which runs on the host.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/cuda_check.h"
#include "base/device_buffer.h"
#include "common.h"
#include "spectral_reference.h"
#include "fmm/dgemm_gpu.h"
#include "fmm/fmm.h"
#include "fmm/p2p_gpu.h"
#include "fmm/periodic.h"
#include "fmm/traverse.h"
#include "fmm/tree.h"

namespace vh::fmm {
namespace {

using testing::Blobs;
using testing::random_blobs;
using testing::rel_l2;

// n^3 lattice in [0, 2 pi)^3 (cell centres), displaced by up to +-0.1 h, sigma = h, alpha
// random with zero mean (the lattice case of the vortex solver, not its exact field).
Blobs lattice(int n, unsigned seed) { return testing::lattice_blobs(n, 0.1, seed); }

struct Case {
  const char* name;
  bool periodic;
  const char* precision;
};

Timings compare(const Blobs& b, const Case& c, bool at_targets, Params cpu = Params{}) {
  cpu.periodic = c.periodic;
  Params gpu = cpu;
  gpu.use_gpu = true;
  gpu.precision = c.precision;
  std::vector<Vec3> uc, ug;
  std::vector<Mat3> gc, gg;
  Timings tc, tg;
  if (at_targets) {
    // Targets: the first half of the blobs, shifted by a quarter spacing (no pair left out).
    std::vector<Vec3> t(b.x.begin(), b.x.begin() + b.x.size() / 2);
    for (auto& x : t) x[0] += 0.25 * b.sigma[0];
    tc = evaluate_at(cpu, b.x, b.alpha, b.sigma, t, uc, gc);
    tg = evaluate_at(gpu, b.x, b.alpha, b.sigma, t, ug, gg);
  } else {
    tc = evaluate_self(cpu, b.x, b.alpha, b.sigma, uc, gc);
    tg = evaluate_self(gpu, b.x, b.alpha, b.sigma, ug, gg);
  }
  EXPECT_EQ(ug.size(), uc.size());
  EXPECT_EQ(gg.size(), gc.size());
  if (ug.size() != uc.size() || gg.size() != gc.size()) return tg;
  EXPECT_EQ(tg.n_p2p_pairs, tc.n_p2p_pairs);  // same lists, same pairs
  EXPECT_EQ(tg.n_m2l, tc.n_m2l);
  const double eu = rel_l2(ug, uc), eg = rel_l2(gg, gc);
  const bool dbl = std::string(c.precision) == "double";
  std::printf("[ %s%s %s ] N %zu pairs %lld  err u %.3e  err grad %.3e  cpu %.3f s (p2p %.3f)  gpu %.3f s (p2p %.3f)\n",
              c.name, at_targets ? " at targets" : "", c.precision, b.x.size(), tg.n_p2p_pairs, eu, eg, tc.total,
              tc.p2p, tg.total, tg.p2p);
  EXPECT_LE(eu, dbl ? 1e-10 : 1e-5);
  EXPECT_LE(eg, dbl ? 1e-10 : 1e-4);
  return tg;
}

// Every far-field stage over orders and tree depths: in double the GPU must equal the CPU to
// round-off (1e-10 is ~1e5 ulp of slack for sums of ~1e4 terms).  ncrit = 8 makes deep trees
// (many M2M/L2L levels, small leaves), p = 2 the smallest order with a Hessian.
TEST(FmmGpu, FarFieldOrdersAndDepthsDouble) {
  VH_NEED_GPU();
  for (int p : {2, 6, 10, 16}) {
    Params prm;
    prm.p = p;
    prm.ncrit = 8;
    prm.p2p_max_pairs = 0;  // every accepted pair through M2L: the far field does the work
    const std::string name = "p = " + std::to_string(p);
    compare(lattice(12, 20 + p), {name.c_str(), true, "double"}, false, prm);
    compare(random_blobs(3000, 0.0, 1.0, 40 + p, false), {name.c_str(), false, "double"}, false, prm);
  }
}

// 64^3 lattice particles, alpha = omega h^3 of a random solenoidal omega, sigma = h, and the
// exact spectral field at the particles.
struct SpectralCase {
  std::vector<Vec3> x, alpha, u_ref;
  std::vector<double> sigma;
  std::vector<Mat3> g_ref;
};
const SpectralCase& spectral_case64() {
  static const SpectralCase c = [] {
    SpectralCase c;
    const int n = 64;
    const double h = kBoxLength / n;
    testing::lattice_blobs(n, testing::random_solenoidal(n, 7), c.x, c.alpha);
    c.sigma.assign(c.x.size(), h);
    testing::spectral_velocity(n, h, c.alpha, c.u_ref, c.g_ref);
    return c;
  }();
  return c;
}

// Every row of the fmm.tolerance table delivers its tolerance on the GPU (default precision).
TEST(FmmGpu, AutoSettingsMeetTheirTolerance) {
  VH_NEED_GPU();
  const auto& c = spectral_case64();
  for (const auto& row : auto_settings()) {
    Params prm;
    prm.periodic = true;
    prm.use_gpu = true;
    prm.tolerance = row.tolerance;
    std::vector<Vec3> u;
    std::vector<Mat3> g;
    const Timings t = evaluate_at(prm, c.x, c.alpha, c.sigma, c.x, u, g);
    const double eu = rel_l2(u, c.u_ref), eg = rel_l2(g, c.g_ref);
    std::printf("[ auto tolerance %.0e: theta %.2f p %d ncrit %d ] err u %.3e  err grad %.3e  GPU stages %.4f s, total %.3f s\n",
                row.tolerance, row.theta, row.p, row.ncrit, eu, eg, t.p2m_m2m + t.m2l + t.l2l_l2p + t.p2p, t.total);
    EXPECT_LE(eu, row.tolerance);
  }
}

// ... and off the lattice, where the vortex solver's particles are between reinitialisations:
// the same case with every coordinate moved by up to +-0.05 h and +-0.5 h, against a tight FMM
// (theta 0.25, p 16, double; on the lattice it is within 4e-9 of the spectral sum, bench/
// RESULTS.md). On the lattice alone theta 0.6, p 10 passes 1e-4; here it gives ~2e-4.
TEST(FmmGpu, AutoSettingsMeetTheirToleranceOffTheLattice) {
  VH_NEED_GPU();
  const auto& c = spectral_case64();
  const double h = kBoxLength / 64;
  for (double jitter : {0.05, 0.5}) {
    std::vector<Vec3> x = c.x;
    std::mt19937_64 gen(11);
    std::uniform_real_distribution<double> U(-jitter * h, jitter * h);
    for (auto& p : x)
      for (int d = 0; d < 3; ++d) p[d] += U(gen);
    Params tight;
    tight.periodic = true;
    tight.use_gpu = true;
    tight.p = 16;
    tight.theta = 0.25;
    tight.ncrit = 64;
    tight.tolerance = 1e-10;
    tight.precision = "double";
    std::vector<Vec3> ur, u;
    std::vector<Mat3> gr, g;
    evaluate_at(tight, x, c.alpha, c.sigma, x, ur, gr);
    for (const auto& row : auto_settings()) {
      Params prm;
      prm.periodic = true;
      prm.use_gpu = true;
      prm.tolerance = row.tolerance;
      evaluate_at(prm, x, c.alpha, c.sigma, x, u, g);
      const double eu = rel_l2(u, ur);
      std::printf("[ off the lattice by %.2f h, auto tolerance %.0e ] err u %.3e  err grad %.3e\n", jitter,
                  row.tolerance, eu, rel_l2(g, gr));
      EXPECT_LE(eu, row.tolerance);
    }
  }
}

// GPU periodic field against the exact spectral sum (issue 5): 64^3 lattice particles,
// alpha = omega h^3 for a random solenoidal omega, sigma = h, p = 10, images = 5, single precision
// near field; targets given at the particles (the reference is the smooth regularised field,
// which includes each blob's own contribution to grad u).
TEST(FmmGpu, PeriodicAgainstSpectral64) {
  VH_NEED_GPU();
  const auto& c = spectral_case64();
  std::vector<Vec3> u;
  std::vector<Mat3> g;
  Params prm;
  prm.periodic = true;
  prm.p = 10;
  prm.theta = 0.4;
  prm.ncrit = 64;
  prm.images = 5;
  prm.use_gpu = true;
  prm.precision = "single";
  const Timings t = evaluate_at(prm, c.x, c.alpha, c.sigma, c.x, u, g);
  const double eu = rel_l2(u, c.u_ref), eg = rel_l2(g, c.g_ref);
  std::printf("[ periodic 64^3 vs spectral, single ] err u %.3e  err grad %.3e  (%.3f s: tree %.3f lists %.3f "
              "upload %.3f | GPU p2m/m2m %.4f m2l %.4f l2l/l2p %.4f p2p %.4f)\n",
              eu, eg, t.total, t.tree, t.traverse, t.upload, t.p2m_m2m, t.m2l, t.l2l_l2p, t.p2p);
  EXPECT_LE(eu, 3e-5);
  EXPECT_LE(eg, 3e-4);
}

// dgemm_gpu against the host's sums, at sizes that are not multiples of its tiles (64 x 64, inner
// slices of 32), with leading dimensions beyond the rows, B's rows 1 or 4 doubles apart (the
// P2M's strengths), a C column 8 bytes off 32-byte alignment (the P2M's multipoles at 6 ncoef(p)
// doubles a leaf), and one inner term; written, and added to C (the M2M's and L2L's C += A B,
// C's columns 8 cells apart).  Entries in [-1, 1): each result a sum of k terms within a few ulp
// of k of the host's.
TEST(FmmGpu, MatrixProductEqualsTheHostSums) {
  VH_NEED_GPU();
  std::mt19937_64 gen(77);
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  for (const std::array<int, 4>& mnk :
       {std::array<int, 4>{768, 300, 630, 1}, {210, 131, 64, 4}, {70, 65, 37, 1}, {70, 65, 37, 4}, {9, 1, 1, 1},
        {210, 77, 210, 0}}) {
    const bool add = mnk[3] == 0;  // C += A B with C's columns 8 x 630 doubles apart
    const int m = mnk[0], n = mnk[1], k = mnk[2], incb = add ? 1 : mnk[3], lda = m + 3, ldb = incb * k + 5,
              ldc = add ? 8 * 630 : m + 1;
    std::vector<double> A(static_cast<std::size_t>(lda) * k), B(static_cast<std::size_t>(ldb) * n),
        C(static_cast<std::size_t>(ldc) * n, -7.0);
    for (double& v : A) v = U(gen);
    for (double& v : B) v = U(gen);
    const DeviceArray<double> dA(A), dB(B);
    DeviceArray<double> dC(C);
    dgemm_gpu(m, n, k, dA.data(), lda, dB.data(), incb, ldb, dC.data() + 1, ldc, 0, add);
    std::vector<double> got(C.size());
    VH_CHECK_CUDA(cudaMemcpy(got.data(), dC.data(), got.size() * sizeof(double), cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int c = 0; c < n; ++c)
      for (int r = 0; r < ldc; ++r) {
        const std::size_t at = 1 + r + static_cast<std::size_t>(c) * ldc;
        if (at >= got.size()) continue;
        if (r >= m) {
          EXPECT_EQ(got[at], -7.0) << "beyond the rows, (" << r << ", " << c << ")";  // untouched
          continue;
        }
        double want = add ? -7.0 : 0.0;
        for (int q = 0; q < k; ++q)
          want += A[r + static_cast<std::size_t>(q) * lda] * B[q * incb + static_cast<std::size_t>(c) * ldb];
        worst = std::max(worst, std::abs(got[at] - want));
      }
    EXPECT_EQ(got[0], -7.0);
    std::printf("[ dgemm %d x %d x %d, incb %d%s ] worst |GPU - host| %.2e\n", m, n, k, incb, add ? ", added" : "",
                worst);
    EXPECT_LE(worst, 4 * k * 2.2e-16) << m << " x " << n << " x " << k;
  }
}

// Points exactly on a lattice, 64 to a leaf: the GPU's P2M and L2P as matrix products
// (fmm/lattice_leaves.h) against the CPU's per-point P2M and L2P, in double to round-off, at
// several orders, at the points and at targets that are the lattice moved by a quarter spacing.
TEST(FmmGpu, LatticeLeavesEqualTheCpu) {
  VH_NEED_GPU();
  for (int p : {2, 8, 13}) {
    Params prm;
    prm.p = p;
    prm.ncrit = 64;
    const std::string name = "lattice leaves p = " + std::to_string(p);
    const Blobs b = testing::lattice_blobs(16, 0, 50 + p);
    EXPECT_TRUE(compare(b, {name.c_str(), true, "double"}, false, prm).lattice_leaves) << name;
    EXPECT_TRUE(compare(b, {name.c_str(), true, "double"}, true, prm).lattice_leaves) << name << " at targets";
  }
}

TEST(FmmGpu, PeriodicLatticeSingle) {
  VH_NEED_GPU();
  compare(lattice(16, 1), {"periodic 16^3 lattice", true, "single"}, false);
}

TEST(FmmGpu, PeriodicLatticeDouble) {
  VH_NEED_GPU();
  compare(lattice(16, 2), {"periodic 16^3 lattice", true, "double"}, false);
}

TEST(FmmGpu, FreeSpaceRandomSingle) {
  VH_NEED_GPU();
  compare(random_blobs(6000, -1.0, 2.0, 3, false), {"free random", false, "single"}, false);
}

TEST(FmmGpu, FreeSpaceRandomDouble) {
  VH_NEED_GPU();
  compare(random_blobs(6000, -1.0, 2.0, 4, false), {"free random", false, "double"}, false);
}

TEST(FmmGpu, SeparateTargets) {
  VH_NEED_GPU();
  compare(lattice(12, 5), {"periodic 12^3 lattice", true, "single"}, true);
  compare(random_blobs(4000, 0.0, 1.0, 6, false), {"free random", false, "double"}, true);
}

// Same inputs, same bits: the GPU sums have a fixed order (restarts stay bit-exact).
TEST(FmmGpu, Repeatable) {
  VH_NEED_GPU();
  const Blobs b = lattice(10, 7);
  Params prm;
  prm.periodic = true;
  prm.use_gpu = true;
  std::vector<Vec3> u1, u2;
  std::vector<Mat3> g1, g2;
  evaluate_self(prm, b.x, b.alpha, b.sigma, u1, g1);
  evaluate_self(prm, b.x, b.alpha, b.sigma, u2, g2);
  EXPECT_EQ(u1, u2);
  EXPECT_EQ(g1, g2);
}

// Merged flat lists (flatten_p2p_lists with merge) cover exactly the pairs of the unmerged
// ones: same leaves, same (source particle, shift) sets per leaf, fewer or equal entries.
TEST(FmmGpuLists, MergingKeepsEveryPair) {
  for (bool periodic : {false, true}) {
    const Blobs b = periodic ? lattice(16, 11) : random_blobs(5000, 0.0, kBoxLength, 12, false);
    const double half = 0.5 * kBoxLength;
    const Tree t = build_tree(b.x, b.sigma, Vec3{half, half, half}, half, 64);
    const auto shifts = periodic ? near_image_shifts(near_image_range(0.4)) : std::vector<Vec3>{{0, 0, 0}};
    const Lists l = build_lists(t, t, shifts, Acceptance{0.4, rcut_per_sigma(1e-6), 266});
    const P2PLists a = flatten_p2p_lists(t, t, l, shifts, true, false);
    const P2PLists m = flatten_p2p_lists(t, t, l, shifts, true, true);
    ASSERT_EQ(a.leaf_begin, m.leaf_begin);
    ASSERT_EQ(a.leaf_end, m.leaf_end);
    EXPECT_EQ(a.pairs(), m.pairs());
    EXPECT_LT(m.src_begin.size(), a.src_begin.size());
    std::printf("[ merge %s ] entries %zu -> %zu\n", periodic ? "periodic" : "free", a.src_begin.size(),
                m.src_begin.size());
    for (std::size_t leaf = 0; leaf < a.leaf_begin.size(); ++leaf) {
      auto cover = [&](const P2PLists& f) {
        std::multiset<std::pair<int, int>> s;  // (source particle, shift)
        for (int e = f.offset[leaf]; e < f.offset[leaf + 1]; ++e)
          for (int j = f.src_begin[e]; j < f.src_end[e]; ++j) s.insert({j, f.src_shift[e]});
        return s;
      };
      ASSERT_EQ(cover(a), cover(m)) << "leaf " << leaf;
    }
  }
}

}  // namespace
}  // namespace vh::fmm
