#include "vortex/blobs.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#ifdef VH_HAVE_CUDA
#include "vortex/blobs_gpu.h"
#endif

namespace vh::vortex {
namespace {

/// Each particle's 1-D Gaussian weights along x, y, z on the lattice points i0 … i0+m−1
/// (unwrapped indices): w = (2πσ²)^{-1/2} exp(−d²/2σ²) and dw = ∂w/∂x_i = −d/σ² w, d = x_i − x_p.
struct Stencils {
  int m = 0;                        ///< points per direction (the same for all particles)
  std::vector<int> i0;              ///< [particle][3]
  std::vector<double> w, dw;        ///< [particle][3][m]
};

/// Stencil points per direction, the same for all particles (from the largest core).
int stencil_points(const Particles& p, double h, double cutoff) {
  double smax = 0;
  for (double sg : p.sigma) smax = std::max(smax, sg);
  return 2 * int(std::ceil(cutoff * smax / h)) + 2;
}

Stencils stencils(const Particles& p, double h, double cutoff) {
  Stencils s;
  s.m = stencil_points(p, h, cutoff);
  const std::ptrdiff_t np = std::ptrdiff_t(p.size());
  s.i0.resize(3 * np);
  s.w.assign(3 * np * s.m, 0.0);
  s.dw.assign(3 * np * s.m, 0.0);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t q = 0; q < np; ++q) {
    const double sg = p.sigma[q], R = cutoff * sg, norm = 1.0 / std::sqrt(2.0 * kPi * sg * sg);
    for (int d = 0; d < 3; ++d) {
      const int i0 = int(std::ceil((p.x[q][d] - R) / h));
      s.i0[3 * q + d] = i0;
      double* w = &s.w[(3 * q + d) * s.m];
      double* dw = &s.dw[(3 * q + d) * s.m];
      for (int a = 0; a < s.m; ++a) {
        const double dist = (i0 + a) * h - p.x[q][d];
        if (std::abs(dist) > R) continue;  // outside the cube: zero weight
        w[a] = norm * std::exp(-dist * dist / (2.0 * sg * sg));
        dw[a] = -dist / (sg * sg) * w[a];
      }
    }
  }
  return s;
}

/// Calls f(q, a, b, c) for every particle q and every periodic image offset (a, b, c) into
/// its stencil that lands on lattice point (i, j, k); cells are visited in a fixed order.
/// `cells` lists particles by the lattice cell floor(x/h) (counting sort, stable).
struct CellList {
  int n = 0;
  std::vector<std::size_t> start, order;
  CellList(const Particles& p, const Grid& g) : n(g.n), start(g.points() + 1, 0) {
    const double h = g.h();
    std::vector<std::size_t> cell(p.size());
    for (std::size_t q = 0; q < p.size(); ++q) {
      int c[3];
      for (int d = 0; d < 3; ++d) c[d] = std::clamp(int(std::floor(p.x[q][d] / h)), 0, n - 1);
      cell[q] = g.index(c[0], c[1], c[2]);
      ++start[cell[q] + 1];
    }
    for (std::size_t i = 0; i < g.points(); ++i) start[i + 1] += start[i];
    order.resize(p.size());
    std::vector<std::size_t> fill(start.begin(), start.end() - 1);
    for (std::size_t q = 0; q < p.size(); ++q) order[fill[cell[q]]++] = q;
  }
};

/// Sums f(q, a, b, c) at every lattice point: for each point, over the cells within the
/// stencil reach and the particles in them, over every image offset of the point into the
/// particle's stencil (several when the stencil is wider than the box).
/// Cell offsets to visit per direction for stencils of m points: all cells when the reach
/// covers the box.
std::vector<int> cell_offsets(int n, int m) {
  const int reach = m / 2 + 1;
  std::vector<int> offs;
  if (2 * reach + 1 >= n)
    for (int d = 0; d < n; ++d) offs.push_back(d);
  else
    for (int d = -reach; d <= reach; ++d) offs.push_back(d);
  return offs;
}

template <class F>
void gather(const Particles& p, const Grid& g, const Stencils& s, F&& f) {
  const CellList cells(p, g);
  const int n = g.n;
  const std::vector<int> offs = cell_offsets(n, s.m);
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        const std::size_t point = g.index(i, j, k);
        for (int oz : offs)
          for (int oy : offs)
            for (int ox : offs) {
              const std::size_t c = g.index((i + ox + n) % n, (j + oy + n) % n, (k + oz + n) % n);
              for (std::size_t t = cells.start[c]; t < cells.start[c + 1]; ++t) {
                const std::size_t q = cells.order[t];
                const int ax = (((i - s.i0[3 * q]) % n) + n) % n;
                const int ay = (((j - s.i0[3 * q + 1]) % n) + n) % n;
                const int az = (((k - s.i0[3 * q + 2]) % n) + n) % n;
                for (int c2 = az; c2 < s.m; c2 += n)
                  for (int b = ay; b < s.m; b += n)
                    for (int a = ax; a < s.m; a += n) f(point, q, a, b, c2);
              }
            }
      }
}

