#include "core/diagnostics.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/diagnostics_kernel.h"
#include "core/error.h"

namespace vh {
namespace {

/// Calls f(ix, iy, iz, flat index, k[3], weight) for every half-layout mode, in parallel.
template <class F>
void for_each_mode(const Grid& g, F&& f) {
  const int n = g.n, nxh = n / 2 + 1;
#pragma omp parallel for collapse(2) schedule(static)
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix < nxh; ++ix) {
        int k[3];
        diag::wavevector(n, ix, iy, iz, k);
        f(g.mode_index(ix, iy, iz), k, diag::weight(n, ix));
      }
}

double abs2(const SpectralVector& u, std::size_t m) {
  return std::norm(u.c[0][m]) + std::norm(u.c[1][m]) + std::norm(u.c[2][m]);
}

/// Wavenumber for a derivative: the Nyquist mode has no sign, so its odd derivative is zero.
double deriv_k(int k, int n) { return (k == -n / 2) ? 0.0 : double(k); }

}  // namespace

std::vector<double> energy_spectrum(const SpectralVector& u) {
  const Grid& g = u.grid;
  const int ns = g.max_shell() + 1;
  std::vector<double> E(ns, 0.0);
  // Per-thread bins, then a fixed-order sum, so the result does not depend on scheduling.
  const int n = g.n, nxh = n / 2 + 1;
#pragma omp parallel
  {
    std::vector<double> local(ns, 0.0);
#pragma omp for schedule(static)
    for (int iz = 0; iz < n; ++iz)
      for (int iy = 0; iy < n; ++iy)
        for (int ix = 0; ix < nxh; ++ix) {
          int k[3];
          diag::wavevector(n, ix, iy, iz, k);
          const double k2 = double(k[0]) * k[0] + double(k[1]) * k[1] + double(k[2]) * k[2];
          local[diag::shell(k2)] += 0.5 * diag::weight(n, ix) * abs2(u, g.mode_index(ix, iy, iz));
        }
#pragma omp critical
    for (int s = 0; s < ns; ++s) E[s] += local[s];
  }
  return E;
}

double gradient_norm2(const SpectralVector& u) {
  const Grid& g = u.grid;
  const int n = g.n, nxh = n / 2 + 1;
  double sum = 0.0;
#pragma omp parallel for collapse(2) reduction(+ : sum) schedule(static)
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix < nxh; ++ix) {
        int k[3];
        diag::wavevector(n, ix, iy, iz, k);
        const double k2 = double(k[0]) * k[0] + double(k[1]) * k[1] + double(k[2]) * k[2];
        sum += diag::weight(n, ix) * k2 * abs2(u, g.mode_index(ix, iy, iz));
      }
  return sum;
}

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
  const Grid& g = u.grid;
  out.resize(g.modes());
  const int n = g.n;
  for_each_mode(g, [&](std::size_t m, const int* k, double) {
    out[m] = Complex(0.0, deriv_k(k[d], n)) * u.c[c][m];
  });
}

