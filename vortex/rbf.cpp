#include "vortex/rbf.h"

#include <cmath>
#include <vector>

#include "base/ordered_sum.h"
#include "core/fft.h"

namespace vh::vortex {
namespace {

/// The 1-D Gaussian weights (2πσ²)^{-1/2} exp(−(mh)²/2σ²) for |m h| ≤ cutoff σ, m = −R … R:
/// one factor of the separable cut-off mat-vec.
std::vector<double> gaussian_weights(const Grid& g, double sigma0, double cutoff) {
  const int R = int(std::floor(cutoff * sigma0 / g.h()));
  std::vector<double> w(2 * R + 1);
  for (int m = -R; m <= R; ++m)
    w[m + R] = std::exp(-0.5 * (m * g.h()) * (m * g.h()) / (sigma0 * sigma0)) / std::sqrt(2 * kPi * sigma0 * sigma0);
  return w;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return ordered_sum<1>(std::ptrdiff_t(a.size()), [&](std::ptrdiff_t i, double* s) { s[0] += a[i] * b[i]; })[0];
}

RbfResult solve_fft(const VectorField& omega, double sigma0, const RbfParams& prm, VectorField& alpha) {
  const Grid& g = omega.grid;
  const int n = g.n, nxh = n / 2 + 1;
  const double h = g.h();
  std::vector<double> s1 = symbol_factors(g, sigma0);
  for (double& v : s1) v /= h;
  const double s0 = s1[0] * s1[0] * s1[0];
  Fft3d fft(n);
  std::vector<Complex> c(g.modes());
  alpha = VectorField(g);
  for (int d = 0; d < 3; ++d) {
    fft.forward(omega.c[d].data(), c.data());
#pragma omp parallel for collapse(2) schedule(static)
    for (int iz = 0; iz < n; ++iz)
      for (int iy = 0; iy < n; ++iy)
        for (int ix = 0; ix < nxh; ++ix) {
          const double S = s1[ix] * s1[iy] * s1[iz];
          c[g.mode_index(ix, iy, iz)] /= std::max(S, prm.symbol_floor * s0);
        }
    fft.inverse(c.data(), alpha.c[d].data());
  }
  // The residual of the capped solve, measured with the (cube-cutoff) mat-vec.
  RbfResult r;
  std::vector<double> Aa;
  for (int d = 0; d < 3; ++d) {
    gaussian_matvec(alpha.c[d], g, sigma0, 8.0, Aa);
    double num = 0, den = 0;
    for (std::size_t i = 0; i < Aa.size(); ++i) {
      num += (Aa[i] - omega.c[d][i]) * (Aa[i] - omega.c[d][i]);
      den += omega.c[d][i] * omega.c[d][i];
    }
    if (den > 0) r.residual = std::max(r.residual, std::sqrt(num / den));
  }
  return r;
}

RbfResult solve_cg(const VectorField& omega, double sigma0, const RbfParams& prm, VectorField& alpha) {
  const Grid& g = omega.grid;
  const double h3 = g.h() * g.h() * g.h();
  alpha = VectorField(g);
  RbfResult res;
  const std::size_t np = g.points();
  std::vector<double> r(np), p(np), Ap(np);
  for (int d = 0; d < 3; ++d) {
    const std::vector<double>& b = omega.c[d];
    std::vector<double>& x = alpha.c[d];
    for (std::size_t i = 0; i < np; ++i) x[i] = b[i] * h3;  // α = ω h³: the 'direct' guess
    gaussian_matvec(x, g, sigma0, prm.cutoff, Ap);
    for (std::size_t i = 0; i < np; ++i) p[i] = r[i] = b[i] - Ap[i];
    const double bnorm = std::sqrt(dot(b, b));
    double rr = dot(r, r);
    int it = 0;
    while (bnorm > 0 && std::sqrt(rr) > prm.tol * bnorm && it < prm.max_iter) {
      gaussian_matvec(p, g, sigma0, prm.cutoff, Ap);
      const double a = rr / dot(p, Ap);
      for (std::size_t i = 0; i < np; ++i) {
        x[i] += a * p[i];
        r[i] -= a * Ap[i];
      }
      const double rr_new = dot(r, r);
      for (std::size_t i = 0; i < np; ++i) p[i] = r[i] + (rr_new / rr) * p[i];
      rr = rr_new;
      ++it;
    }
    // The k = 0 mode decouples in a circulant system: set it exactly, so that Σα is what the
    // solve implies (Σω / A(0), zero for a periodic ω) and not CG's accumulated round-off.
    double row = 0;
    for (double w : gaussian_weights(g, sigma0, prm.cutoff)) row += w;
    const double A0 = row * row * row;
    double mean_x = 0, mean_b = 0;
    for (std::size_t i = 0; i < np; ++i) mean_x += x[i], mean_b += b[i];
    const double shift = (mean_b / A0 - mean_x) / double(np);
    for (double& v : x) v += shift;
    res.iterations = std::max(res.iterations, it);
    if (bnorm > 0) res.residual = std::max(res.residual, std::sqrt(rr) / bnorm);
  }
  return res;
}

}  // namespace

std::vector<double> symbol_factors(const Grid& g, double sigma) {
  std::vector<double> s(g.n);
  for (int i = 0; i < g.n; ++i) {
    double v = 0;
    for (int a = -2; a <= 2; ++a) {
      const double q = sigma * (g.wavenumber(i) + double(a) * g.n);
      v += std::exp(-0.5 * q * q);
    }
    s[i] = v;
  }
  return s;
}

void gaussian_matvec(const std::vector<double>& in, const Grid& g, double sigma0, double cutoff,
                     std::vector<double>& out) {
  const int n = g.n;
  const std::vector<double> w = gaussian_weights(g, sigma0, cutoff);
  const int R = int(w.size() / 2);
  std::vector<double> a = in, b(in.size());
  out.resize(in.size());
  // Three 1-D circular convolutions: along x, then y, then z (stride 1, n, n²).
  const std::size_t stride[3] = {1, std::size_t(n), std::size_t(n) * n};
  for (int d = 0; d < 3; ++d) {
    std::vector<double>& src = d % 2 == 0 ? a : b;
    std::vector<double>& dst = d == 2 ? out : (d % 2 == 0 ? b : a);
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
          const int idx[3] = {i, j, k};
          const std::size_t base = g.index(i, j, k) - std::size_t(idx[d]) * stride[d];
          double s = 0;
          for (int m = -R; m <= R; ++m) s += w[m + R] * src[base + std::size_t(((idx[d] + m) % n + n) % n) * stride[d]];
          dst[g.index(i, j, k)] = s;
        }
  }
}

RbfResult rbf_strengths(const VectorField& omega, double sigma0, const RbfParams& prm, VectorField& alpha) {
  return prm.solver == RbfSolver::fft ? solve_fft(omega, sigma0, prm, alpha)
                                      : solve_cg(omega, sigma0, prm, alpha);
}

}  // namespace vh::vortex
