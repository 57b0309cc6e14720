// Per-mode math of the reinitialisation from the points (vortex/remesh.h) and of the lattice
// field's velocity, shared by the CPU Lattice (remesh.cpp, solver.cpp) and the GPU solver
// (solver_gpu.cu) so that both run the same formula in the same order of operations (the GPU
// file is compiled without fused multiply-adds: the two differ only in exp and the FFTs).
//
// Index spaces (core/grid.h): an n³ lattice, half layout [kz][ky][kx], kx = 0 … n/2, ky and kz
// the signed wavenumbers of modes::signed_k; coefficients normalised as grid.h (forward FFT /
// n³). The wavenumbers, the complex type Cx (core/modes_kernel.h: std::complex<double>'s and
// cuFFT's layout), the projection, the curl and the Biot–Savart law are core/modes_kernel.h's;
// here is what only the lattice needs.
#pragma once

#include <cmath>
#include <cstddef>

#include "core/hd.h"
#include "core/modes_kernel.h"

namespace vh::vortex::kernel {

using Cx = modes::Cx<double>;

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
  return exp(-nu_tau * modes::k2(kx, ky, kz));
}

/// The projection onto solenoidal fields of one mode (modes::project), and c = 0 at k = 0.
/// Adds the mode's terms, times its half-layout weight w, to ‖k·c‖² (removed) and ‖|k| c‖²
/// (total), before the projection.
VH_HD inline void project(int kx, int ky, int kz, double w, Cx c[3], double& removed, double& total) {
  const double k[3] = {double(kx), double(ky), double(kz)};
  const double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
  if (k2 == 0) {
    for (int d = 0; d < 3; ++d) c[d] = Cx{0, 0};
    return;
  }
  const Cx kc = k[0] * c[0] + k[1] * c[1] + k[2] * c[2];
  removed += w * modes::abs2(kc);
  total += w * k2 * (modes::abs2(c[0]) + modes::abs2(c[1]) + modes::abs2(c[2]));
  modes::project(k[0], k[1], k[2], c);
}

/// Whether the spherical filter keeps the mode: |k|² ≤ kmax2 ((fraction · n/2)²).
VH_HD inline bool kept(int kx, int ky, int kz, double kmax2) { return modes::k2(kx, ky, kz) <= kmax2; }

/// Resampling between lattices (refining: the exact spectral interpolation; coarsening: the
/// truncation): the half-layout index on the n_from lattice of the mode that mode (ix, iy, iz)
/// of the n_to lattice takes, or −1 where it is zero: every mode with |k_d| < min(n_from,
/// n_to)/2 in each direction is kept, the rest (Nyquist modes included) is zero.
VH_HD inline long long resample_source(int ix, int iy, int iz, int n_to, int n_from) {
  const int half = (n_to < n_from ? n_to : n_from) / 2;
  const int ky = modes::signed_k(iy, n_to), kz = modes::signed_k(iz, n_to);
  if (ix >= half || ky >= half || -ky >= half || kz >= half || -kz >= half) return -1;
  return static_cast<long long>(
      modes::mode_index(ix, modes::axis_index(ky, n_from), modes::axis_index(kz, n_from), n_from));
}

}  // namespace vh::vortex::kernel
