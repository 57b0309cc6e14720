// Per-mode math of the half layout (core/grid.h), host and device: the one home of the signed
// wavenumber, the mode index and weight, the derivative wavenumber, the curl, the solenoidal
// projection and the Biot–Savart inversion, for the spectral solver (spectral/rhs_kernel.h),
// the diagnostics and initial field (core/) and the vortex solver's lattice (vortex/).
//
// Index spaces: an axis of n points holds the signed wavenumbers k = 0 … n/2 − 1 at indices
// 0 … n/2 − 1 and k = −n/2 … −1 at n/2 … n − 1 (the Nyquist index n/2 stands for −n/2). The
// half layout of an n³ grid is [kz][ky][kx] with kx = 0 … n/2 only; coefficients are
// normalised as grid.h (u = Σ c e^{ik·x}, c = FFT_forward / n³).
//
// Complex coefficients are Cx<T>, {re, im}: the layout of std::complex<T> (vh::Complex, the
// host API's type), cuFFT's complex types and double2/float2, so arrays of any of them are
// viewed as arrays of Cx. The functions below round as written (no library complex product),
// so host and device results agree wherever the device compiles without contracted
// multiply-adds; where a result keeps std::complex's signs of zeros it says so.
#pragma once

#include <cstddef>

#include "base/hd.h"

namespace vh::modes {

/// A complex number of the half layout (see the header comment).
template <class T>
struct Cx {
  T re, im;
};
template <class T>
VH_HD inline Cx<T> operator+(Cx<T> a, Cx<T> b) { return {a.re + b.re, a.im + b.im}; }
template <class T>
VH_HD inline Cx<T> operator-(Cx<T> a, Cx<T> b) { return {a.re - b.re, a.im - b.im}; }
/// s a for a real s.
template <class T>
VH_HD inline Cx<T> operator*(T s, Cx<T> a) { return {s * a.re, s * a.im}; }
/// a b as std::complex multiplies: (a.re b.re − a.im b.im) + i (a.re b.im + a.im b.re), every
/// term kept, so that a zero part of a gives the signs of zeros std::complex's product gives.
template <class T>
VH_HD inline Cx<T> operator*(Cx<T> a, Cx<T> b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
/// i a = −a.im + i a.re.
template <class T>
VH_HD inline Cx<T> times_i(Cx<T> a) { return {-a.im, a.re}; }
/// |a|².
template <class T>
VH_HD inline T abs2(Cx<T> a) { return a.re * a.re + a.im * a.im; }
/// Re(conj(a) b) = a.re b.re + a.im b.im.
template <class T>
VH_HD inline T re_conj_mul(Cx<T> a, Cx<T> b) { return a.re * b.re + a.im * b.im; }

/// Signed wavenumber of index i on an axis of n points (the Nyquist index n/2 → −n/2).
VH_HD inline int signed_k(int i, int n) { return i < n / 2 ? i : i - n; }
/// Index of the signed wavenumber k on an axis of n points (the inverse of signed_k).
VH_HD inline int axis_index(int k, int n) { return k >= 0 ? k : k + n; }
/// Half-layout index of mode (ix, iy, iz) of an n³ grid: (iz n + iy)(n/2 + 1) + ix.
VH_HD inline std::size_t mode_index(int ix, int iy, int iz, int n) {
  return (std::size_t(iz) * n + iy) * std::size_t(n / 2 + 1) + ix;
}
/// The mode (ix, iy, iz) of half-layout index m of an n³ grid (the inverse of mode_index).
VH_HD inline void mode_of(long long m, int n, int& ix, int& iy, int& iz) {
  const int nxh = n / 2 + 1;
  ix = static_cast<int>(m % nxh);
  const long long r = m / nxh;
  iy = static_cast<int>(r % n);
  iz = static_cast<int>(r / n);
}
/// Weight of a half-layout mode in a sum over the full spectrum: 1 on the kx = 0 and kx = n/2
/// planes, 2 elsewhere (the mode stands for its conjugate too).
VH_HD inline double mode_weight(int ix, int n) { return (ix == 0 || ix == n / 2) ? 1.0 : 2.0; }
/// |k|² in double, summed x, y, z.
VH_HD inline double k2(int kx, int ky, int kz) { return double(kx) * kx + double(ky) * ky + double(kz) * kz; }
/// Shell index round(|k|) from |k|² (shells of width 1 centred on integers).
VH_HD inline int shell(double k2) { return int(sqrt(k2) + 0.5); }
/// Wavenumber of a derivative along an axis of n points: the Nyquist mode −n/2 stands for ±n/2
/// alike, so its odd derivative is zero.
VH_HD inline double derivative_k(int k, int n) { return k == -n / 2 ? 0.0 : double(k); }

/// The derivative wavenumbers (derivative_k) of mode (ix, iy, iz) of an n³ grid.
VH_HD inline void derivative_wavevector(int n, int ix, int iy, int iz, double k[3]) {
  k[0] = derivative_k(ix, n);
  k[1] = derivative_k(signed_k(iy, n), n);
  k[2] = derivative_k(signed_k(iz, n), n);
}

/// Component d of k × v for a real k and complex v: k_a v_b − k_b v_a, (d, a, b) cyclic.
template <class T>
VH_HD inline Cx<T> cross(int d, const T k[3], const Cx<T> v[3]) {
  const int a = d == 2 ? 0 : d + 1, b = d == 0 ? 2 : d - 1;
  return k[a] * v[b] - k[b] * v[a];
}

/// ω̂ = i k × û for one mode (the caller picks k: derivative_k for a field's own derivative).
template <class T>
VH_HD inline void curl(T kx, T ky, T kz, const Cx<T> u[3], Cx<T> w[3]) {
  const T k[3] = {kx, ky, kz};
  for (int d = 0; d < 3; ++d) w[d] = times_i(cross(d, k, u));
}

/// The Leray projection v ← v − k (k·v)/|k|² onto the divergence-free part (Canuto et al.,
/// Spectral Methods, §7.2), as k (k·v) times 1/|k|²; k ≠ 0.
template <class T>
VH_HD inline void project(T kx, T ky, T kz, Cx<T> v[3]) {
  const T k2 = kx * kx + ky * ky + kz * kz;
  const Cx<T> kv = kx * v[0] + ky * v[1] + kz * v[2];
  const Cx<T> s = (T(1) / k2) * kv;
  v[0] = v[0] - kx * s;
  v[1] = v[1] - ky * s;
  v[2] = v[2] - kz * s;
}

/// The Biot–Savart law of one mode: the velocity û = i k × ω̂ / |k|² of the vorticity ω̂, and 0
/// at k = 0. The factor i/|k|² multiplies as the complex (0, 1/|k|²), so the signs of zeros
/// are std::complex's.
template <class T>
VH_HD inline void biot_savart(T kx, T ky, T kz, const Cx<T> w[3], Cx<T> u[3]) {
  const T k[3] = {kx, ky, kz};
  const T k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
  if (k2 == T(0)) {
    for (int d = 0; d < 3; ++d) u[d] = Cx<T>{T(0), T(0)};
    return;
  }
  const Cx<T> f{T(0), T(1) / k2};
  for (int d = 0; d < 3; ++d) u[d] = f * cross(d, k, w);
}

}  // namespace vh::modes
