// Per-pair math of the Gaussian-regularised Biot-Savart kernel, shared by the CPU reference
// (fmm/p2p.cpp) and the CUDA kernels: plain inline functions, __host__ __device__ under nvcc.
//
// docs/design.md "Vortex method definitions": for r = x - x_q, r = |r|, rho = r / (sqrt(2) sigma),
//   g(rho) = erf(rho) - (2/sqrt(pi)) rho exp(-rho^2),   G = g / (4 pi r^3),
//   F = 3 g - r dg/dr = 3 g - (4/sqrt(pi)) rho^3 exp(-rho^2),   F5 = F / (4 pi r^5),
//   u_m         += G (alpha_q x r)_m
//   du_m/dx_k   += G eps_{mak} alpha_{q,a} - F5 r_k (alpha_q x r)_m.
// For rho > 6.5 (float: 4.5) g = 1 to round-off and erf/exp are skipped (far_rho2); the GPU's
// single-precision loop also where the tolerance allows (p2p_gpu.h p2p_singular_rho2).
// For rho < 0.5 both G and F5 come from their Taylor series in rho^2 (no cancellation; exact
// limits at r = 0: G = 1/(3 sqrt(pi) 2 sqrt(2) pi sigma^3), F5 = sqrt(2/pi) / (20 pi sigma^5)).
// The radial factors live here alone: kernel_radial (with p2p_pair the reference), the CPU's
// vector loop (fmm/p2p.cpp) and the GPU's pair loop (fmm/p2p_gpu.cu) take the branches,
// F, g and the scaling from the functions below; those two loops only rearrange p2p_pair's sums.
#pragma once

#include <math.h>

#include "base/hd.h"

