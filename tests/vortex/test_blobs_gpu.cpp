// The blob sums at the lattice on the GPU (vortex/blobs_gpu.cu) against the CPU gather: the
// same cells and particles in the same order, so only the rounding of exp and of fused
// multiply-adds differs (relative L2 <= 1e-13).  Skipped without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "vortex/blobs.h"

namespace vh::vortex {
namespace {

bool have_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return n > 0;
}

double rel_l2(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

// Particles moved off the lattice by up to 0.4 h, cores spread to 1.0 .. 1.3 h, random strengths;
// n = 8 exercises the stencils wider than the box (several images per particle).
Particles moved(const Grid& g, unsigned seed) {
  Particles p = lattice_particles(g, g.h());
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> U(-1, 1);
  for (std::size_t q = 0; q < p.size(); ++q) {
    for (int d = 0; d < 3; ++d) {
      p.x[q][d] = std::fmod(p.x[q][d] + 0.4 * g.h() * U(gen) + 2 * kPi, 2 * kPi);
      p.alpha[q][d] = U(gen);
    }
    p.sigma[q] = g.h() * (1.15 + 0.15 * U(gen));
  }
  return p;
}

TEST(BlobsGpu, VorticityAndDivergenceEqualTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  for (int n : {8, 24}) {
    const Grid g{n};
    const Particles p = moved(g, 3 + n);
    VectorField wc, wg;
    vorticity_on_lattice(p, g, 7.0, wc, false);
    vorticity_on_lattice(p, g, 7.0, wg, true);
    ScalarField dc, dg;
    divergence_on_lattice(p, g, 7.0, dc, false);
    divergence_on_lattice(p, g, 7.0, dg, true);
    for (int d = 0; d < 3; ++d) EXPECT_LE(rel_l2(wg.c[d], wc.c[d]), 1e-13) << "n " << n << " component " << d;
    EXPECT_LE(rel_l2(dg.v, dc.v), 1e-13) << "n " << n;
  }
}

}  // namespace
}  // namespace vh::vortex
