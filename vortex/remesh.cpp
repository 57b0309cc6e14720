#include "vortex/remesh.h"

#include <algorithm>
#include <cmath>

#include "vortex/blobs.h"
#include "vortex/rbf.h"
#include "vortex/remesh_kernel.h"

namespace vh::vortex {
namespace {

using kernel::Cx;

Cx* cx(Complex* c) { return reinterpret_cast<Cx*>(c); }
const Cx* cx(const Complex* c) { return reinterpret_cast<const Cx*>(c); }

/// Calls f(ix, iy, iz, m) for every mode m of the half layout of g, in parallel over (iz, iy).
template <class F>
void for_each_mode(const Grid& g, F&& f) {
  const int n = g.n, nxh = n / 2 + 1;
#pragma omp parallel for collapse(2) schedule(static)
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix < nxh; ++ix) f(ix, iy, iz, g.mode_index(ix, iy, iz));
}

}  // namespace

void resample(const SpectralVector& from, const Grid& to_grid, SpectralVector& to) {
  to = SpectralVector(to_grid);
  for_each_mode(to_grid, [&](int ix, int iy, int iz, std::size_t dst) {
    const long long src = kernel::resample_source(ix, iy, iz, to_grid.n, from.grid.n);
    if (src < 0) return;
    for (int d = 0; d < 3; ++d) to.c[d][dst] = from.c[d][std::size_t(src)];
  });
}

Lattice::Lattice(const Grid& g, double sigma0, double symbol_floor, double cutoff, bool gpu)
    : g_(g), sigma0_(sigma0), floor_(symbol_floor), cutoff_(cutoff), vol_(g.h() * g.h() * g.h()), gpu_(gpu),
      s1_(symbol_factors(g, sigma0)), fft_(std::make_unique<Fft3d>(g.n)) {}

double Lattice::symbol(int ix, int iy, int iz) const { return kernel::symbol(s1_.data(), ix, iy, iz, floor_); }

void Lattice::field(const std::vector<Vec3>& x, const std::vector<Vec3>& qv, const std::vector<double>& sigma,
                    SpectralVector& out) {
  blob_sums(x, qv, sigma, g_, cutoff_, work_, gpu_);
  fft_->forward(work_, out);
  // Σ_p q_p V ζ(x_i − x_p) has the coefficients (s(k)/V) q̂ V = s(k) q̂ on the lattice.
  for (auto& c : out.c)
    for_each_mode(g_, [&](int ix, int iy, int iz, std::size_t m) { kernel::deconvolve(cx(c.data())[m], symbol(ix, iy, iz)); });
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
  for_each_mode(g_, [&](int ix, int iy, int iz, std::size_t m) {
    const double f = kernel::diffusion_factor(nu_tau, ix, g_.wavenumber(iy), g_.wavenumber(iz));
    for (auto& a : c.c) kernel::scale(cx(a.data())[m], f);
  });
}

double Lattice::project(SpectralVector& c) const {
  const int n = g_.n, nxh = n / 2 + 1;
  double removed = 0, total = 0;
#pragma omp parallel for collapse(2) schedule(static) reduction(+ : removed, total)
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix < nxh; ++ix) {
        const std::size_t m = g_.mode_index(ix, iy, iz);
        Cx v[3] = {cx(c.c[0].data())[m], cx(c.c[1].data())[m], cx(c.c[2].data())[m]};
        kernel::project(ix, g_.wavenumber(iy), g_.wavenumber(iz), mode_weight(ix, n), v, removed, total);
        for (int d = 0; d < 3; ++d) cx(c.c[d].data())[m] = v[d];
      }
  return total > 0 ? std::sqrt(removed / total) : 0.0;
}

void Lattice::filter(SpectralVector& c, Filter f, double fraction) const {
  if (f == Filter::none) return;
  const double kmax = fraction * 0.5 * g_.n, kmax2 = kmax * kmax;
  for_each_mode(g_, [&](int ix, int iy, int iz, std::size_t m) {
    if (kernel::kept(ix, g_.wavenumber(iy), g_.wavenumber(iz), kmax2)) return;
    for (auto& a : c.c) a[m] = 0;
  });
}

void Lattice::values(const SpectralVector& c, bool blob, double scale, std::vector<Vec3>& out) {
  SpectralVector t = c;
  if (blob)
    for (auto& a : t.c)
      for_each_mode(g_, [&](int ix, int iy, int iz, std::size_t m) { kernel::scale(cx(a.data())[m], vol_ / symbol(ix, iy, iz)); });
  fft_->inverse(t, work_);
  out.resize(g_.points());
  const std::ptrdiff_t np = std::ptrdiff_t(out.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < np; ++i)
    for (int d = 0; d < 3; ++d) out[i][d] = work_.c[d][i] * scale;
}

void Lattice::biot_savart(const SpectralVector& w, SpectralVector& u) const {
  u = SpectralVector(g_);
  for_each_mode(g_, [&](int ix, int iy, int iz, std::size_t m) {
    const Cx v[3] = {cx(w.c[0].data())[m], cx(w.c[1].data())[m], cx(w.c[2].data())[m]};
    Cx r[3];
    modes::biot_savart(double(ix), double(g_.wavenumber(iy)), double(g_.wavenumber(iz)), v, r);
    for (int d = 0; d < 3; ++d) cx(u.c[d].data())[m] = r[d];
  });
}

}  // namespace vh::vortex