Statistics statistics(const SpectralVector& u, double nu, Fft3d& fft) {
  const Grid& g = u.grid;
  VH_CHECK(fft.n() == g.n, "statistics: FFT size does not match the field");
  const double D = gradient_norm2(u);  // Σ|k|²|û|²
  Statistics s = spectral_statistics(energy_spectrum(u), D, nu);

  // ‖∇·u‖² = Σ |k·û|² (weighted); relative to ‖∇u‖² = Σ|k|²|û|². Helicity Σ Re(û*·(ik×û)).
  const int n = g.n, nxh = n / 2 + 1;
  double div2 = 0.0, hel = 0.0;
#pragma omp parallel for collapse(2) reduction(+ : div2, hel) schedule(static)
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix < nxh; ++ix) {
        int k[3];
        diag::wavevector(n, ix, iy, iz, k);
        const std::size_t m = g.mode_index(ix, iy, iz);
        Complex kd(0.0, 0.0);
        for (int c = 0; c < 3; ++c) kd += deriv_k(k[c], n) * u.c[c][m];
        div2 += diag::weight(n, ix) * std::norm(kd);
        const double kx = deriv_k(k[0], n), ky = deriv_k(k[1], n), kz = deriv_k(k[2], n);
        const Complex I(0.0, 1.0);
        const Complex w[3] = {I * (ky * u.c[2][m] - kz * u.c[1][m]), I * (kz * u.c[0][m] - kx * u.c[2][m]),
                              I * (kx * u.c[1][m] - ky * u.c[0][m])};
        double h = 0;
        for (int c = 0; c < 3; ++c) h += (std::conj(u.c[c][m]) * w[c]).real();
        hel += diag::weight(n, ix) * h;
      }
  s.divergence_rel = D > 0 ? std::sqrt(div2 / D) : 0.0;
  s.helicity = hel;

  // S₃ from the three longitudinal derivatives on the grid.
  std::vector<Complex> dhat;
  std::vector<double> dx(g.points());
  double s3 = 0.0;
  for (int c = 0; c < 3; ++c) {
    derivative(u, c, c, dhat);
    fft.inverse(dhat.data(), dx.data());
    double m2 = 0.0, m3 = 0.0;
    const std::ptrdiff_t np = std::ptrdiff_t(dx.size());
#pragma omp parallel for reduction(+ : m2, m3) schedule(static)
    for (std::ptrdiff_t i = 0; i < np; ++i) {
      const double v = dx[i];
      m2 += v * v;
      m3 += v * v * v;
    }
    m2 /= double(np);
    m3 /= double(np);
    s3 += m2 > 0 ? m3 / std::pow(m2, 1.5) : 0.0;
  }
  s.S3 = s3 / 3.0;
  return s;
}

Statistics statistics(const VectorField& u, double nu, Fft3d& fft) {
  SpectralVector c(u.grid);
  fft.forward(u, c);
  return statistics(c, nu, fft);
}

void vorticity(const SpectralVector& u, Fft3d& fft, VectorField& omega) {
  const Grid& g = u.grid;
  if (omega.grid.n != g.n) omega = VectorField(g);
  std::vector<Complex> w(g.modes());
  const int n = g.n;
  for (int c = 0; c < 3; ++c) {
    const int a = (c + 1) % 3, b = (c + 2) % 3;  // ω_c = ∂_a u_b − ∂_b u_a
    for_each_mode(g, [&](std::size_t m, const int* k, double) {
      w[m] = Complex(0.0, 1.0) * (deriv_k(k[a], n) * u.c[b][m] - deriv_k(k[b], n) * u.c[a][m]);
    });
    fft.inverse(w.data(), omega.c[c].data());
  }
}

void q_criterion(const SpectralVector& u, Fft3d& fft, ScalarField& q) {
  const Grid& g = u.grid;
  if (q.grid.n != g.n) q = ScalarField(g);
  std::fill(q.v.begin(), q.v.end(), 0.0);
  std::vector<Complex> dhat;
  std::vector<double> a(g.points()), b(g.points());
  const std::ptrdiff_t np = std::ptrdiff_t(g.points());
  // Q = −½ Σ_ij ∂_i u_j ∂_j u_i = −½ [Σ_i (∂_i u_i)² + 2 Σ_{i<j} ∂_i u_j ∂_j u_i].
  for (int i = 0; i < 3; ++i)
    for (int j = i; j < 3; ++j) {
      derivative(u, j, i, dhat);  // ∂_i u_j
      fft.inverse(dhat.data(), a.data());
      double factor = -0.5;
      if (i != j) {
        derivative(u, i, j, dhat);  // ∂_j u_i
        fft.inverse(dhat.data(), b.data());
        factor = -1.0;
      }
      const double* pb = i != j ? b.data() : a.data();
#pragma omp parallel for schedule(static)
      for (std::ptrdiff_t p = 0; p < np; ++p) q.v[p] += factor * a[p] * pb[p];
    }
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
  double qw = 0.0;
#pragma omp parallel for reduction(+ : qw) schedule(static)
  for (std::ptrdiff_t p = 0; p < np; ++p) {
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
    qw += w2 / 8.0;  // Q_W = |ω|²/4
  }
  out.q_w_mean = qw / double(np);
  return out;
}

}  // namespace vh
