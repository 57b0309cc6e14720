// Helpers shared by the fmm tests: relative L2 errors and random particle sets.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "fmm/fmm.h"
#include "fmm/periodic.h"
#include "fmm/tree.h"
#include "fmm/types.h"
#ifdef VH_FMM_HAVE_CUDA
#include "fmm/p2p_gpu.h"

// The first statement of a GPU test: skips it where no CUDA device is visible.
#define VH_NEED_GPU() \
  if (::vh::fmm::gpu_count() == 0) GTEST_SKIP() << "no CUDA device"
#endif

// The long variants (VH_FMM_LONG, label "long") get suite names ending in "Long" so that ctest
// names stay unique.
#ifdef VH_FMM_LONG
#define VH_FMM_SUITE(name) name##Long
#else
#define VH_FMM_SUITE(name) name
#endif

namespace vh::fmm::testing {

/// The fixed settings of the documented accuracy tables (fmm/README.md): p = 10, theta = 0.4,
/// ncrit = 64 (the library's defaults are "auto", chosen from the tolerance).
inline Params reference_params() {
  Params p;
  p.p = 10;
  p.theta = 0.4;
  p.ncrit = 64;
  return p;
}

/// The distances of the acceptance test written out as the CPU traversal had them before
/// fmm/traverse_kernel.h (the reference of its tests): between the cube centres of A and of B
/// shifted by s, and between their particle boxes.
inline void reference_distances(const Cell& A, const Cell& B, const Vec3& s, double& dist_centres,
                                double& dist_boxes) {
  double dc2 = 0, db2 = 0;
  for (int d = 0; d < 3; ++d) {
    const double dc = A.center[d] - B.center[d] - s[d];
    dc2 += dc * dc;
    const double gap = std::max(A.bmin[d] - (B.bmax[d] + s[d]), (B.bmin[d] + s[d]) - A.bmax[d]);
    if (gap > 0) db2 += gap * gap;
  }
  dist_centres = std::sqrt(dc2);
  dist_boxes = std::sqrt(db2);
}

/// ||a - b||_2 / ||b||_2 over all components.
inline double rel_l2(const std::vector<Vec3>& a, const std::vector<Vec3>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (int k = 0; k < 3; ++k) {
      num += (a[i][k] - b[i][k]) * (a[i][k] - b[i][k]);
      den += b[i][k] * b[i][k];
    }
  return std::sqrt(num / den);
}

inline double rel_l2(const std::vector<Mat3>& a, const std::vector<Mat3>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (int k = 0; k < 3; ++k)
      for (int l = 0; l < 3; ++l) {
        num += (a[i][k][l] - b[i][k][l]) * (a[i][k][l] - b[i][k][l]);
        den += b[i][k][l] * b[i][k][l];
      }
  return std::sqrt(num / den);
}

/// n blobs uniform in [lo, lo + side)^3, alpha uniform in [-0.5, 0.5)^3 (mean removed when
/// zero_mean), sigma = h (0.8 + 0.4 U) with h = side / n^(1/3) the mean spacing.
struct Blobs {
  std::vector<Vec3> x, alpha;
  std::vector<double> sigma;
};

inline Blobs random_blobs(int n, double lo, double side, unsigned seed, bool zero_mean) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  Blobs b;
  b.x.resize(n);
  b.alpha.resize(n);
  b.sigma.resize(n);
  const double h = side / std::cbrt(double(n));
  Vec3 mean{};
  for (int i = 0; i < n; ++i) {
    for (int d = 0; d < 3; ++d) b.x[i][d] = lo + side * U(gen);
    for (int d = 0; d < 3; ++d) mean[d] += (b.alpha[i][d] = U(gen) - 0.5) / n;
    b.sigma[i] = h * (0.8 + 0.4 * U(gen));
  }
  if (zero_mean)
    for (auto& a : b.alpha)
      for (int d = 0; d < 3; ++d) a[d] -= mean[d];
  return b;
}

/// n^3 lattice in [0, 2 pi)^3 (cell centres), every coordinate moved by up to +-jitter h,
/// sigma = h, alpha uniform in [-0.5, 0.5)^3 with the mean removed (the lattice case of the
/// vortex solver, not its exact field); jitter 0: exactly on the lattice (points on leaf faces).
inline Blobs lattice_blobs(int n, double jitter, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> U(-0.5, 0.5);
  const double h = kBoxLength / n;
  Blobs b;
  Vec3 mean{};
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < n; ++k) {
        const int ijk[3] = {i, j, k};
        Vec3 x, a;
        for (int d = 0; d < 3; ++d) x[d] = (ijk[d] + 0.5 + 2 * jitter * U(gen)) * h;
        for (int d = 0; d < 3; ++d) mean[d] += (a[d] = U(gen));
        b.x.push_back(x);
        b.alpha.push_back(a);
        b.sigma.push_back(h);
      }
  const double nn = double(b.x.size());
  for (auto& a : b.alpha)
    for (int d = 0; d < 3; ++d) a[d] -= mean[d] / nn;
  return b;
}

// Points in [lo, lo + side)^3: three Gaussian clusters of very different widths (deep, uneven
// trees: leaves of every size next to big cells) over a uniform background, sigma ~ local-ish
// spacing with a spread (so sigma_max differs between cells and the cut-off test matters).
inline void clustered(int n, unsigned seed, double lo, double side, std::vector<Vec3>& x, std::vector<double>& sigma) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> N01(0.0, 1.0);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const double widths[3] = {0.15, 0.03, 0.004};
  Vec3 centres[3];
  for (auto& c : centres)
    for (int d = 0; d < 3; ++d) c[d] = lo + side * (0.2 + 0.6 * U(gen));
  x.resize(n);
  sigma.resize(n);
  const double h = side / std::cbrt(double(n));
  for (int i = 0; i < n; ++i) {
    const int k = i % 4;
    for (int d = 0; d < 3; ++d) {
      double v = k < 3 ? centres[k][d] + side * widths[k] * N01(gen) : lo + side * U(gen);
      x[i][d] = std::min(std::max(v, lo), lo + side * (1 - 1e-12));
    }
    sigma[i] = h * (0.3 + 0.9 * U(gen));
  }
}

}  // namespace vh::fmm::testing
