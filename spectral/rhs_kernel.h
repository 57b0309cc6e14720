// Per-mode and per-point math of the pseudo-spectral right-hand side and the RK4 stages,
// shared by the CPU (cpu_solver.cpp, fused.cpp) and the GPU (gpu_solver.cu, fused_impl.cuh,
// fft_callbacks.cu) so that both run the same formula (docs/style.md, "CUDA beside CPU").
//
// Equation (Rogallo 1981, NASA TM 81315; Canuto et al., Spectral Methods, §7.2):
//   ∂û/∂t = P(k) FFT[u × ω] − ν|k|² û,     P(k) = I − k kᵀ/|k|²,   ω̂ = i k × û,
// with the coefficient normalisation of core/grid.h (u = Σ c e^{ik·x}, c = FFT/N³).
//
// Index spaces. The state lives on the N-grid half layout [kz][ky][kx], kx = 0 … N/2. The
// transforms run on the M-grid (M = 3N/2 for the 3/2 rule, else M = N), whose half layout
// [kz][ky][kx] holds kx = 0 … M/2; its real arrays are stored in place with rows of
// 2(M/2+1) reals (FFTW/cuFFT in-place layout), x fastest.
//
// The retained set S (modes that may be non-zero): |k_i| ≤ N/2 − 1 in every direction (the
// Nyquist modes are dropped: their derivative is not defined), and for the 2/3 rule
// additionally 3|k_i| < N (Orszag 1971: alias free for quadratic products).
#pragma once

#include <cmath>

#include "core/hd.h"
#include "core/modes_kernel.h"
#include "spectral/solver.h"

