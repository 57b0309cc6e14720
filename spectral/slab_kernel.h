// The spectral solver on R ranks (slab decomposition, core/slab.h): layouts, the all-to-all
// message order and the per-element math of one evaluation, shared by the CPU (FFTW,
// cpu_solver.cpp) and the GPU (cuFFT, gpu_slab.cu) so both run the same formulas.
//
// The evaluation has the structure of the fused passes (fused_kernel.h): only the kept box
// |kx|, |ky|, |kz| ≤ K is loaded and transformed, z lines first, x rows last. Spectral data
// (the state, the z passes) is split over the ranks by kept ky (jy = ky + K, the slab's
// block [jy0, jy0 + njy)), grid data (the y and x passes) by z-planes of the M grid; two
// all-to-all transposes connect them:
//   load  Z[f][j][kx][z] ← û, ω̂ = i k × û of the state at kz = signed(z), zero for |kz| > K
//         (f = 0…5, j = jy − jy0, kx = 0…K, z = 0…M−1: contiguous z lines)
//   ZI    inverse c2c along z of the 6 fields
//   Z→Y   all-to-all: rank p sends rank q Z[f][j][kx][z] for z of q's planes
//   YI    Y[f][zl][kx][y] ← the received lines at y = axis(ky), zero for |ky| > K; inverse
//         c2c along y (zl = z − z0: the rank's M-grid planes)
//   XC    X[f][zl][y][kx] ← Y (zero for kx > K, rows of M/2+1 complex = in-place real rows);
//         c2r of the 6 fields, u × ω on the grid, r2c of the 3 products
//   YF    Y[c][zl][kx][y] ← X (kx ≤ K); forward c2c along y
//   Y→Z   all-to-all back: Z[c][j][kx][z] ← the kept ky of every rank's planes
//   ZF    forward c2c along z; then post: per kept mode rhs_kernel.h post_values()
//         (projection, RK4 stage), and the next stage input written as Z's 6 fields (= load).
// Transforms are unnormalised as cuFFT's and FFTW's; post_values() scales by 1/M³. Every
// line is contiguous, so each pass is one batched plan.
//
// Message order (both directions, elements of `Cx`): the message between the rank holding
// kept ky block J and the rank holding planes P runs [f][jy ∈ J][kx][z ∈ P], z fastest; a
// rank's send and receive buffers hold one message per rank, in rank order.
#pragma once

#include <cstddef>

#include "core/hd.h"
#include "core/slab.h"
#include "spectral/fused_kernel.h"  // z_field()
#include "spectral/rhs_kernel.h"

namespace vh::spectral::kernel {

struct SlabLayout {
  Geometry g;        ///< N, M (transform size), dealias
  int k, nx, nk;     ///< kept |k_i| ≤ k; nx = k + 1 kx values, nk = 2k + 1 ky or kz values
  int ranks, rank;
  int jy0, njy;      ///< this rank's kept ky: jy0 … jy0 + njy − 1
  int z0, nzl;       ///< this rank's M-grid planes: z0 … z0 + nzl − 1
  int slots;         ///< ky slots of the state (core/slab.h)
  bool whole;        ///< one rank: slot = ky index

  /// The layout of rank s.rank for transforms of size m (g.m for the evaluation, N for
  /// max|u| on the N grid).
  static SlabLayout make(const Geometry& geo, const Slab& s) {
    SlabLayout l{};
    l.g = geo;
    l.k = geo.dealias == kTwoThirds ? (geo.n - 1) / 3 : geo.n / 2 - 1;
    l.nx = l.k + 1;
    l.nk = 2 * l.k + 1;
    l.ranks = s.ranks();
    l.rank = s.rank;
    l.whole = s.whole();
    l.jy0 = l.whole ? 0 : s.jy0;
    l.njy = l.whole ? l.nk : s.njy;
    l.z0 = block_start(geo.m, l.ranks, l.rank);
    l.nzl = block_count(geo.m, l.ranks, l.rank);
    l.slots = s.slots();
    return l;
  }

  VH_HD int jy0_of(int r) const { return block_start(nk, ranks, r); }
  VH_HD int njy_of(int r) const { return block_count(nk, ranks, r); }
  VH_HD int z0_of(int r) const { return block_start(g.m, ranks, r); }
  VH_HD int nzl_of(int r) const { return block_count(g.m, ranks, r); }

  /// State index (core/slab.h [kz][slot][kx]) of a kept mode (kx ≥ 0, signed ky, kz).
  VH_HD std::size_t state(int kx, int ky, int kz) const {
    const int slot = whole ? axis_index(ky, g.n) : ky + k - jy0;
    return (std::size_t(axis_index(kz, g.n)) * slots + slot) * g.nxh() + kx;
  }
  VH_HD std::size_t zi(int f, int j, int kx, int z) const { return ((std::size_t(f) * njy + j) * nx + kx) * g.m + z; }
  VH_HD std::size_t yi(int f, int zl, int kx, int y) const { return ((std::size_t(f) * nzl + zl) * nx + kx) * g.m + y; }
  VH_HD std::size_t xi(int f, int zl, int y, int kx) const {
    return ((std::size_t(f) * nzl + zl) * g.m + y) * g.mxh() + kx;
  }
  std::size_t z_size(int fields) const { return std::size_t(fields) * njy * nx * g.m; }
  std::size_t y_size(int fields) const { return std::size_t(fields) * nzl * nx * g.m; }
  std::size_t x_size(int fields) const { return std::size_t(fields) * nzl * g.m * g.mxh(); }

