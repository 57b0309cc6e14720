#include "vortex/blobs.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "vortex/blobs_kernel.h"
#ifdef VH_HAVE_CUDA
#include "vortex/blobs_gpu.h"
#endif

namespace vh::vortex {
namespace {

/// Stencil points per direction, the same for all particles (from the largest core).
int stencil_points(const std::vector<double>& sigma, double h, double cutoff) {
  double smax = 0;
  for (double sg : sigma) smax = std::max(smax, sg);
  return vortex::stencil_points(smax, h, cutoff);
}

/// One particle's 1-D Gaussian weights along x, y, z on the lattice points i0 … i0+m−1
/// (unwrapped indices): w and dw = ∂w/∂x_i of blobs_kernel.h, zero outside the cut-off; idx: the
/// wrapped lattice index of each point; x_run: the x points lie in one row without wrapping
/// (idx[0][a] = idx[0][0] + a), as they do for all but the particles near the box's x faces.
struct Weights {
  int i0[3];
  bool x_run = false;
  std::vector<double> w[3], dw[3];
  std::vector<int> idx[3];
  explicit Weights(int m) {
    for (int d = 0; d < 3; ++d) {
      w[d].resize(m);
      dw[d].resize(m);
      idx[d].resize(m);
    }
  }
  void set(const Vec3& xq, double sg, int n, double h, double cutoff) {
    const blob::Core c = blob::core(sg, cutoff);
    const int m = int(w[0].size());
    for (int d = 0; d < 3; ++d) {
      i0[d] = blob::stencil_start(xq[d], c.R, h);
      for (int a = 0; a < m; ++a) {
        blob::weight(blob::offset(i0[d] + a, h, xq[d]), c, w[d][a], dw[d][a]);
        idx[d][a] = (((i0[d] + a) % n) + n) % n;
      }
    }
    x_run = i0[0] >= 0 && i0[0] + m <= n;
  }
};

/// f(row[i_a], a) for the x points a of the particle's stencil in one lattice row (row: the
/// row's point x = 0): a contiguous run, which the compiler vectorises, unless the stencil wraps.
template <class F>
void along_x(double* row, const Weights& W, F&& f) {
  const int m = int(W.w[0].size());
  if (W.x_run) {
    double* r = row + W.idx[0][0];
    for (int a = 0; a < m; ++a) f(r[a], a);
  } else {
    for (int a = 0; a < m; ++a) f(row[W.idx[0][a]], a);
  }
}

/// Adds every particle's stencil to the lattice points of the z-planes z0 … z0 + nz − 1:
/// f(row, q, W, b, c) for each row (b, c) of particle q's stencil on those planes with nonzero y
/// and z weights, `row` the index of the row's point x = 0 counted from plane z0 (f takes the
/// row's x points by along_x).  The planes are split among the threads; each thread takes the
/// particles in index order and adds only to its own planes, so every lattice point sums its
/// particles in index order: the same bits for any thread count, and for any split of the planes
/// over ranks that hands each rank the particles in the same order.
template <class F>
void scatter(const std::vector<Vec3>& x, const std::vector<double>& sigma, const Grid& g, double cutoff, int z0,
             int nz, F&& f) {
  const int n = g.n, m = stencil_points(sigma, g.h(), cutoff);
  const double h = g.h();
  const std::size_t plane0 = std::size_t(z0) * n * n;
#pragma omp parallel
  {
    const int nth = omp_get_num_threads(), th = omp_get_thread_num();
    const int za = z0 + int((long long)nz * th / nth), zb = z0 + int((long long)nz * (th + 1) / nth);
    Weights W(m);
    for (std::size_t q = 0; q < x.size(); ++q) {
      // Skip particles whose stencil misses this thread's planes (cheap test on the range).
      const int lo = blob::stencil_start(x[q][2], blob::core(sigma[q], cutoff).R, h), hi = lo + m - 1;
      bool touches = hi - lo + 1 >= n;
      for (int z = lo; z <= hi && !touches; ++z) {
        const int zw = ((z % n) + n) % n;
        touches = zw >= za && zw < zb;
      }
      if (!touches) continue;
      W.set(x[q], sigma[q], n, h, cutoff);
      for (int c = 0; c < m; ++c) {
        const int z = W.idx[2][c];
        if (z < za || z >= zb || W.w[2][c] == 0.0) continue;
        for (int b = 0; b < m; ++b) {
          if (W.w[1][b] == 0.0) continue;
          f(g.index(0, W.idx[1][b], z) - plane0, q, W, b, c);
        }
      }
    }
  }
}

#ifdef VH_HAVE_CUDA
/// The same sums on the GPU (blobs_gpu.cu): the particles go up and the sums come back through
/// page-locked memory, packed and unpacked by all host threads.
void gather_on_gpu(const std::vector<Vec3>& x, const std::vector<Vec3>& s, const std::vector<double>& sigma,
                   const Grid& g, double cutoff, bool divergence, std::vector<double>* out) {
  const std::size_t np = x.size(), npts = g.points(), ncomp = divergence ? 1 : 3;
  double* host = detail::pinned_doubles(std::max(detail::kPacked * np, ncomp * npts));
  const std::ptrdiff_t nq = static_cast<std::ptrdiff_t>(np), ni = static_cast<std::ptrdiff_t>(npts);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t q = 0; q < nq; ++q) {
    double* h = host + detail::kPacked * q;
    for (int d = 0; d < 3; ++d) {
      h[d] = x[q][d];
      h[3 + d] = s[q][d];
    }
    h[6] = sigma[q];
  }
  detail::gather_gpu(np, g, cutoff, stencil_points(sigma, g.h(), cutoff), divergence, host);
  for (std::size_t c = 0; c < ncomp; ++c) {
    out[c].resize(npts);
    const double* src = host + c * npts;
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t i = 0; i < ni; ++i) out[c][i] = src[i];
  }
}
#endif

