// Per-pair math of the Gaussian-regularised Biot-Savart kernel, shared by the CPU reference
// (fmm/p2p.cpp) and the CUDA kernels: plain inline functions, __host__ __device__ under nvcc.
//
// docs/design.md "Vortex method definitions": for r = x - x_q, r = |r|, rho = r / (sqrt(2) sigma),
//   g(rho) = erf(rho) - (2/sqrt(pi)) rho exp(-rho^2),   G = g / (4 pi r^3),
//   F = 3 g - r dg/dr = 3 g - (4/sqrt(pi)) rho^3 exp(-rho^2),   F5 = F / (4 pi r^5),
//   u_m         += G (alpha_q x r)_m
//   du_m/dx_k   += G eps_{mak} alpha_{q,a} - F5 r_k (alpha_q x r)_m.
// For rho > 6.5 (float: 4.5) g = 1 to round-off and erf/exp are skipped.
// For rho < 0.5 both G and F5 come from their Taylor series in rho^2 (no cancellation; exact
// limits at r = 0: G = 1/(3 sqrt(pi) 2 sqrt(2) pi sigma^3), F5 = sqrt(2/pi) / (20 pi sigma^5)).
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

/// Radial factors of the kernel: G = g/(4 pi r^3) and F5 = F/(4 pi r^5), given r^2 and sigma.
template <class T>
VH_HD inline void kernel_radial(T r2, T sigma, T& G, T& F5) {
  const T pi = T(3.14159265358979323846);
  const T two_over_sqrtpi = T(1.12837916709551257390);
  const T s2 = T(1.41421356237309504880) * sigma;  // sqrt(2) sigma
  const T rho2 = r2 / (s2 * s2);
  if (rho2 < T(0.25)) {
    // g = (2/sqrt(pi)) sum_{n>=1} (-1)^{n+1} 2n rho^{2n+1} / (n! (2n+1));  F from r dg/dr.
    T sG = T(0), sF = T(0);
    T sn = T(1);          // rho^{2n-2} / n!, n = 1
    T qn = T(0);          // rho^{2n-4} / n!
    for (int n = 1; n <= 14; ++n) {
      const T sign = (n & 1) ? T(1) : T(-1);
      sG += sign * T(2 * n) / T(2 * n + 1) * sn;
      if (n >= 2) sF += sign * T(2 * n) * T(2 - 2 * n) / T(2 * n + 1) * qn;
      qn = (n == 1) ? T(0.5) : qn * rho2 / T(n + 1);
      sn = sn * rho2 / T(n + 1);
    }
    const T c3 = two_over_sqrtpi / (T(4) * pi * s2 * s2 * s2);
    G = c3 * sG;
    F5 = c3 / (s2 * s2) * sF;
    return;
  }
  const T r = vh_sqrt(r2);
  const T inv4pir3 = T(1) / (T(4) * pi * r2 * r);
  // Beyond rho^2 = 42.25 (double) or 20.25 (float), 1 - g < (2/sqrt(pi)) rho e^{-rho^2} is below
  // the type's round-off: g = 1, F = 3 exactly, without erf and exp.
  if (rho2 > (sizeof(T) >= 8 ? T(42.25) : T(20.25))) {
    G = inv4pir3;
    F5 = T(3) * inv4pir3 / r2;
    return;
  }
  const T rho = r / s2;
  const T e = two_over_sqrtpi * rho * vh_exp(-rho2);
  const T g = vh_erf(rho) - e;
  const T F = T(3) * g - T(2) * rho2 * e;
  G = g * inv4pir3;
  F5 = F * inv4pir3 / r2;
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
