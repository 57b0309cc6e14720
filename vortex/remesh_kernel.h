// Per-mode math of the reinitialisation from the points (vortex/remesh.h) and of the lattice
// field's velocity, shared by the CPU Lattice (remesh.cpp, solver.cpp) and the GPU solver
// (solver_gpu.cu) so that both run the same formula in the same order of operations (the GPU
// file is compiled without fused multiply-adds: the two differ only in exp and the FFTs).
//
// Index spaces (core/grid.h): an n³ lattice, half layout [kz][ky][kx], kx = 0 … n/2, ky and kz
// the signed wavenumbers of wavenumber(); coefficients normalised as grid.h (forward FFT / n³).
// Complex coefficients are Cx, layout-compatible with std::complex<double> and cuFFT's
// cufftDoubleComplex.
#pragma once

#include <cmath>
#include <cstddef>

#include "core/hd.h"

namespace vh::vortex::kernel {

struct Cx {
  double re, im;
};

/// Signed wavenumber of array index i along y or z (Grid::wavenumber; Nyquist → −n/2).
VH_HD inline int wavenumber(int i, int n) { return i <= n / 2 - 1 ? i : i - n; }

/// Half-layout index of mode (ix, iy, iz) (Grid::mode_index).
VH_HD inline std::size_t mode_index(int ix, int iy, int iz, int n) {
  return (std::size_t(iz) * n + iy) * std::size_t(n / 2 + 1) + ix;
}

/// The lattice symbol without its h⁻³, s(k) = s1[ix] s1[iy] s1[iz] (s1: rbf.h's
/// symbol_factors at σ₀), capped from below at floor · s(0) as the fft RBF solve is.
VH_HD inline double symbol(const double* s1, int ix, int iy, int iz, double floor) {
  const double s0 = s1[0] * s1[0] * s1[0];
  const double s = s1[ix] * s1[iy] * s1[iz], cap = floor * s0;
  return s < cap ? cap : s;  // std::max(s, cap)
}

/// c ← c / s: the blob sums' coefficients of the values × V the particles carry, made the
/// coefficients of the field (Lattice::field).
VH_HD inline void deconvolve(Cx& c, double s) {
  c.re /= s;
  c.im /= s;
}

/// c ← c f for a real factor f.
VH_HD inline void scale(Cx& c, double f) {
  c.re *= f;
  c.im *= f;
}

/// exp(−ντ|k|²): the exact viscous factor over the time τ (nu_tau = ντ).
VH_HD inline double diffusion_factor(double nu_tau, int kx, int ky, int kz) {
  return exp(-nu_tau * (double(kx) * kx + double(ky) * ky + double(kz) * kz));
}

/// The projection onto solenoidal fields of one mode, c ← c − k (k·c)/|k|², and c = 0 at k = 0.
/// Adds the mode's terms, times its half-layout weight w, to ‖k·c‖² (removed) and ‖|k| c‖²
/// (total), before the projection.
VH_HD inline void project(int kx, int ky, int kz, double w, Cx c[3], double& removed, double& total) {
  const double k[3] = {double(kx), double(ky), double(kz)};
  const double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
  if (k2 == 0) {
    for (int d = 0; d < 3; ++d) c[d] = Cx{0, 0};
    return;
  }
  const Cx kw{k[0] * c[0].re + k[1] * c[1].re + k[2] * c[2].re, k[0] * c[0].im + k[1] * c[1].im + k[2] * c[2].im};
  removed += w * (kw.re * kw.re + kw.im * kw.im);
  total += w * k2 *
           ((c[0].re * c[0].re + c[0].im * c[0].im) + (c[1].re * c[1].re + c[1].im * c[1].im) +
            (c[2].re * c[2].re + c[2].im * c[2].im));
  for (int d = 0; d < 3; ++d) {
    c[d].re -= k[d] * kw.re / k2;
    c[d].im -= k[d] * kw.im / k2;
  }
}

/// Whether the spherical filter keeps the mode: |k|² ≤ kmax2 ((fraction · n/2)²).
VH_HD inline bool kept(int kx, int ky, int kz, double kmax2) {
  return double(kx) * kx + double(ky) * ky + double(kz) * kz <= kmax2;
}

/// The velocity of the vorticity w at one mode: u = i k × w / |k|², and 0 at k = 0.
VH_HD inline void biot_savart(int kx, int ky, int kz, const Cx w[3], Cx u[3]) {
  const double k[3] = {double(kx), double(ky), double(kz)};
  const double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
  if (k2 == 0) {
    for (int d = 0; d < 3; ++d) u[d] = Cx{0, 0};
    return;
  }
  const double s = 1.0 / k2;
  for (int d = 0; d < 3; ++d) {
    const int a = (d + 1) % 3, b = (d + 2) % 3;
    // (k × w)_d = k_a w_b − k_b w_a; (i s)(x + i y) as a complex product: (0 x − s y) + i (0 y + s x)
    // (the 0 terms keep the signs of zeros of std::complex's product)
    const double x = k[a] * w[b].re - k[b] * w[a].re, y = k[a] * w[b].im - k[b] * w[a].im;
    u[d] = Cx{0.0 * x - s * y, 0.0 * y + s * x};
  }
}

/// The wavenumber of a derivative along a direction (core/diagnostics: the Nyquist mode −n/2
/// has no sign, so its odd derivative is zero).
VH_HD inline double derivative_k(int k, int n) { return k == -n / 2 ? 0.0 : double(k); }

/// The vorticity of the velocity u at one mode: w = i k × u with derivative_k (the spectral
/// curl of core/diagnostics' vorticity()).
VH_HD inline void curl(int kx, int ky, int kz, int n, const Cx u[3], Cx w[3]) {
  const double k[3] = {derivative_k(kx, n), derivative_k(ky, n), derivative_k(kz, n)};
  for (int d = 0; d < 3; ++d) {
    const int a = (d + 1) % 3, b = (d + 2) % 3;
    const double x = k[a] * u[b].re - k[b] * u[a].re, y = k[a] * u[b].im - k[b] * u[a].im;
    w[d] = Cx{-y, x};
  }
}

/// Resampling between lattices (refining: the exact spectral interpolation; coarsening: the
/// truncation): the half-layout index on the n_from lattice of the mode that mode (ix, iy, iz)
/// of the n_to lattice takes, or −1 where it is zero: every mode with |k_d| < min(n_from,
/// n_to)/2 in each direction is kept, the rest (Nyquist modes included) is zero.
VH_HD inline long long resample_source(int ix, int iy, int iz, int n_to, int n_from) {
  const int half = (n_to < n_from ? n_to : n_from) / 2;
  const int ky = wavenumber(iy, n_to), kz = wavenumber(iz, n_to);
  if (ix >= half || ky >= half || -ky >= half || kz >= half || -kz >= half) return -1;
  return static_cast<long long>(mode_index(ix, (ky + n_from) % n_from, (kz + n_from) % n_from, n_from));
}

}  // namespace vh::vortex::kernel
