// The blob sums at the lattice on the GPU (vortex/blobs_gpu.cu, a tiled gather) against the CPU
// scatter: the same weights and cut-off decisions, so only the rounding of exp and 1/σ² and the
// order of the additions differ (relative L2 <= 1e-13); and the same bits on every run. The
// device entry (DeviceBlobSums, for particles that live on the GPU; three strength sets at once
// too) runs the same kernels as the host entry: the same bits. Skipped without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "core/device.h"
#include "vortex/blobs.h"
#include "vortex/blobs_gpu.h"
#include "vortex/blobs_kernel.h"

namespace vh::vortex {
namespace {

double rel_l2(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

// Particles moved off the lattice by up to `shift` h, cores (core + spread U) h, random strengths
// (U uniform in [-1, 1]).
Particles moved(const Grid& g, unsigned seed, double shift, double core, double spread) {
  Particles p = lattice_particles(g, g.h());
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> U(-1, 1);
  for (std::size_t q = 0; q < p.size(); ++q) {
    for (int d = 0; d < 3; ++d) {
      p.x[q][d] = std::fmod(p.x[q][d] + shift * g.h() * U(gen) + 2 * kPi, 2 * kPi);
      p.alpha[q][d] = U(gen);
    }
    p.sigma[q] = g.h() * (core + spread * U(gen));
  }
  return p;
}

void expect_gpu_equals_cpu(const Particles& p, const Grid& g, const char* what) {
  VectorField wc, wg;
  vorticity_on_lattice(p, g, 7.0, wc, false);
  vorticity_on_lattice(p, g, 7.0, wg, true);
  ScalarField dc, dg;
  divergence_on_lattice(p, g, 7.0, dc, false);
  divergence_on_lattice(p, g, 7.0, dg, true);
  double worst = 0;
  for (int d = 0; d < 3; ++d) {
    const double e = rel_l2(wg.c[d], wc.c[d]);
    EXPECT_LE(e, 1e-13) << what << ", n " << g.n << ", component " << d;
    worst = std::max(worst, e);
  }
  const double ed = rel_l2(dg.v, dc.v);
  EXPECT_LE(ed, 1e-13) << what << ", n " << g.n;
  std::printf("%s, n %d: relative L2 GPU - CPU: vorticity %.2e, divergence %.2e\n", what, g.n, worst, ed);
}

// n = 8 and 12: stencils wider than the box (several images per particle), 12 with a partial
// tile; 24: every cell within reach of every tile; 36: tiles see a wrapped window of cells, the
// last tile partial.
TEST(BlobsGpu, VorticityAndDivergenceEqualTheCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int n : {8, 12, 24, 36}) {
    const Grid g{n};
    expect_gpu_equals_cpu(moved(g, 3 + n, 0.4, 1.15, 0.15), g, "moved 0.4 h, cores 1.0 .. 1.3 h");
  }
}

// The solver's particles: the default core σ = h, moved by up to 0.1 h.
TEST(BlobsGpu, SolverCoresEqualTheCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const Grid g{32};
  expect_gpu_equals_cpu(moved(g, 5, 0.1, 1.0, 0.0), g, "moved 0.1 h, cores h");
}

// A third of the particles packed into a cube about a cell wide: cells with hundreds of
// particles, so that a tile's staged particles fill up inside one cell's run and the next batch
// resumes there.
TEST(BlobsGpu, ClusteredParticlesEqualTheCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const Grid g{20};
  Particles p = moved(g, 9, 0.4, 1.0, 0.0);
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<double> U(0, 1);
  for (std::size_t q = 0; q < p.size(); q += 3)
    for (int d = 0; d < 3; ++d) p.x[q][d] = 1.0 + 0.3 * U(gen);
  expect_gpu_equals_cpu(p, g, "a third in one cell");
}

TEST(BlobsGpu, SameBitsEveryRun) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const Grid g{20};
  const Particles p = moved(g, 7, 0.4, 1.15, 0.15);
  VectorField w1, w2;
  vorticity_on_lattice(p, g, 7.0, w1, true);
  vorticity_on_lattice(p, g, 7.0, w2, true);
  ScalarField d1, d2;
  divergence_on_lattice(p, g, 7.0, d1, true);
  divergence_on_lattice(p, g, 7.0, d2, true);
  for (int d = 0; d < 3; ++d) EXPECT_EQ(w1.c[d], w2.c[d]) << "component " << d;
  EXPECT_EQ(d1.v, d2.v);
}

/// A device copy of doubles, freed on destruction.
struct DeviceCopy {
  double* p = nullptr;
  std::size_t count = 0;
  explicit DeviceCopy(std::size_t n) : count(n) { EXPECT_EQ(cudaMalloc(&p, n * sizeof(double)), cudaSuccess); }
  DeviceCopy(const double* h, std::size_t n) : DeviceCopy(n) {
    EXPECT_EQ(cudaMemcpy(p, h, n * sizeof(double), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceCopy() { cudaFree(p); }
  std::vector<double> part(std::size_t offset, std::size_t n) const {
    std::vector<double> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p + offset, n * sizeof(double), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
};

// One sort, then three sums of the sorted particles: ω_σ of α, the blob sums of other strengths
// times a scale (what the solver does with its AB2 history), ∇·ω_σ; each equal to the host
// entry's bits (the host given the strengths already scaled: the same product).
TEST(BlobsGpu, DevicePointersEqualTheHostEntry) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (int n : {12, 24}) {
    const Grid g{n};
    const Particles p = moved(g, 11 + n, 0.4, 1.15, 0.15);
    const std::size_t np = p.size(), npts = g.points();
    std::mt19937_64 gen(n);
    std::uniform_real_distribution<double> U(-1, 1);
    const double scale = 0.37;
    std::vector<Vec3> s(np), scaled(np);
    for (std::size_t q = 0; q < np; ++q)
      for (int d = 0; d < 3; ++d) {
        s[q][d] = U(gen);
        scaled[q][d] = s[q][d] * scale;
      }
    const DeviceCopy x(p.x[0].data(), 3 * np), alpha(p.alpha[0].data(), 3 * np), str(s[0].data(), 3 * np),
        sigma(p.sigma.data(), np), out(3 * npts);
    detail::DeviceBlobSums sums;
    const double smax = *std::max_element(p.sigma.begin(), p.sigma.end());
    sums.sort(x.p, sigma.p, np, g, 7.0, stencil_points(smax, g.h(), 7.0));

    VectorField w, ws;
    vorticity_on_lattice(p, g, 7.0, w, true);
    blob_sums(p.x, scaled, p.sigma, g, 7.0, ws, true);
    ScalarField div;
    divergence_on_lattice(p, g, 7.0, div, true);

    sums.sum(alpha.p, 1.0, false, out.p);
    for (int d = 0; d < 3; ++d) EXPECT_TRUE(out.part(d * npts, npts) == w.c[d]) << "n " << n << ", omega " << d;
    sums.sum(str.p, scale, false, out.p);
    for (int d = 0; d < 3; ++d)
      EXPECT_TRUE(out.part(d * npts, npts) == ws.c[d]) << "n " << n << ", scaled strengths " << d;
    sums.sum(alpha.p, 1.0, true, out.p);
    EXPECT_TRUE(out.part(0, npts) == div.v) << "n " << n << ", divergence";
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
}

// The reinitialisation's three strength sets in one pass (sum3: the stencils and weights staged
// once for nine components) give each set what sum() gives it alone, bit for bit (the same
// products added in the same order), on the whole lattice and on a window of planes; and those
// equal the CPU's sums to round-off.
TEST(BlobsGpu, ThreeSetsAtOnceEqualOneAtATime) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const int n = 24;
  const Grid g{n};
  const Particles p = moved(g, 3, 0.4, 1.15, 0.15);
  const std::size_t np = p.size(), plane = std::size_t(n) * n;
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<double> U(-1, 1);
  std::vector<Vec3> s[3];
  for (auto& v : s) {
    v.resize(np);
    for (auto& e : v)
      for (double& c : e) c = U(gen);
  }
  const double scale[3] = {1.0, 0.37, -2.5};
  const DeviceCopy x(p.x[0].data(), 3 * np), sigma(p.sigma.data(), np), s0(s[0][0].data(), 3 * np),
      s1(s[1][0].data(), 3 * np), s2(s[2][0].data(), 3 * np);
  detail::DeviceBlobSums sums;
  const double smax = *std::max_element(p.sigma.begin(), p.sigma.end());
  sums.sort(x.p, sigma.p, np, g, 7.0, stencil_points(smax, g.h(), 7.0));
  const double* const str[3] = {s0.p, s1.p, s2.p};
  for (auto [z0, nz] : {std::pair{0, n}, {5, 7}}) {
    const std::size_t npl = std::size_t(nz) * plane;
    const DeviceCopy o0(3 * npl), o1(3 * npl), o2(3 * npl), one(3 * npl);
    double* const out[3] = {o0.p, o1.p, o2.p};
    sums.sum3(str, scale, out, z0, nz);
    const DeviceCopy* o[3] = {&o0, &o1, &o2};
    for (int j = 0; j < 3; ++j) {
      sums.sum(str[j], scale[j], false, one.p, z0, nz);
      EXPECT_TRUE(o[j]->part(0, 3 * npl) == one.part(0, 3 * npl)) << "set " << j << ", planes " << z0 << " + " << nz;
      std::vector<Vec3> scaled(np);
      for (std::size_t q = 0; q < np; ++q)
        for (int d = 0; d < 3; ++d) scaled[q][d] = s[j][q][d] * scale[j];
      VectorField cpu;
      blob_sums(p.x, scaled, p.sigma, g, 7.0, cpu, false);
      for (int d = 0; d < 3; ++d) {
        const std::vector<double> ref(cpu.c[d].begin() + std::ptrdiff_t(z0 * plane),
                                      cpu.c[d].begin() + std::ptrdiff_t(z0 * plane + npl));
        EXPECT_LE(rel_l2(o[j]->part(d * npl, npl), ref), 1e-13) << "set " << j << " against the CPU, component " << d;
      }
    }
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// The sums at a window of z-planes (a rank's slab, vortex/solver_gpu.cu) equal the whole
// lattice's sums there bit for bit: the window's tiles are the whole lattice's (windows that
// start and end inside a tile, one plane, the last planes), and the planes outside it are not
// written. Also with only the particles that reach the window (their order kept): the sums
// there still equal the whole lattice's to round-off (1e-14): which particles a tile stages
// together may change, not which particles a point adds.
TEST(BlobsGpu, WindowOfPlanesEqualsTheWholeLattice) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const int n = 36;
  const Grid g{n};
  const Particles p = moved(g, 5, 0.4, 1.15, 0.15);
  const std::size_t np = p.size(), plane = std::size_t(n) * n;
  const DeviceCopy x(p.x[0].data(), 3 * np), alpha(p.alpha[0].data(), 3 * np), sigma(p.sigma.data(), np);
  detail::DeviceBlobSums sums;
  const double smax = *std::max_element(p.sigma.begin(), p.sigma.end());
  const int m = stencil_points(smax, g.h(), 7.0);
  sums.sort(x.p, sigma.p, np, g, 7.0, m);
  VectorField w;
  vorticity_on_lattice(p, g, 7.0, w, true);
  for (auto [z0, nz] : {std::pair{0, 36}, {3, 10}, {17, 1}, {30, 6}, {8, 8}}) {
    const std::size_t npl = std::size_t(nz) * plane;
    std::vector<double> sentinel(3 * npl + 1, 1e300);
    const DeviceCopy out(sentinel.data(), sentinel.size());
    sums.sum(alpha.p, 1.0, false, out.p, z0, nz);
    for (int d = 0; d < 3; ++d)
      EXPECT_TRUE(out.part(d * npl, npl) ==
                  std::vector<double>(w.c[d].begin() + std::ptrdiff_t(z0 * plane),
                                      w.c[d].begin() + std::ptrdiff_t(z0 * plane + npl)))
          << "planes " << z0 << " + " << nz << ", component " << d;
    EXPECT_EQ(out.part(3 * npl, 1)[0], 1e300) << "written past the window";
  }
  // Only the particles within reach of planes 30 … 35 (wrapping to 0 … ): their sums there.
  const int z0 = 30, nz = 6, reach = m / 2 + 1;
  Particles near;
  for (std::size_t q = 0; q < np; ++q) {
    if (blob::near_planes(int(std::floor(p.x[q][2] / g.h())), z0, nz, n, reach)) {
      near.x.push_back(p.x[q]);
      near.alpha.push_back(p.alpha[q]);
      near.gamma.push_back(p.alpha[q]);
      near.sigma.push_back(p.sigma[q]);
    }
  }
  ASSERT_LT(near.size(), np);
  const DeviceCopy nx(near.x[0].data(), 3 * near.size()), na(near.alpha[0].data(), 3 * near.size()),
      ns(near.sigma.data(), near.size());
  const std::size_t npl = std::size_t(nz) * plane;
  const DeviceCopy out(3 * npl);
  detail::DeviceBlobSums few;
  few.sort(nx.p, ns.p, near.size(), g, 7.0, m);
  few.sum(na.p, 1.0, false, out.p, z0, nz);
  for (int d = 0; d < 3; ++d) {
    const std::vector<double> whole(w.c[d].begin() + std::ptrdiff_t(z0 * plane),
                                    w.c[d].begin() + std::ptrdiff_t(z0 * plane + npl));
    EXPECT_LE(rel_l2(out.part(d * npl, npl), whole), 1e-14) << "component " << d;
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
}  // namespace vh::vortex
