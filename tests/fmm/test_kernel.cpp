// Per-pair kernel (fmm/p2p_kernel.h): series branch, limits at r = 0, gradient against finite
// differences, and the single-blob velocity against an independent quadrature of the blob.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fmm/p2p_kernel.h"

namespace vh::fmm {
namespace {

const long double kPiL = 3.14159265358979323846264338327950288L;

// g = erf(rho) - (2/sqrt(pi)) rho e^{-rho^2} and F = 3 g - r dg/dr in long double, closed form.
void gF_long(long double rho, long double& g, long double& F) {
  const long double e = 2.0L / std::sqrt(kPiL) * rho * std::exp(-rho * rho);
  g = std::erf(rho) - e;
  F = 3 * g - 2 * rho * rho * e;
}

// Closed form in long double (accurate to ~1e-16 relative for rho >= 0.25, no series).
void radial_long(long double r, long double sigma, long double& G, long double& F5) {
  long double g, F;
  gF_long(r / (std::sqrt(2.0L) * sigma), g, F);
  G = g / (4 * kPiL * r * r * r);
  F5 = F / (4 * kPiL * std::pow(r, 5));
}

// kernel_radial against radial_long for rho = rho0, rho0 + 0.01, ... <= rho1 (sigma 0.37), to the
// relative tolerances tol_g (G) and tol_f (F5).
void expect_matches_long(double rho0, double rho1, double tol_g, double tol_f) {
  const double sigma = 0.37;
  for (double rho = rho0; rho <= rho1; rho += 0.01) {
    const double r = rho * std::sqrt(2.0) * sigma;
    double G, F5;
    kernel_radial(r * r, sigma, G, F5);
    long double Gl, Fl;
    radial_long(r, sigma, Gl, Fl);
    EXPECT_NEAR(G / double(Gl), 1.0, tol_g) << "rho " << rho;
    EXPECT_NEAR(F5 / double(Fl), 1.0, tol_f) << "rho " << rho;
  }
}

TEST(Kernel, SeriesMatchesClosedFormAroundSwitch) {
  // Against the long-double closed form (exact to ~1e-18 here): the series (rho < 0.5) is exact
  // to round-off; the double closed form (rho >= 0.5) loses ~rho^-2 = 4x in 3g - rho g', so F5
  // is allowed ~2e-14.
  expect_matches_long(0.3, 0.7, 2e-15, 2e-14);
}

TEST(Kernel, FarBranchMatchesClosedForm) {
  // For rho > 6.5 the kernel uses g = 1 (1 - g < 3e-18): continuous to round-off.
  expect_matches_long(6.0, 7.0, 2e-15, 2e-15);
}

TEST(Kernel, SharedExpErfKeepsItsBound) {
  // kernel_gF_shared_exp (Abramowitz & Stegun 7.1.26, the GPU's single-precision pairs) against
  // the long-double closed form where the pair loop takes it (0.5 <= rho <= 4.5): in double the
  // formula's own bound, |g error| <= 1.5e-7 and F = 3 g - 2 rho^2 ce three times it; in float
  // that plus the rounding of 1 - e t P(t) - ce (terms up to 1: a few 6e-8 half-ulps).
  double worst_g = 0;
  for (double rho = 0.5; rho <= 4.5; rho += 0.001) {
    long double gl, Fl;
    gF_long(rho, gl, Fl);
    double g, F;
    kernel_gF_shared_exp(rho, rho * rho, g, F);
    EXPECT_LE(std::abs(g - double(gl)), 1.5e-7) << "rho " << rho;
    EXPECT_LE(std::abs(F - double(Fl)), 4.5e-7) << "rho " << rho;
    worst_g = std::max(worst_g, std::abs(g - double(gl)));
    float gf, Ff;
    kernel_gF_shared_exp(float(rho), float(rho) * float(rho), gf, Ff);
    EXPECT_LE(std::abs(gf - double(gl)), 4e-7) << "rho " << rho;
    EXPECT_LE(std::abs(Ff - double(Fl)), 1.2e-6) << "rho " << rho;
  }
  EXPECT_GT(worst_g, 5e-8);  // the approximation, not the closed form, was evaluated
}

TEST(Kernel, LimitsAtZero) {
  const double sigma = 0.8;
  double G, F5;
  kernel_radial(0.0, sigma, G, F5);
  // docs/design.md: F/r^5 -> sqrt(2/pi)/(5 sigma^5); g ~ 4 rho^3 / (3 sqrt(pi)).
  EXPECT_NEAR(F5 * 4 * M_PI / (std::sqrt(2 / M_PI) / (5 * std::pow(sigma, 5))), 1.0, 1e-15);
  EXPECT_NEAR(G * 4 * M_PI / (4.0 / (3 * std::sqrt(M_PI)) / std::pow(std::sqrt(2.0) * sigma, 3)), 1.0, 1e-15);
}

TEST(Kernel, GradientMatchesFiniteDifferences) {
  // Central differences with step h: truncation ~h^2 u''' ~ 1e-10, round-off ~1e-16/h ~ 1e-11.
  const double a[3] = {0.3, -0.7, 0.45}, sigma = 0.6, h = 1e-5;
  for (double dist : {0.01, 0.2, 0.5, 0.85, 1.5, 3.0, 6.0}) {
    const double r0[3] = {dist * 0.48, -dist * 0.6, dist * 0.64};
    double u[3] = {}, g[3][3] = {};
    p2p_pair(r0, a, sigma, u, g);
    for (int k = 0; k < 3; ++k) {
      double rp[3] = {r0[0], r0[1], r0[2]}, rm[3] = {r0[0], r0[1], r0[2]};
      rp[k] += h;
      rm[k] -= h;
      double up[3] = {}, um[3] = {}, gd[3][3] = {};
      p2p_pair(rp, a, sigma, up, gd);
      p2p_pair(rm, a, sigma, um, gd);
      for (int m = 0; m < 3; ++m) EXPECT_NEAR(g[m][k], (up[m] - um[m]) / (2 * h), 1e-8 * (1 + std::abs(g[m][k])));
    }
  }
}

// Fraction of a Gaussian blob's strength within radius r, by composite Simpson quadrature of
// 4 pi s^2 zeta_sigma(s) (independent of erf); 20000 panels: error ~ (r/20000)^4 ~ 1e-13.
double enclosed_quadrature(double r, double sigma) {
  const int n = 20000;
  const double h = r / n, c = std::pow(2 * M_PI * sigma * sigma, -1.5) * 4 * M_PI;
  auto f = [&](double s) { return c * s * s * std::exp(-s * s / (2 * sigma * sigma)); };
  double sum = f(0) + f(r);
  for (int i = 1; i < n; ++i) sum += f(i * h) * ((i & 1) ? 4 : 2);
  return sum * h / 3;
}

TEST(Kernel, SingleBlobMatchesQuadrature) {
  // u = Gamma(r) alpha x r / (4 pi r^3) (Stokes/Gauss: the blob inside radius r acts as a point
  // vortex), Gamma from quadrature; required to 1e-12 relative from 0.1 sigma to 20 sigma.
  const double sigma = 0.45, a[3] = {0.2, 1.1, -0.4};
  const double dir[3] = {0.36, 0.48, 0.8};
  for (double q = 0.1; q <= 20.0001; q *= 1.25) {
    const double d = q * sigma, r[3] = {d * dir[0], d * dir[1], d * dir[2]};
    double u[3] = {}, g[3][3] = {};
    p2p_pair(r, a, sigma, u, g);
    const double gam = enclosed_quadrature(d, sigma) / (4 * M_PI * d * d * d);
    const double ref[3] = {gam * (a[1] * r[2] - a[2] * r[1]), gam * (a[2] * r[0] - a[0] * r[2]),
                           gam * (a[0] * r[1] - a[1] * r[0])};
    const double nref = std::sqrt(ref[0] * ref[0] + ref[1] * ref[1] + ref[2] * ref[2]);
    for (int m = 0; m < 3; ++m) EXPECT_NEAR(u[m], ref[m], 1e-12 * nref) << "r/sigma " << q;
  }
}

}  // namespace
}  // namespace vh::fmm