#ifdef VH_HAVE_CUDA
/// The same sums on the GPU (blobs_gpu.cu): one thread per lattice point, same visiting order.
void gather_on_gpu(const Particles& p, const Grid& g, double cutoff, bool divergence, std::vector<double>* out) {
  const CellList cells(p, g);
  const int m = stencil_points(p, g.h(), cutoff);
  detail::gather_gpu(p, g, cutoff, m, cells.start, cells.order, cell_offsets(g.n, m), divergence, out);
}
#endif

#ifndef VH_HAVE_CUDA
[[noreturn]] void no_gpu() {
  throw std::invalid_argument("blob sums on the GPU need a build with CUDA (-DVH_ENABLE_CUDA=ON)");
}
#endif

}  // namespace

void vorticity_on_lattice(const Particles& p, const Grid& g, double cutoff, VectorField& omega, bool gpu) {
  omega = VectorField(g);
  if (gpu) {
#ifdef VH_HAVE_CUDA
    gather_on_gpu(p, g, cutoff, false, omega.c.data());
    return;
#else
    no_gpu();
#endif
  }
  const Stencils s = stencils(p, g.h(), cutoff);
  const int m = s.m;
  gather(p, g, s, [&](std::size_t i, std::size_t q, int a, int b, int c) {
    const double w = s.w[(3 * q) * m + a] * s.w[(3 * q + 1) * m + b] * s.w[(3 * q + 2) * m + c];
    if (w == 0.0) return;
    for (int d = 0; d < 3; ++d) omega.c[d][i] += w * p.alpha[q][d];
  });
}

void divergence_on_lattice(const Particles& p, const Grid& g, double cutoff, ScalarField& div, bool gpu) {
  div = ScalarField(g);
  if (gpu) {
#ifdef VH_HAVE_CUDA
    gather_on_gpu(p, g, cutoff, true, &div.v);
    return;
#else
    no_gpu();
#endif
  }
  const Stencils s = stencils(p, g.h(), cutoff);
  const int m = s.m;
  gather(p, g, s, [&](std::size_t i, std::size_t q, int a, int b, int c) {
    const double* wx = &s.w[(3 * q) * m];
    const double* wy = &s.w[(3 * q + 1) * m];
    const double* wz = &s.w[(3 * q + 2) * m];
    const double* dx = &s.dw[(3 * q) * m];
    const double* dy = &s.dw[(3 * q + 1) * m];
    const double* dz = &s.dw[(3 * q + 2) * m];
    div.v[i] += p.alpha[q][0] * dx[a] * wy[b] * wz[c] + p.alpha[q][1] * wx[a] * dy[b] * wz[c] +
                p.alpha[q][2] * wx[a] * wy[b] * dz[c];
  });
}

}  // namespace vh::vortex
