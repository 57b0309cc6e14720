#include "vortex/remesh.h"

#include <algorithm>
#include <cmath>

#include "vortex/blobs.h"
#include "vortex/rbf.h"

namespace vh::vortex {

Lattice::Lattice(const Grid& g, double sigma0, double symbol_floor, double cutoff, bool gpu)
    : g_(g), sigma0_(sigma0), floor_(symbol_floor), cutoff_(cutoff), vol_(g.h() * g.h() * g.h()), gpu_(gpu),
      s1_(symbol_factors(g, sigma0)), fft_(std::make_unique<Fft3d>(g.n)) {}

double Lattice::symbol(int ix, int iy, int iz) const {
  const double s0 = s1_[0] * s1_[0] * s1_[0];
  return std::max(s1_[ix] * s1_[iy] * s1_[iz], floor_ * s0);
}

void Lattice::field(const std::vector<Vec3>& x, const std::vector<Vec3>& qv, const std::vector<double>& sigma,
                    SpectralVector& out) {
  blob_sums(x, qv, sigma, g_, cutoff_, work_, gpu_);
  fft_->forward(work_, out);
  // Σ_p q_p V ζ(x_i − x_p) has the coefficients (s(k)/V) q̂ V = s(k) q̂ on the lattice.
  const int n = g_.n, nxh = n / 2 + 1;
  for (auto& c : out.c)
#pragma omp parallel for collapse(2) schedule(static)
    for (int iz = 0; iz < n; ++iz)
      for (int iy = 0; iy < n; ++iy)
        for (int ix = 0; ix < nxh; ++ix) c[g_.mode_index(ix, iy, iz)] /= symbol(ix, iy, iz);
}

void Lattice::modes(const std::vector<Vec3>& values, double scale, SpectralVector& out) {
  if (work_.grid.n != g_.n) work_ = VectorField(g_);
  const std::ptrdiff_t np = std::ptrdiff_t(values.size());
  for (int d = 0; d < 3; ++d)
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t i = 0; i < np; ++i) work_.c[d][i] = values[i][d] * scale;
  fft_->forward(work_, out);
}

void Lattice::diffuse(SpectralVector& c, double nu_tau) const {
  if (nu_tau == 0) return;
  const int n = g_.n, nxh = n / 2 + 1;
#pragma omp parallel for collapse(2) schedule(static)
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix < nxh; ++ix) {
        const double ky = g_.wavenumber(iy), kz = g_.wavenumber(iz);
        const double f = std::exp(-nu_tau * (double(ix) * ix + ky * ky + kz * kz));
        const std::size_t m = g_.mode_index(ix, iy, iz);
        for (auto& a : c.c) a[m] *= f;
      }
}

double Lattice::project(SpectralVector& c) const {
  const int n = g_.n, nxh = n / 2 + 1;
  double removed = 0, total = 0;
#pragma omp parallel for collapse(2) schedule(static) reduction(+ : removed, total)
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix < nxh; ++ix) {
        const std::size_t m = g_.mode_index(ix, iy, iz);
        const double k[3] = {double(ix), double(g_.wavenumber(iy)), double(g_.wavenumber(iz))};
        const double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        if (k2 == 0) {
          for (auto& a : c.c) a[m] = 0;
          continue;
        }
        const Complex kw = k[0] * c.c[0][m] + k[1] * c.c[1][m] + k[2] * c.c[2][m];
        const double w = mode_weight(ix, n);
        removed += w * std::norm(kw);
        total += w * k2 * (std::norm(c.c[0][m]) + std::norm(c.c[1][m]) + std::norm(c.c[2][m]));
        for (int d = 0; d < 3; ++d) c.c[d][m] -= k[d] * kw / k2;
      }
  return total > 0 ? std::sqrt(removed / total) : 0.0;
}

void Lattice::filter(SpectralVector& c, Filter f, double fraction) const {
  if (f == Filter::none) return;
  const int n = g_.n, nxh = n / 2 + 1;
  const double kmax = fraction * 0.5 * n, kmax2 = kmax * kmax;
#pragma omp parallel for collapse(2) schedule(static)
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix < nxh; ++ix) {
        const double ky = g_.wavenumber(iy), kz = g_.wavenumber(iz);
        if (double(ix) * ix + ky * ky + kz * kz <= kmax2) continue;
        for (auto& a : c.c) a[g_.mode_index(ix, iy, iz)] = 0;
      }
}

void Lattice::values(const SpectralVector& c, bool blob, double scale, std::vector<Vec3>& out) {
  SpectralVector t = c;
  if (blob) {
    const int n = g_.n, nxh = n / 2 + 1;
    for (auto& a : t.c)
#pragma omp parallel for collapse(2) schedule(static)
      for (int iz = 0; iz < n; ++iz)
        for (int iy = 0; iy < n; ++iy)
          for (int ix = 0; ix < nxh; ++ix) a[g_.mode_index(ix, iy, iz)] *= vol_ / symbol(ix, iy, iz);
  }
  fft_->inverse(t, work_);
  out.resize(g_.points());
  const std::ptrdiff_t np = std::ptrdiff_t(out.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < np; ++i)
    for (int d = 0; d < 3; ++d) out[i][d] = work_.c[d][i] * scale;
}

void Lattice::biot_savart(const SpectralVector& w, SpectralVector& u) const {
  u = SpectralVector(g_);
  const int n = g_.n, nxh = n / 2 + 1;
#pragma omp parallel for collapse(2) schedule(static)
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix < nxh; ++ix) {
        const double k[3] = {double(ix), double(g_.wavenumber(iy)), double(g_.wavenumber(iz))};
        const double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        if (k2 == 0) continue;
        const std::size_t m = g_.mode_index(ix, iy, iz);
        const Complex a = w.c[0][m], b = w.c[1][m], c = w.c[2][m], i(0, 1.0 / k2);
        u.c[0][m] = i * (k[1] * c - k[2] * b);
        u.c[1][m] = i * (k[2] * a - k[0] * c);
        u.c[2][m] = i * (k[0] * b - k[1] * a);
      }
}

}  // namespace vh::vortex
