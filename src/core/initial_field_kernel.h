// Per-mode math of the initial field (initial_field.h), shared by the CPU and the GPU.
// Only +, −, ×, ÷ and √ on doubles: bit-identical wherever IEEE rounding holds and no
// multiply–add is contracted (the CUDA file is compiled with -fmad=false).
#pragma once

#include <cstdint>

#include "core/hd.h"
#include "core/initial_field.h"
#include "core/modes_kernel.h"

namespace vh {
namespace init {

/// splitmix64 finaliser (Steele, Lea & Flood 2014): a bijective 64-bit mix.
VH_HD inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Uniform double in [0, 1) for draw `j` of the mode keyed by `key` (53 random bits).
VH_HD inline double uniform(std::uint64_t seed, std::uint64_t key, std::uint64_t j) {
  const std::uint64_t x = mix64(mix64(seed ^ 0x9e3779b97f4a7c15ULL) + mix64(key) + j);
  return double(x >> 11) * (1.0 / 9007199254740992.0);
}

/// Key of a signed global wavenumber (each component in (−2³⁰, 2³⁰)).
VH_HD inline std::uint64_t mode_key(int kx, int ky, int kz) {
  const std::uint64_t o = 1u << 30;
  return ((std::uint64_t(kx + o) << 42) ^ (std::uint64_t(ky + o) << 21)) ^ std::uint64_t(kz + o);
}

/// A uniformly distributed point (c, s) on the unit circle, by rejection from the square.
/// Draws 2j and 2j+1 of stream `stream`; at most 64 tries (failure odds 0.22⁶⁴).
VH_HD inline void unit_circle(std::uint64_t seed, std::uint64_t key, std::uint64_t stream,
                              double& c, double& s) {
  for (std::uint64_t t = 0; t < 64; ++t) {
    const std::uint64_t j = (stream << 8) + 2 * t;
    const double a = 2.0 * uniform(seed, key, j) - 1.0;
    const double b = 2.0 * uniform(seed, key, j + 1) - 1.0;
    const double r2 = a * a + b * b;
    if (r2 > 1e-3 && r2 <= 1.0) {
      const double r = sqrt(r2);
      c = a / r;
      s = b / r;
      return;
    }
  }
  c = 1.0;
  s = 0.0;
}

/// Rogallo's solenoidal mode (initial_field.h) for wavenumber (k1, k2, k3) ≠ 0 with
/// amplitude A: writes real and imaginary parts of the three components.
VH_HD inline void rogallo_mode(std::uint64_t seed, int k1, int k2, int k3, double A,
                               double re[3], double im[3]) {
  const std::uint64_t key = mode_key(k1, k2, k3);
  double c1, s1, c2, s2, cphi, sphi;
  unit_circle(seed, key, 0, c1, s1);      // e^{iθ₁}
  unit_circle(seed, key, 1, c2, s2);      // e^{iθ₂}
  unit_circle(seed, key, 2, cphi, sphi);  // φ
  const double ar = A * cphi * c1, ai = A * cphi * s1;  // α
  const double br = A * sphi * c2, bi = A * sphi * s2;  // β
  const double kk = sqrt(modes::k2(k1, k2, k3));
  const double k12 = sqrt(double(k1) * k1 + double(k2) * k2);
  if (k12 == 0.0) {  // k along z: the basis is e_x, e_y
    re[0] = ar; im[0] = ai;
    re[1] = br; im[1] = bi;
    re[2] = 0;  im[2] = 0;
    return;
  }
  const double d = kk * k12;
  re[0] = (ar * kk * k2 + br * k1 * k3) / d;
  im[0] = (ai * kk * k2 + bi * k1 * k3) / d;
  re[1] = (br * k2 * k3 - ar * kk * k1) / d;
  im[1] = (bi * k2 * k3 - ai * kk * k1) / d;
  re[2] = -br * k12 / kk;
  im[2] = -bi * k12 / kk;
}

/// Coefficients of the half-layout mode (ix, iy, iz) of an n³ grid for a random field with
/// shell amplitudes A[]. Zero for k = 0 and any Nyquist index; on the kx = 0 plane the
/// non-canonical half is the conjugate of its partner.
VH_HD inline void random_mode(std::uint64_t seed, int n, int ix, int iy, int iz, const double* A,
                              double re[3], double im[3]) {
  for (int d = 0; d < 3; ++d) re[d] = im[d] = 0.0;
  const int h = n / 2;
  if (ix == h || iy == h || iz == h) return;
  const int kx = ix, ky = modes::signed_k(iy, n), kz = modes::signed_k(iz, n);
  if (kx == 0 && ky == 0 && kz == 0) return;
  const double amp = A[modes::shell(modes::k2(kx, ky, kz))];
  const bool canonical = kx > 0 || ky > 0 || (ky == 0 && kz > 0);
  if (canonical) {
    rogallo_mode(seed, kx, ky, kz, amp, re, im);
  } else {
    rogallo_mode(seed, -kx, -ky, -kz, amp, re, im);
    for (int d = 0; d < 3; ++d) im[d] = -im[d];
  }
}

/// Taylor–Green coefficients: u = V₀ sin x cos y cos z, v = −V₀ cos x sin y cos z, w = 0.
/// With sin a = (e^{ia} − e^{−ia})/2i the mode (sx, sy, sz) ∈ {±1}³ holds
/// u: −i sx V₀/8 and v: +i sy V₀/8.
VH_HD inline void taylor_green_mode(double V0, int n, int ix, int iy, int iz, double re[3],
                                    double im[3]) {
  for (int d = 0; d < 3; ++d) re[d] = im[d] = 0.0;
  const int kx = ix, ky = modes::signed_k(iy, n), kz = modes::signed_k(iz, n);
  if (kx != 1 || (ky != 1 && ky != -1) || (kz != 1 && kz != -1)) return;
  im[0] = -V0 / 8.0;      // sx = +1 (the half layout holds kx ≥ 0 only)
  im[1] = ky * V0 / 8.0;
}

/// ABC (Arnold–Beltrami–Childress) flow at k = 1 with A = B = C = V₀:
/// u = V₀ (sin z + cos y, sin x + cos z, sin y + cos x), a Beltrami field (ω = u) and so an
/// exact Navier–Stokes solution decaying as e^{−νt}. With sin a = (e^{ia} − e^{−ia})/2i and
/// cos a = (e^{ia} + e^{−ia})/2 the nonzero half-layout coefficients are those below.
VH_HD inline void abc_mode(double V0, int n, int ix, int iy, int iz, double re[3], double im[3]) {
  for (int d = 0; d < 3; ++d) re[d] = im[d] = 0.0;
  const int kx = ix, ky = modes::signed_k(iy, n), kz = modes::signed_k(iz, n);
  const double h = 0.5 * V0;
  if (kx == 1 && ky == 0 && kz == 0) {  // sin x in u_y, cos x in u_z
    im[1] = -h;
    re[2] = h;
  } else if (kx == 0 && kz == 0 && (ky == 1 || ky == -1)) {  // cos y in u_x, sin y in u_z
    re[0] = h;
    im[2] = -ky * h;
  } else if (kx == 0 && ky == 0 && (kz == 1 || kz == -1)) {  // sin z in u_x, cos z in u_y
    im[0] = -kz * h;
    re[1] = h;
  }
}

/// The coefficients of one mode of the field an InitialScalars describes (initial_field.h): the
/// one generator the CPU and GPU loops call. A: the shell amplitudes where the loop runs.
struct ModeField {
  SpectrumShape shape;
  std::uint64_t seed;
  double V0;
  const double* A;
  VH_HD void operator()(int n, int ix, int iy, int iz, double re[3], double im[3]) const {
    if (shape == SpectrumShape::taylor_green)
      taylor_green_mode(V0, n, ix, iy, iz, re, im);
    else if (shape == SpectrumShape::abc)
      abc_mode(V0, n, ix, iy, iz, re, im);
    else
      random_mode(seed, n, ix, iy, iz, A, re, im);
  }
};
inline ModeField mode_field(const InitialScalars& s, const double* A) { return {s.shape, s.seed, s.V0, A}; }

}  // namespace init
}  // namespace vh