  // ---- the all-to-all (message order in the header comment) ----

  /// Offset in this rank's message buffer (to or from every rank of planes) of element
  /// (f, j, kx, z) of its kept ky block; `fields` per element.
  VH_HD std::size_t z_message(int fields, int f, int j, int kx, int z) const {
    const int q = block_owner(g.m, ranks, z), zq = z0_of(q), nq = nzl_of(q);
    return std::size_t(fields) * njy * nx * zq + ((std::size_t(f) * njy + j) * nx + kx) * nq + (z - zq);
  }
  /// Offset in this rank's message buffer (to or from every rank of kept ky) of element
  /// (f, jy, kx, zl) of its planes.
  VH_HD std::size_t y_message(int fields, int f, int jy, int kx, int zl) const {
    const int p = block_owner(nk, ranks, jy), j0 = jy0_of(p), np = njy_of(p);
    return std::size_t(fields) * nx * nzl * j0 + ((std::size_t(f) * np + (jy - j0)) * nx + kx) * nzl + zl;
  }
  /// Elements this rank sends to / receives from rank r: Z side (kept ky block to r's
  /// planes) and Y side (r's kept ky block on this rank's planes), with the offsets of
  /// those messages in the buffers.
  std::size_t z_count(int fields, int r) const { return std::size_t(fields) * njy * nx * nzl_of(r); }
  std::size_t z_offset(int fields, int r) const { return std::size_t(fields) * njy * nx * z0_of(r); }
  std::size_t y_count(int fields, int r) const { return std::size_t(fields) * njy_of(r) * nx * nzl; }
  std::size_t y_offset(int fields, int r) const { return std::size_t(fields) * jy0_of(r) * nx * nzl; }
};

/// Kept mode (kx, ky, kz) of the layout's box (rhs_kernel.h retained()).
VH_HD inline bool in_box(const SlabLayout& l, int ky, int kz) { return ky >= -l.k && ky <= l.k && kz >= -l.k && kz <= l.k; }

/// load: the `fields` (3: û; 6: û and ω̂) values of Z at (j, kx, z) from stage input a
/// (the state's values at the mode, or post's next input); zero outside the box.
template <class T>
VH_HD inline void z_fields(const SlabLayout& l, int fields, int j, int kx, int z, const Cx<T> a[3], Cx<T>* Z) {
  const int ky = l.jy0 + j - l.k, kz = signed_k(z, l.g.m);
  const bool keep = kz >= -l.k && kz <= l.k;
  for (int f = 0; f < fields; ++f)
    Z[l.zi(f, j, kx, z)] = keep ? z_field(f, T(kx), T(ky), T(kz), a) : Cx<T>{T(0), T(0)};
}

/// load at (j, kx, z) from the state (arr.u0).
template <class T>
VH_HD inline void load_z(const SlabLayout& l, int fields, int j, int kx, int z, const StageArrays<T>& arr,
                         Cx<T>* Z) {
  const int ky = l.jy0 + j - l.k, kz = signed_k(z, l.g.m);
  Cx<T> a[3] = {{T(0), T(0)}, {T(0), T(0)}, {T(0), T(0)}};
  if (kz >= -l.k && kz <= l.k) {
    const std::size_t nm = l.state(kx, ky, kz);
    for (int c = 0; c < 3; ++c) a[c] = arr.u0[c][nm];
  }
  z_fields(l, fields, j, kx, z, a, Z);
}

/// post at (j, kx, z) after ZF: for a kept kz, post_values() on the forward transform in Z
/// fields 0–2 (scaled by 1/M³ there), then the next stage input as Z's 6 fields (s = 1…4);
/// zero fields elsewhere. With s = kRhsOnly, n̂ goes to arr.a and Z is left alone.
template <class T>
VH_HD inline void post_z(const SlabLayout& l, int s, bool expl, T nu, T dt, int j, int kx, int z,
                         const StageArrays<T>& arr, Cx<T>* Z) {
  const int ky = l.jy0 + j - l.k, kz = signed_k(z, l.g.m);
  Cx<T> a[3] = {{T(0), T(0)}, {T(0), T(0)}, {T(0), T(0)}};
  if (kz >= -l.k && kz <= l.k) {
    for (int c = 0; c < 3; ++c) a[c] = Z[l.zi(c, j, kx, z)];
    if (!post_values(l.g, s, expl, nu, dt, kx, ky, kz, (long long)l.state(kx, ky, kz), a, arr)) return;
  } else if (s == kRhsOnly) {
    return;
  }
  z_fields(l, 6, j, kx, z, a, Z);
}

/// YI's input at (f, zl, kx, y): the received value of (f, jy, kx, zl), or zero for |ky| > K.
template <class T>
VH_HD inline Cx<T> y_from_message(const SlabLayout& l, int fields, int f, int zl, int kx, int y, const Cx<T>* msg) {
  const int ky = signed_k(y, l.g.m);
  if (ky < -l.k || ky > l.k) return Cx<T>{T(0), T(0)};
  return msg[l.y_message(fields, f, ky + l.k, kx, zl)];
}

/// XC's row input at (f, zl, y, kx), kx = 0 … M/2: Y's value for kx ≤ K, else zero.
template <class T>
VH_HD inline Cx<T> x_from_y(const SlabLayout& l, int f, int zl, int y, int kx, const Cx<T>* Y) {
  return kx < l.nx ? Y[l.yi(f, zl, kx, y)] : Cx<T>{T(0), T(0)};
}

}  // namespace vh::spectral::kernel
