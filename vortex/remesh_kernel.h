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

#include "core/grid.h"
#include "core/hd.h"
#include "core/modes_kernel.h"

namespace vh::vortex {

/// Which modes the reinitialisation keeps (vortex.filter): those strictly inside the cut-off
/// k_c = filter_fraction · N_p/2. At fraction 2/3 the stretching's products of two kept modes
/// alias onto |k_d| ≥ N_p − 2 k_c = k_c only, which no kept mode reaches (Orszag's rule); k_c
/// itself is such an alias wherever it is a wavenumber (N_p divisible by 3: the default refine 1.5
/// at every N), so it is not kept, as the spectral solver's 3/2 rule keeps |k_d| ≤ N/2 − 1.
enum class Filter {
  none,       ///< all
  spherical,  ///< |k| < k_c
  cube        ///< |k_d| < k_c in each direction (Orszag's 2/3 rule at fraction 2/3)
};

namespace kernel {

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

/// exp(−ντ|k|²): the exact viscous factor over the time τ (nu_tau = ντ). τ < 0 (the diagnostics'
/// half step back, vortex::output_nu_tau) gains at most e^50: a mode a step damped by more is
/// zero to round-off and stays zero (an unbounded gain would make 0 · inf of it).
VH_HD inline double diffusion_factor(double nu_tau, int kx, int ky, int kz) {
  return exp(fmin(-nu_tau * modes::k2(kx, ky, kz), 50.0));
}

/// exp(−ντ|k|²) − 1 (expm1: all its digits where ντ|k|² is small; → −1 on stiff shells): the
/// exact viscous factor over τ as an increment of the field it multiplies. The first half of
/// vortex.diffusion = integrating-factor's step (nu_tau = νΔt/2), added to the strengths.
VH_HD inline double diffusion_increment(double nu_tau, int kx, int ky, int kz) {
  return expm1(-nu_tau * modes::k2(kx, ky, kz));
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

/// The bound a kept wavenumber stays below for the cut-off kc: kc less 1e-9 of it, so that a
/// wavenumber equal to kc counts as on it however kc rounded (2/3 · 96/2 computes to 32 or to
/// 31.999999999999996 as the operations fall).
VH_HD inline double keep_below(double kc) { return kc * (1 - 1e-9); }

/// Whether filter f with cut-off kc (filter_fraction · N_p/2) keeps mode (kx, ky, kz).
VH_HD inline bool kept(Filter f, double kc, int kx, int ky, int kz) {
  const double b = keep_below(kc);
  switch (f) {
    case Filter::spherical: return modes::k2(kx, ky, kz) < b * b;
    case Filter::cube: return fabs(double(kx)) < b && fabs(double(ky)) < b && fabs(double(kz)) < b;
    default: return true;
  }
}

/// The largest |k_d| the cube with cut-off kc keeps: the largest whole number below it.
VH_HD inline int largest_kept(double kc) { return static_cast<int>(ceil(keep_below(kc))) - 1; }

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

/// The velocity of blobs sitting at the lattice points (vortex.velocity = lattice, and the
/// solver's velocity just after a reinitialisation, solver.cpp): blobs of core σ with strengths
/// α_j at x_j = h j induce at the lattice points the sampled field whose mode k is
///   û(k) = i S(k) × ĉ(k),   ∂û/∂x_l(k) = −T_l(k) × ĉ(k),
///   S(k) = Σ_a q w(q),  T_ln(k) = Σ_a q_l q_n w(q),  w(q) = exp(−σ²|q|²/2)/|q|²,  q = k + aN,
/// with ĉ the coefficients of α/h³ (grid.h normalisation) and a ∈ {−A … A}³ the aliases
/// (alias_reach); the mode k = 0 is zero (zero mean, as the FMM's). This is the periodic
/// Biot–Savart sum of the blobs, exact to the weight of the aliases left out.
constexpr int kMaxAliasReach = 8;

/// A: the aliases |a_d| ≤ A along each axis, so that the first one left out, |q_d| ≥ (2A + 1)
/// N/2, weighs exp(−σ²q_d²/2) ≤ e⁻³⁶ (2e-16): (2A + 1) π σ/h ≥ 6√2 (A = 1 from σ = 0.91 h,
/// A = 3 at σ = h/2).
VH_HD inline int alias_reach(double sigma, double h) {
  int a = 1;
  while (a < kMaxAliasReach && (2 * a + 1) * kPi * sigma / h < 8.4852813742385702) ++a;
  return a;
}

/// S (s[3]) and T (t[3][3], symmetric) of mode (kx, ky, kz) (signed wavenumbers) of the n³
/// lattice for blobs of core sigma, over the aliases |a_d| ≤ reach (≤ kMaxAliasReach).
VH_HD inline void blob_alias_sums(int kx, int ky, int kz, int n, double sigma, int reach, double s[3],
                                  double t[3][3]) {
  const int k[3] = {kx, ky, kz};
  double q[3][2 * kMaxAliasReach + 1], e[3][2 * kMaxAliasReach + 1];
  for (int d = 0; d < 3; ++d)
    for (int a = -reach; a <= reach; ++a) {
      const double v = static_cast<double>(k[d] + a * n);
      q[d][a + reach] = v;
      e[d][a + reach] = exp(-0.5 * sigma * sigma * v * v);
    }
  for (int l = 0; l < 3; ++l) {
    s[l] = 0;
    for (int m = 0; m < 3; ++m) t[l][m] = 0;
  }
  const int na = 2 * reach + 1;
  for (int c = 0; c < na; ++c)
    for (int b = 0; b < na; ++b)
      for (int a = 0; a < na; ++a) {
        const double v[3] = {q[0][a], q[1][b], q[2][c]};
        const double q2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        if (q2 == 0) continue;
        const double w = e[0][a] * e[1][b] * e[2][c] / q2;
        for (int l = 0; l < 3; ++l) {
          s[l] += v[l] * w;
          for (int m = 0; m < 3; ++m) t[l][m] += v[l] * v[m] * w;
        }
      }
}

/// One mode of the blobs' field: what = 0 gives û = i S × ĉ, what = 1 + l the gradient
/// ∂û/∂x_l = −T_l × ĉ; out = 0 at k = 0. c: the coefficients of α/h³.
VH_HD inline void blob_velocity(int kx, int ky, int kz, int n, double sigma, int reach, int what, const Cx c[3],
                                Cx out[3]) {
  if (kx == 0 && ky == 0 && kz == 0) {
    for (int d = 0; d < 3; ++d) out[d] = Cx{0, 0};
    return;
  }
  double s[3], t[3][3];
  blob_alias_sums(kx, ky, kz, n, sigma, reach, s, t);
  if (what == 0) {
    for (int d = 0; d < 3; ++d) out[d] = modes::times_i(modes::cross(d, s, c));
  } else {
    for (int d = 0; d < 3; ++d) out[d] = -1.0 * modes::cross(d, t[what - 1], c);
  }
}

}  // namespace kernel
}  // namespace vh::vortex