namespace vh::spectral::kernel {

// The half layout's complex type and per-mode math are core/modes_kernel.h's (one home for the
// spectral solver, the diagnostics and the vortex lattice).
using modes::axis_index;
using modes::curl;
using modes::Cx;
using modes::project;
using modes::signed_k;

/// Which dealiasing the retained set uses (solver.h's Dealias, as an int for the device).
enum DealiasMode : int { kThreeHalves = 0, kTwoThirds = 1, kNone = 2 };

/// Geometry of one solver: N, M and the dealias mode.
struct Geometry {
  int n;       ///< grid points per direction of the state
  int m;       ///< transform size (3N/2 for the 3/2 rule, else N)
  int dealias; ///< DealiasMode
  VH_HD int nxh() const { return n / 2 + 1; }
  VH_HD int mxh() const { return m / 2 + 1; }
  VH_HD int mrow() const { return 2 * (m / 2 + 1); }  ///< real row length in place
};

/// The geometry of a solver with `n` points per direction and dealiasing `d` (solver.h).
inline Geometry make_geometry(int n, Dealias d) {
  Geometry g{};
  g.n = n;
  g.m = d == Dealias::three_halves ? 3 * n / 2 : n;
  g.dealias = d == Dealias::three_halves ? kThreeHalves : d == Dealias::two_thirds ? kTwoThirds : kNone;
  return g;
}

/// True when wavenumber (kx, ky, kz) is in the retained set S (see the header comment).
VH_HD inline bool retained(const Geometry& g, int kx, int ky, int kz) {
  const int h = g.n / 2 - 1;
  if (kx < 0) kx = -kx;
  if (ky < 0) ky = -ky;
  if (kz < 0) kz = -kz;
  if (kx > h || ky > h || kz > h) return false;
  if (g.dealias == kTwoThirds) return 3 * kx < g.n && 3 * ky < g.n && 3 * kz < g.n;
  return true;
}

/// Host: for each mode of a rank's state ([kz][slot][kx], core/slab.h), f(m, keep) with m its
/// storage index and keep whether it is in the retained set (how set_velocity() masks a field).
template <class F>
void for_each_state_mode(const Geometry& g, const vh::Slab& s, F&& f) {
  const int n = g.n, nxh = g.nxh(), slots = s.slots();
  for (int iz = 0; iz < n; ++iz)
    for (int j = 0; j < slots; ++j)
      for (int ix = 0; ix < nxh; ++ix)
        f(s.mode_index(ix, j, iz), retained(g, ix, signed_k(s.ky_index(j), n), signed_k(iz, n)));
}

/// u × ω at one grid point, written over u.
template <class T>
VH_HD inline void cross_in_place(T& ux, T& uy, T& uz, T wx, T wy, T wz) {
  const T a = uy * wz - uz * wy;
  const T b = uz * wx - ux * wz;
  const T c = ux * wy - uy * wx;
  ux = a;
  uy = b;
  uz = c;
}

/// Which RK4 stage a post-transform update performs (rk4.h gives the scheme).
enum Stage : int { kRhsOnly = 0, kStage1 = 1, kStage2 = 2, kStage3 = 3, kStage4 = 4 };

/// Per-mode update after the nonlinear term n̂ = P FFT[u×ω] of stage `s` is known.
///
/// Integrating factor (E = e^{−ν|k|²Δt}, E½ = e^{−ν|k|²Δt/2}; Rogallo 1981, eq. 3.3):
///   s=1: acc = E(u₀ + Δt/6 k₁);           a = E½(u₀ + Δt/2 k₁)
///   s=2: acc += Δt/3 E½ k₂;               a = E½ u₀ + Δt/2 k₂
///   s=3: acc += Δt/3 E½ k₃;               a = E u₀ + Δt E½ k₃
///   s=4: u₀ = acc + Δt/6 k₄;              a = u₀          (input of the next step)
/// Explicit viscosity: k_s = n̂_s − ν|k|² a_s (a_s the stage input), E = E½ = 1 above.
/// Arguments: u0, acc, a_prev (stage input a_s, explicit only) are per-component values of
/// this mode; `a` receives the next stage input. Returns nothing; writes u0/acc in place.
template <class T>
VH_HD inline void rk4_mode(int s, bool explicit_visc, T nu_k2, T dt, const Cx<T> nhat[3],
                           Cx<T> u0[3], Cx<T> acc[3], const Cx<T> a_prev[3], Cx<T> a[3]) {
  T e = 1, eh = 1;
  if (!explicit_visc) {
    eh = exp(-nu_k2 * dt * T(0.5));
    e = eh * eh;
  }
  const T dt2 = dt * T(0.5), dt3 = dt / T(3), dt6 = dt / T(6);
  for (int c = 0; c < 3; ++c) {
    Cx<T> k = nhat[c];
    if (explicit_visc) k = k - nu_k2 * a_prev[c];
    switch (s) {
      case kStage1:
        acc[c] = e * (u0[c] + dt6 * k);
        a[c] = eh * (u0[c] + dt2 * k);
        break;
      case kStage2:
        acc[c] = acc[c] + (dt3 * eh) * k;
        a[c] = eh * u0[c] + dt2 * k;
        break;
      case kStage3:
        acc[c] = acc[c] + (dt3 * eh) * k;
        a[c] = e * u0[c] + (dt * eh) * k;
        break;
      default:  // kStage4
        u0[c] = acc[c] + dt6 * k;
        a[c] = u0[c];
        break;
    }
  }
}

/// Contribution of state mode (ix, iy, iz) (N-grid indices, stored at nm) to K = Σ ½|û|²
/// and Σ |k|² ½|û|², with the half-layout weight (2 for 0 < kx < N/2).
template <class T>
VH_HD inline void mode_energy(const Geometry& g, int ix, int iy, int iz, long long nm, const Cx<T>* const u[3],
                              double& e, double& z) {
  double a = 0;
  for (int c = 0; c < 3; ++c) a += double(u[c][nm].re) * u[c][nm].re + double(u[c][nm].im) * u[c][nm].im;
  const double w = 0.5 * modes::mode_weight(ix, g.n);
  const double ky = signed_k(iy, g.n), kz = signed_k(iz, g.n);
  e = w * a;
  z = w * a * (double(ix) * ix + ky * ky + kz * kz);
}

/// Device-or-host pointers one stage works on (all arrays of Cx<T>).
template <class T>
struct StageArrays {
  Cx<T>* buf[6];     ///< transform buffers, M-grid half layout: u (0–2) then ω (3–5)
  Cx<T>* u0[3];      ///< state û(t_n), N-grid half layout
  Cx<T>* acc[3];     ///< RK4 accumulator, N-grid half layout
  Cx<T>* a[3];       ///< stored stage input (explicit viscosity) or rhs output (kRhsOnly)
  /// true when the inverse transforms read only the retained modes of buf[0..2] and make
  /// ω̂ = i k × û from them themselves (the GPU's cuFFT load callbacks, fft_callbacks.h):
  /// the passes below then write û of the retained modes only. false (the CPU): they write
  /// all six buffers, zeros outside the retained set.
  bool transforms_load_retained;
};

/// Writes the transform inputs of mode (ix, iy, iz) of the M grid: û and ω̂ = i k × û taken
/// from arr.u0 (N layout) inside the retained set, zero outside (see
/// StageArrays::transforms_load_retained for what is skipped when the transforms do it).
template <class T>
VH_HD inline void load_mode(const Geometry& g, int ix, int iy, int iz, const StageArrays<T>& arr) {
  const int ky = signed_k(iy, g.m), kz = signed_k(iz, g.m);
  const long long pm = ((long long)iz * g.m + iy) * g.mxh() + ix;
  if (!retained(g, ix, ky, kz)) {
    if (!arr.transforms_load_retained)
      for (int c = 0; c < 6; ++c) arr.buf[c][pm] = Cx<T>{T(0), T(0)};
    return;
  }
  const long long nm =
      ((long long)axis_index(kz, g.n) * g.n + axis_index(ky, g.n)) * g.nxh() + ix;
  Cx<T> u[3], w[3];
  for (int c = 0; c < 3; ++c) u[c] = arr.u0[c][nm];
  for (int c = 0; c < 3; ++c) arr.buf[c][pm] = u[c];
  if (arr.transforms_load_retained) return;
  curl(T(ix), T(ky), T(kz), u, w);
  for (int c = 0; c < 3; ++c) arr.buf[3 + c][pm] = w[c];
}

/// The RK4 work on one retained mode (ix ≥ 0, signed ky, kz; nm its N-layout index) once
/// its unnormalised forward transform of u × ω is known: scales by 1/M³, projects (k = 0 gets
/// no forcing), and performs RK4 stage `s` (rk4_mode) on arr.u0/acc/a. On entry nh holds the
/// transform, on exit the next stage input (s = 1…4; returns true), or with s = kRhsOnly
/// n̂ = P FFT[u×ω]/M³, which is also written to arr.a (returns false).
template <class T>
VH_HD inline bool post_values(const Geometry& g, int s, bool explicit_visc, T nu, T dt, int ix, int ky,
                              int kz, long long nm, Cx<T> nh[3], const StageArrays<T>& arr) {
  const T kx_ = T(ix), ky_ = T(ky), kz_ = T(kz);
  const T k2 = kx_ * kx_ + ky_ * ky_ + kz_ * kz_;
  const T scale = T(1) / (T(g.m) * T(g.m) * T(g.m));
  for (int c = 0; c < 3; ++c) nh[c] = scale * nh[c];
  if (k2 > T(0)) {
    project(kx_, ky_, kz_, nh);
  } else {  // the mean flow is constant (zero): no forcing of k = 0
    for (int c = 0; c < 3; ++c) nh[c] = Cx<T>{T(0), T(0)};
  }
  if (s == kRhsOnly) {
    for (int c = 0; c < 3; ++c) arr.a[c][nm] = nh[c];
    return false;
  }
  Cx<T> u0[3], acc[3], ap[3], a[3];
  for (int c = 0; c < 3; ++c) {
    u0[c] = arr.u0[c][nm];
    if (s != kStage1) acc[c] = arr.acc[c][nm];
    ap[c] = (s == kStage1 || !explicit_visc) ? u0[c] : arr.a[c][nm];
  }
  rk4_mode(s, explicit_visc, nu * k2, dt, nh, u0, acc, ap, a);
  for (int c = 0; c < 3; ++c) {
    if (s == kStage4)
      arr.u0[c][nm] = u0[c];
    else
      arr.acc[c][nm] = acc[c];
    if (explicit_visc && s != kStage4) arr.a[c][nm] = a[c];
    nh[c] = a[c];
  }
  return true;
}

/// The post-transform update of mode (ix, iy, iz) of the M grid after the forward
/// transform of u × ω into buf[0..2] (unnormalised, hence the 1/M³): projects and
/// truncates the nonlinear term, performs RK4 stage `s` (post_values), and writes the next
/// stage input and its curl into buf[0..5] (zero outside the retained set). With
/// s = kRhsOnly it writes n̂ = P FFT[u×ω]/M³ into arr.a and leaves the buffers alone.
template <class T>
VH_HD inline void post_mode(const Geometry& g, int s, bool explicit_visc, T nu, T dt, int ix,
                            int iy, int iz, const StageArrays<T>& arr) {
  const int ky = signed_k(iy, g.m), kz = signed_k(iz, g.m);
  const long long pm = ((long long)iz * g.m + iy) * g.mxh() + ix;
  if (!retained(g, ix, ky, kz)) {
    if (s != kRhsOnly && !arr.transforms_load_retained)
      for (int c = 0; c < 6; ++c) arr.buf[c][pm] = Cx<T>{T(0), T(0)};
    return;
  }
  const long long nm =
      ((long long)axis_index(kz, g.n) * g.n + axis_index(ky, g.n)) * g.nxh() + ix;
  Cx<T> a[3], w[3];
  for (int c = 0; c < 3; ++c) a[c] = arr.buf[c][pm];
  if (!post_values(g, s, explicit_visc, nu, dt, ix, ky, kz, nm, a, arr)) return;
  for (int c = 0; c < 3; ++c) arr.buf[c][pm] = a[c];
  if (arr.transforms_load_retained) return;
  curl(T(ix), T(ky), T(kz), a, w);
  for (int c = 0; c < 3; ++c) arr.buf[3 + c][pm] = w[c];
}

}  // namespace vh::spectral::kernel
