#include "core/diagnostics.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "base/ordered_sum.h"
#include "core/diagnostics_kernel.h"
#include "core/error.h"

namespace vh {
namespace {

/// The rank's modes of a vector field: slab and the three component arrays (slab order).
struct Modes {
  const Slab& slab;
  const Complex* u[3];
  /// The three coefficients of local mode m.
  void at(std::size_t m, diag::C v[3]) const {
    for (int c = 0; c < 3; ++c) v[c] = diag::C{u[c][m].real(), u[c][m].imag()};
  }
};

Modes slab_modes(const SpectralSlab& u) { return {u.slab, {u.c[0].data(), u.c[1].data(), u.c[2].data()}}; }

/// Sums of `count` quantities over the rank's modes or points, reduced over the ranks: plain
/// sums per z-plane (in parallel over planes), the planes' sums added in plane order with
/// Neumaier's compensation (Neumaier 1974), then the ranks'. A sum of n terms in one pass errs
/// by up to ~√n ulp in practice (4e-14 relative for ε at 64³, 1e-12 at 512³); this errs by
/// ~√(n/N) and, nearly independent of the order of the planes, gives the one-rank value on R
/// ranks to a few ulp. The order is fixed by the planes alone, not by the threads: the same
/// bits on every run. `plane(iz, out)` adds plane iz's terms to out[0 … count−1].
template <class F>
std::vector<double> plane_sums(int planes, int count, const Comm& comm, F&& plane) {
  const std::size_t c = std::size_t(count);
  std::vector<double> part(std::size_t(planes) * c, 0.0);
#pragma omp parallel for schedule(static)
  for (int iz = 0; iz < planes; ++iz) plane(iz, part.data() + std::size_t(iz) * c);
  std::vector<double> sum(c, 0.0), comp(c, 0.0);
  for (int iz = 0; iz < planes; ++iz)
    for (std::size_t k = 0; k < c; ++k) {
      const double p = part[std::size_t(iz) * c + k], t = sum[k] + p;
      comp[k] += std::fabs(sum[k]) >= std::fabs(p) ? (sum[k] - t) + p : (p - t) + sum[k];
      sum[k] = t;
    }
  for (std::size_t k = 0; k < c; ++k) sum[k] += comp[k];
  comm.sum(sum);
  return sum;
}

/// Calls f(m, ix, iy) for the local modes m of z index iz, in slot and kx order.
template <class F>
void for_each_mode_of_plane(const Slab& s, int iz, F&& f) {
  const int nxh = s.grid.n / 2 + 1, sl = s.slots();
  for (int j = 0; j < sl; ++j)
    for (int ix = 0; ix < nxh; ++ix) f(s.mode_index(ix, j, iz), ix, s.ky_index(j));
}

std::vector<double> spectrum_of(const Modes& u) {
  const Slab& s = u.slab;
  const int n = s.grid.n;
  return plane_sums(n, s.grid.max_shell() + 1, s.comm, [&](int iz, double* E) {
    for_each_mode_of_plane(s, iz, [&](std::size_t m, int ix, int iy) {
      diag::C v[3];
      u.at(m, v);
      const diag::SpectrumTerms t = diag::spectrum_terms(n, ix, iy, iz, v);
      E[t.shell] += t.energy;
    });
  });
}

double gradient_norm2_of(const Modes& u) {
  const Slab& s = u.slab;
  const int n = s.grid.n;
  return plane_sums(n, 1, s.comm, [&](int iz, double* sum) {
    for_each_mode_of_plane(s, iz, [&](std::size_t m, int ix, int iy) {
      diag::C v[3];
      u.at(m, v);
      sum[0] += diag::spectrum_terms(n, ix, iy, iz, v).grad2;
    });
  })[0];
}

/// ∂u_c/∂x_d = i k_d û_c (derivative wavenumbers) at every local mode.
void derivative_of(const Modes& u, int c, int d, std::vector<Complex>& out) {
  out.resize(u.slab.local_modes());
  const int n = u.slab.grid.n;
  for_each_mode(u.slab, [&](std::size_t m, int ix, int iy, int iz) {
    const diag::C r = diag::derivative_term(n, d, ix, iy, iz, diag::C{u.u[c][m].real(), u.u[c][m].imag()});
    out[m] = Complex(r.re, r.im);
  });
}

/// Every statistic; `fft` (Fft3d or SlabFft) makes S₃'s derivatives on the grid.
template <class Fft>
Statistics statistics_of(const Modes& u, double nu, Fft& fft) {
  const Slab& sl = u.slab;
  const double D = gradient_norm2_of(u);  // Σ|k|²|û|²
  Statistics s = spectral_statistics(spectrum_of(u), D, nu);

  // ‖∇·u‖² = Σ |k·û|² (weighted), relative to ‖∇u‖² = Σ|k|²|û|²; helicity Σ Re(û*·(ik×û)).
  const int n = sl.grid.n;
  const auto dh = plane_sums(n, 2, sl.comm, [&](int iz, double* sum) {
    for_each_mode_of_plane(sl, iz, [&](std::size_t m, int ix, int iy) {
      diag::C v[3];
      u.at(m, v);
      const diag::DivergenceHelicityTerms t = diag::divergence_helicity_terms(n, ix, iy, iz, v);
      sum[0] += t.div2;
      sum[1] += t.helicity;
    });
  });
  s.divergence_rel = diag::divergence_rel(dh[0], D);
  s.helicity = dh[1];

  // S₃ from the three longitudinal derivatives on the grid.
  std::vector<Complex> dhat;
  std::vector<double> dx(sl.local_points());
  double s3 = 0.0;
  for (int c = 0; c < 3; ++c) {
    derivative_of(u, c, c, dhat);
    fft.inverse(dhat.data(), dx.data());
    const std::size_t plane = std::size_t(n) * n;
    const auto m = plane_sums(sl.nz, 2, sl.comm, [&](int z, double* sum) {
      for (std::size_t i = z * plane; i < (z + 1) * plane; ++i) diag::add_moments(dx[i], sum);
    });
    s3 += diag::skewness(m[0], m[1], double(sl.grid.points()));
  }
  s.S3 = s3 / 3.0;
  return s;
}

template <class Fft>
void vorticity_of(const Modes& u, Fft& fft, std::array<std::vector<double>, 3>& omega) {
  std::vector<Complex> w(u.slab.local_modes());
  const int n = u.slab.grid.n;
  for (int c = 0; c < 3; ++c) {
    for_each_mode(u.slab, [&](std::size_t m, int ix, int iy, int iz) {
      diag::C v[3], r[3];
      u.at(m, v);
      double k[3];
      modes::derivative_wavevector(n, ix, iy, iz, k);
      modes::curl(k[0], k[1], k[2], v, r);
      w[m] = Complex(r[c].re, r[c].im);
    });
    fft.inverse(w.data(), omega[c].data());
  }
}

template <class Fft>
void q_criterion_of(const Modes& u, Fft& fft, std::vector<double>& q) {
  const std::size_t points = u.slab.local_points();
  q.assign(points, 0.0);
  std::vector<Complex> dhat;
  std::vector<double> a(points), b(points);
  const std::ptrdiff_t np = std::ptrdiff_t(points);
  // Q = −½ Σ_ij ∂_i u_j ∂_j u_i = −½ [Σ_i (∂_i u_i)² + 2 Σ_{i<j} ∂_i u_j ∂_j u_i].
  for (int i = 0; i < 3; ++i)
    for (int j = i; j < 3; ++j) {
      derivative_of(u, j, i, dhat);  // ∂_i u_j
      fft.inverse(dhat.data(), a.data());
      double factor = -0.5;
      if (i != j) {
        derivative_of(u, i, j, dhat);  // ∂_j u_i
        fft.inverse(dhat.data(), b.data());
        factor = -1.0;
      }
      const double* pb = i != j ? b.data() : a.data();
#pragma omp parallel for schedule(static)
      for (std::ptrdiff_t p = 0; p < np; ++p) q[p] += factor * a[p] * pb[p];
    }
}

/// A one-rank view of a SpectralVector (its layout is a whole slab's).
struct WholeModes {
  Slab slab;
  Modes m;
  explicit WholeModes(const SpectralVector& u)
      : slab(Slab::whole_grid(u.grid)), m{slab, {u.c[0].data(), u.c[1].data(), u.c[2].data()}} {}
};

}  // namespace

std::vector<double> energy_spectrum(const SpectralVector& u) { return spectrum_of(WholeModes(u).m); }
std::vector<double> energy_spectrum(const SpectralSlab& u) { return spectrum_of(slab_modes(u)); }

double kolmogorov_length(double nu, double epsilon) { return std::pow(nu * nu * nu / epsilon, 0.25); }

double gradient_norm2(const SpectralVector& u) { return gradient_norm2_of(WholeModes(u).m); }
double gradient_norm2(const SpectralSlab& u) { return gradient_norm2_of(slab_modes(u)); }

SpectrumStatistics spectrum_statistics(const std::vector<double>& k, const std::vector<double>& E,
                                       double nu) {
  VH_CHECK(k.size() == E.size(), "spectrum: k and E differ in length");
  SpectrumStatistics s;
  double inv_k = 0.0, k2E = 0.0;
  for (std::size_t i = 0; i < k.size(); ++i) {
    s.K += E[i];
    if (k[i] > 0) inv_k += E[i] / k[i];
    k2E += k[i] * k[i] * E[i];
  }
  s.u_prime = std::sqrt(2.0 * s.K / 3.0);
  s.L = kPi / (2.0 * s.u_prime * s.u_prime) * inv_k;
  s.T = s.L / s.u_prime;
  s.epsilon = 2.0 * nu * k2E;
  s.lambda = std::sqrt(15.0 * s.u_prime * s.u_prime / (2.0 * k2E));  // ν cancels
  s.Re_lambda = s.u_prime * s.lambda / nu;
  return s;
}

Statistics spectral_statistics(const std::vector<double>& E, double D, double nu) {
  Statistics s;
  for (double e : E) s.K += e;
  double inv_k = 0.0;
  for (std::size_t n = 1; n < E.size(); ++n) inv_k += E[n] / double(n);
  s.u_prime = std::sqrt(2.0 * s.K / 3.0);
  s.epsilon = nu * D;
  s.enstrophy = 0.5 * D;
  s.L = kPi / (2.0 * s.u_prime * s.u_prime) * inv_k;
  s.T = s.L / s.u_prime;
  s.lambda = std::sqrt(15.0 * s.u_prime * s.u_prime / D);  // = √(15νu′²/ε)
  s.Re_lambda = s.u_prime * s.lambda / nu;
  return s;
}

void derivative(const SpectralVector& u, int c, int d, std::vector<Complex>& out) {
  derivative_of(WholeModes(u).m, c, d, out);
}

Statistics statistics(const SpectralVector& u, double nu, Fft3d& fft) {
  VH_CHECK(fft.n() == u.grid.n, "statistics: FFT size does not match the field");
  return statistics_of(WholeModes(u).m, nu, fft);
}

Statistics statistics(const SpectralSlab& u, double nu, SlabFft& fft) {
  VH_CHECK(fft.slab().grid.n == u.slab.grid.n, "statistics: FFT size does not match the field");
  return statistics_of(slab_modes(u), nu, fft);
}

Statistics statistics(const VectorField& u, double nu, Fft3d& fft) {
  SpectralVector c(u.grid);
  fft.forward(u, c);
  return statistics(c, nu, fft);
}

void vorticity(const SpectralVector& u, Fft3d& fft, VectorField& omega) {
  if (omega.grid.n != u.grid.n) omega = VectorField(u.grid);
  vorticity_of(WholeModes(u).m, fft, omega.c);
}

void vorticity(const SpectralSlab& u, SlabFft& fft, VectorField& omega) {
  if (omega.grid.n != u.slab.grid.n || omega.c[0].size() != u.slab.local_points())
    omega = VectorField(u.slab.grid, u.slab.nz);
  vorticity_of(slab_modes(u), fft, omega.c);
}

void q_criterion(const SpectralVector& u, Fft3d& fft, ScalarField& q) {
  q.grid = u.grid;
  q_criterion_of(WholeModes(u).m, fft, q.v);
}

void q_criterion(const SpectralSlab& u, SlabFft& fft, ScalarField& q) {
  q.grid = u.slab.grid;
  q_criterion_of(slab_modes(u), fft, q.v);
}

void velocity_on_grid(const SpectralSlab& u, SlabFft& fft, VectorField& out) {
  if (out.grid.n != u.slab.grid.n || out.c[0].size() != u.slab.local_points())
    out = VectorField(u.slab.grid, u.slab.nz);
  for (int c = 0; c < 3; ++c) fft.inverse(u.c[c].data(), out.c[c].data());
}

GradientInvariants gradient_invariants(const SpectralVector& u, Fft3d& fft) {
  const Grid& g = u.grid;
  VH_CHECK(fft.n() == g.n, "gradient_invariants: FFT size does not match the field");
  // a[3 i + j] = A_ij = ∂u_i/∂x_j on the grid.
  std::array<std::vector<double>, 9> a;
  std::vector<Complex> dhat;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      derivative(u, i, j, dhat);
      a[3 * i + j].resize(g.points());
      fft.inverse(dhat.data(), a[3 * i + j].data());
    }
  GradientInvariants out{ScalarField(g), ScalarField(g), 0.0};
  const std::ptrdiff_t np = std::ptrdiff_t(g.points());
  const double qw = ordered_sum<1>(np, [&](std::ptrdiff_t p, double* qw_sum) {
    double m[3][3];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) m[i][j] = a[3 * i + j][p];
    double tr2 = 0.0, tr3 = 0.0, w2 = 0.0;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        tr2 += m[i][j] * m[j][i];
        double m2_ij = 0.0;  // (A²)_ij
        for (int k = 0; k < 3; ++k) m2_ij += m[i][k] * m[k][j];
        tr3 += m2_ij * m[j][i];
        w2 += (m[i][j] - m[j][i]) * (m[i][j] - m[j][i]);  // = 2|ω|²
      }
    out.q.v[p] = -0.5 * tr2;
    out.r.v[p] = -tr3 / 3.0;
    qw_sum[0] += w2 / 8.0;  // Q_W = |ω|²/4
  })[0];
  out.q_w_mean = qw / double(np);
  return out;
}

}  // namespace vh