namespace vh::fmm {

VH_HD inline double vh_erf(double x) { return erf(x); }
VH_HD inline float vh_erf(float x) { return erff(x); }
VH_HD inline double vh_exp(double x) { return exp(x); }
VH_HD inline float vh_exp(float x) { return expf(x); }
VH_HD inline double vh_sqrt(double x) { return sqrt(x); }
VH_HD inline float vh_sqrt(float x) { return sqrtf(x); }
#if !defined(__CUDACC__)
// Host only: long double, the reference of the CPU P2P's accuracy test.
inline long double vh_erf(long double x) { return erfl(x); }
inline long double vh_exp(long double x) { return expl(x); }
inline long double vh_sqrt(long double x) { return sqrtl(x); }
#endif

/// The constants of the kernel.
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;  // 2 / sqrt(pi)
constexpr double kFourPi = 12.566370614359172954;          // 4 pi

/// The branches of the radial factors: below rho^2 = kSeriesRho2 the series (kernel_series),
/// above far_rho2<T>() g = 1 and F = 3 to T's round-off, the closed form (kernel_gF) between.
constexpr double kSeriesRho2 = 0.25;
/// Beyond rho^2 = 42.25 (double) or 20.25 (float), 1 - g < (2/sqrt(pi)) rho e^{-rho^2} is below
/// the type's round-off: g = 1, F = 3, without erf and exp.
template <class T>
VH_HD inline T far_rho2() {
  return sizeof(T) >= 8 ? T(42.25) : T(20.25);
}

/// ce = (2/sqrt(pi)) rho e^{-rho^2} from rho and e^{-rho^2}: g = erf(rho) - ce, r dg/dr = 2 rho^2 ce.
template <class T>
VH_HD inline T kernel_ce(T rho, T exp_neg_rho2) {
  return T(kTwoOverSqrtPi) * rho * exp_neg_rho2;
}

/// F = 3 g - r dg/dr = 3 g - 2 rho^2 ce.
template <class T>
VH_HD inline T kernel_F(T g, T rho2, T ce) {
  return T(3) * g - T(2) * rho2 * ce;
}

/// g and F in closed form from rho and rho^2 (erf and exp of the type): g = erf(rho) - ce.
/// The CPU's vector loop (fmm/p2p.cpp) forms g = 1 - (erfc(rho) + ce) from its own erfc
/// instead, the same g without cancellation in erfc; F and the factors below are shared.
template <class T>
VH_HD inline void kernel_gF(T rho, T rho2, T& g, T& F) {
  const T ce = kernel_ce(rho, vh_exp(-rho2));
  g = vh_erf(rho) - ce;
  F = kernel_F(g, rho2, ce);
}

/// g and F as kernel_gF, with erf(rho) = 1 - t P(t) e^{-rho^2}, t = 1 / (1 + 0.3275911 rho),
/// P of degree 4 (Abramowitz & Stegun 7.1.26, |error of erf| <= 1.5e-7 for rho >= 0): the one
/// e^{-rho^2} serves erf and ce, one division and five multiply-adds replace erf.  For the GPU's
/// single-precision pair loop, where 1.5e-7 is about the type's round-off of erf near 1; g has
/// an absolute error <= 1.5e-7 (relative 2e-6 at rho = 0.5, where g = 0.081), F <= 4.5e-7.
template <class T>
VH_HD inline void kernel_gF_shared_exp(T rho, T rho2, T& g, T& F) {
  const T e = vh_exp(-rho2);
  const T t = T(1) / (T(1) + T(0.3275911) * rho);
  const T tp =
      t * (T(0.254829592) + t * (T(-0.284496736) + t * (T(1.421413741) + t * (T(-1.453152027) + t * T(1.061405429)))));
  const T ce = kernel_ce(rho, e);
  g = T(1) - e * tp - ce;
  F = kernel_F(g, rho2, ce);
}

/// G = g a and F5 = F a / r^2 from g, F, a = 1/(4 pi r^3) (or 1/r^3 where the caller applies
/// 1/(4 pi) later) and ir2 = 1/r^2.
template <class T>
VH_HD inline void kernel_scale(T g, T F, T a, T ir2, T& G, T& F5) {
  G = g * a;
  F5 = F * a * ir2;
}

/// G and F5 for rho^2 < kSeriesRho2 from their Taylor series in rho^2 (s2 = sqrt(2) sigma):
///   g = (2/sqrt(pi)) sum_{n>=1} (-1)^{n+1} 2n rho^{2n+1} / (n! (2n+1)),  F from r dg/dr.
template <class T>
VH_HD inline void kernel_series(T rho2, T s2, T& G, T& F5) {
  const T pi = T(3.14159265358979323846);
  T sG = T(0), sF = T(0);
  T sn = T(1);  // rho^{2n-2} / n!, n = 1
  T qn = T(0);  // rho^{2n-4} / n!
  for (int n = 1; n <= 14; ++n) {
    const T sign = (n & 1) ? T(1) : T(-1);
    sG += sign * T(2 * n) / T(2 * n + 1) * sn;
    if (n >= 2) sF += sign * T(2 * n) * T(2 - 2 * n) / T(2 * n + 1) * qn;
    qn = (n == 1) ? T(0.5) : qn * rho2 / T(n + 1);
    sn = sn * rho2 / T(n + 1);
  }
  const T c3 = T(kTwoOverSqrtPi) / (T(4) * pi * s2 * s2 * s2);
  G = c3 * sG;
  F5 = c3 / (s2 * s2) * sF;
}

/// Radial factors of the kernel: G = g/(4 pi r^3) and F5 = F/(4 pi r^5), given r^2 and sigma.
/// The reference form; the CPU's vector loop and the GPU's pair loop branch the same way on
/// the same pieces with their own 1/r.
template <class T>
VH_HD inline void kernel_radial(T r2, T sigma, T& G, T& F5) {
  const T s2 = T(1.41421356237309504880) * sigma;  // sqrt(2) sigma
  const T rho2 = r2 / (s2 * s2);
  if (rho2 < T(kSeriesRho2)) return kernel_series(rho2, s2, G, F5);
  const T r = vh_sqrt(r2);
  const T inv4pir3 = T(1) / (T(kFourPi) * r2 * r), ir2 = T(1) / r2;
  if (rho2 > far_rho2<T>()) return kernel_scale(T(1), T(3), inv4pir3, ir2, G, F5);
  T g, F;
  kernel_gF(r / s2, rho2, g, F);
  kernel_scale(g, F, inv4pir3, ir2, G, F5);
}

/// Adds the velocity u[3] and gradient grad[m][k] = du_m/dx_k induced at x by one blob of
/// strength a[3] and core radius sigma, r[3] = x - x_q.
template <class T>
VH_HD inline void p2p_pair(const T r[3], const T a[3], T sigma, T u[3], T grad[3][3]) {
  T G, F5;
  kernel_radial(r[0] * r[0] + r[1] * r[1] + r[2] * r[2], sigma, G, F5);
  const T c[3] = {a[1] * r[2] - a[2] * r[1], a[2] * r[0] - a[0] * r[2], a[0] * r[1] - a[1] * r[0]};
  for (int m = 0; m < 3; ++m) u[m] += G * c[m];
  // G eps_{mak} a_a
  grad[0][1] -= G * a[2];
  grad[0][2] += G * a[1];
  grad[1][0] += G * a[2];
  grad[1][2] -= G * a[0];
  grad[2][0] -= G * a[1];
  grad[2][1] += G * a[0];
  for (int m = 0; m < 3; ++m)
    for (int k = 0; k < 3; ++k) grad[m][k] -= F5 * r[k] * c[m];
}

}  // namespace vh::fmm