#ifndef VH_HAVE_CUDA
[[noreturn]] void no_gpu() {
  throw std::invalid_argument("blob sums on the GPU need a build with CUDA (-DVH_ENABLE_CUDA=ON)");
}
#endif

}  // namespace

int stencil_points(double sigma_max, double h, double cutoff) {
  return 2 * int(std::ceil(cutoff * sigma_max / h)) + 2;
}

void blob_sums(const std::vector<Vec3>& x, const std::vector<Vec3>& s, const std::vector<double>& sigma,
               const Grid& g, double cutoff, VectorField& out, bool gpu) {
  if (gpu) {
#ifdef VH_HAVE_CUDA
    if (s.size() != x.size() || sigma.size() != x.size())
      throw std::invalid_argument("blob_sums: x, strengths and sigma differ in size");
    out = VectorField(g);
    gather_on_gpu(x, s, sigma, g, cutoff, false, out.c.data());
    return;
#else
    no_gpu();
#endif
  }
  blob_sums(x, s, sigma, g, cutoff, 0, g.n, out);
}

void blob_sums(const std::vector<Vec3>& x, const std::vector<Vec3>& s, const std::vector<double>& sigma,
               const Grid& g, double cutoff, int z0, int nz, VectorField& out) {
  if (s.size() != x.size() || sigma.size() != x.size())
    throw std::invalid_argument("blob_sums: x, strengths and sigma differ in size");
  out = VectorField(g, nz);
  scatter(x, sigma, g, cutoff, z0, nz, [&](std::size_t row, std::size_t q, const Weights& W, int b, int c) {
    const double wyz = W.w[1][b] * W.w[2][c];
    const double* wx = W.w[0].data();
    for (int d = 0; d < 3; ++d) {
      const double v = wyz * s[q][d];
      along_x(out.c[d].data() + row, W, [&](double& o, int a) { o += wx[a] * v; });
    }
  });
}

void vorticity_on_lattice(const Particles& p, const Grid& g, double cutoff, VectorField& omega, bool gpu) {
  blob_sums(p.x, p.alpha, p.sigma, g, cutoff, omega, gpu);
}

void divergence_on_lattice(const Particles& p, const Grid& g, double cutoff, ScalarField& div, bool gpu) {
  if (gpu) {
#ifdef VH_HAVE_CUDA
    div = ScalarField(g);
    gather_on_gpu(p.x, p.alpha, p.sigma, g, cutoff, true, &div.v);
    return;
#else
    no_gpu();
#endif
  }
  divergence_on_lattice(p.x, p.alpha, p.sigma, g, cutoff, 0, g.n, div);
}

void divergence_on_lattice(const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                           const std::vector<double>& sigma, const Grid& g, double cutoff, int z0, int nz,
                           ScalarField& div) {
  div = ScalarField(g, nz);
  // α·∇ζ along a row: dw_x (α_x w_y w_z) + w_x (α_y dw_y w_z + α_z w_y dw_z).
  scatter(x, sigma, g, cutoff, z0, nz, [&](std::size_t row, std::size_t q, const Weights& W, int b, int c) {
    const double u = alpha[q][0] * W.w[1][b] * W.w[2][c],
                 v = alpha[q][1] * W.dw[1][b] * W.w[2][c] + alpha[q][2] * W.w[1][b] * W.dw[2][c];
    const double *wx = W.w[0].data(), *dwx = W.dw[0].data();
    along_x(div.v.data() + row, W, [&](double& o, int a) { o += dwx[a] * u + wx[a] * v; });
  });
}

}  // namespace vh::vortex
