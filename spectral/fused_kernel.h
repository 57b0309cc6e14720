// Layouts and per-element math of the fused, pruned 3-D transforms (fused.h), shared by the
// CPU reference passes (fused.cpp) and the GPU kernels (fused_impl.cuh).
//
// One evaluation of the nonlinear term as five passes over 1-D lines of the M grid, each
// touching only what the retained box |kx|, |ky|, |kz| ≤ K (rhs_kernel.h retained()) needs:
//   ZI  inverse along z of the (kx ≤ K, |ky| ≤ K) columns, reading |kz| ≤ K of the stage
//       input â and writing û, ω̂ = i k × â (6 fields) into zb;
//   YI  inverse along y of zb (|ky| ≤ K rows, zero elsewhere) into yb;
//   XC  per (y, z) row: complex-to-real along x of the 6 fields (zero above K), u × ω on the
//       row, real-to-complex of the 3 products keeping kx ≤ K, back into yb fields 0–2;
//   YF  forward along y of yb fields 0–2 keeping |ky| ≤ K, into zb fields 0–2;
//   ZFP forward along z keeping |kz| ≤ K, then rhs_kernel.h post_values() per mode (projection,
//       integrating factor, RK4 stage) and, unless the stage only wants n̂, ZI of the next
//       stage input from the values in hand.
// Transforms are unnormalised (forward e^{−2πi jk/M}, inverse e^{+2πi jk/M}), as cuFFT's, so
// the product of the five passes is the M³ FFT of rhs_kernel.h and post_values() scales by
// 1/M³. XC packs two real lines into one complex one: z = u + iω inverse, p_x + i p_y forward.
//
// Layouts (complex, x fastest; kx padded to nxp, a multiple of kTile, the pad kept zero):
//   zb[f][z][jy][kx]  f = 0…5, z = 0…M−1, jy = ky + K = 0…2K, kx = 0…nxp−1
//   yb[f][z][y][kx]   f = 0…5, z, y = 0…M−1
//   state             rhs_kernel.h N-grid half layout [kz][ky][kx]
// (On R > 1 ranks: the rank's part of each, FusedLayout below.)
#pragma once

#include <cstddef>

#include "core/hd.h"
#include "core/slab.h"  // block_start, block_count, block_owner
#include "spectral/rhs_kernel.h"

namespace vh::spectral::kernel {

/// Consecutive kx columns one block of a column pass handles (staged through shared memory).
constexpr int kTile = 8;

/// Sizes of the fused transforms' buffers for geometry g, on one rank or on one rank's slab.
///
/// On R > 1 ranks (core/slab.h, slab_kernel.h) the z passes (ZI, ZFP) run over the rank's
/// kept ky block (jy0 … jy0 + njy − 1) and write zb[f][z][j][kx] (j = jy − jy0), the y and x
/// passes over its M-grid planes and read and write zt and yb[f][zl][y][kx] (zl = z − z0).
/// zt groups the kept ky by the rank p whose block holds them, zt[f][p][zl][jy − jy0(p)][kx],
/// so that what rank p's z passes send this rank, zb_p[f][this rank's planes][·][·], is one
/// contiguous piece of zt and the exchange (gpu_slab.cuh) moves pieces without packing. On one
/// rank (make(g)) j = jy, zl = z and zt is zb: the offsets are the one-rank ones.
struct FusedLayout {
  Geometry g;
  int k;    ///< largest retained |k_i|
  int nx;   ///< kx = 0 … K: K + 1
  int nxp;  ///< nx rounded up to a multiple of kTile
  int nk;   ///< 2K + 1 signed ky or kz values
  int jy0, njy;  ///< kept ky of this rank's z passes (0, nk on one rank)
  int nzl;       ///< M-grid planes of this rank's y and x passes (M on one rank)
  int slots;     ///< ky slots of the state (N on one rank)
  bool whole;    ///< one rank: slot = ky index
  int ranks;     ///< ranks of the decomposition (1 on one rank): zt's ky blocks

  static FusedLayout make(const Geometry& g) {
    FusedLayout l{};
    l.g = g;
    l.k = g.dealias == kTwoThirds ? (g.n - 1) / 3 : g.n / 2 - 1;
    l.nx = l.k + 1;
    l.nxp = (l.nx + kTile - 1) / kTile * kTile;
    l.nk = 2 * l.k + 1;
    l.jy0 = 0;
    l.njy = l.nk;
    l.nzl = g.m;
    l.slots = g.n;
    l.whole = true;
    l.ranks = 1;
    return l;
  }
  /// One rank of R: its kept ky block, its planes and its state slots (slab_kernel.h's
  /// SlabLayout of the same slab gives the same ranges).
  static FusedLayout make(const Geometry& g, int jy0, int njy, int nzl, int slots, bool whole, int ranks) {
    FusedLayout l = make(g);
    if (whole) return l;
    l.jy0 = jy0;
    l.njy = njy;
    l.nzl = nzl;
    l.slots = slots;
    l.whole = false;
    l.ranks = ranks;
    return l;
  }
  /// Rank p's kept ky block: jy0_of(p) … jy0_of(p) + njy_of(p) − 1 (core/slab.h blocks).
  VH_HD int jy0_of(int p) const { return block_start(nk, ranks, p); }
  VH_HD int njy_of(int p) const { return block_count(nk, ranks, p); }
  VH_HD std::size_t zb(int f, int z, int j, int kx) const {
    return ((std::size_t(f) * g.m + z) * njy + j) * nxp + kx;
  }
  VH_HD std::size_t zt(int f, int zl, int jy, int kx) const {
    if (ranks == 1) return ((std::size_t(f) * nzl + zl) * nk + jy) * nxp + kx;
    const int p = block_owner(nk, ranks, jy), j0 = jy0_of(p);
    return ((std::size_t(f) * nk + j0) * nzl + std::size_t(zl) * njy_of(p) + (jy - j0)) * nxp + kx;
  }
  /// zt's piece of rank p's ky block in field f: nzl · njy_of(p) · nxp values from here.
  std::size_t zt_piece(int f, int p) const { return (std::size_t(f) * nk + jy0_of(p)) * nzl * nxp; }
  /// zb's piece of planes z0 … z0 + nz − 1 in field f: nz · njy · nxp values from here.
  std::size_t zb_piece(int f, int z0) const { return (std::size_t(f) * g.m + z0) * njy * nxp; }
  VH_HD std::size_t yb(int f, int zl, int y, int kx) const {
    return ((std::size_t(f) * nzl + zl) * g.m + y) * nxp + kx;
  }
  /// State index (core/slab.h [kz][slot][kx]) of (kx ≥ 0, signed ky, kz).
  VH_HD std::size_t state(int kx, int ky, int kz) const {
    const int slot = whole ? axis_index(ky, g.n) : ky + k - jy0;
    return (std::size_t(axis_index(kz, g.n)) * slots + slot) * g.nxh() + kx;
  }
  std::size_t zb_size() const { return std::size_t(6) * g.m * njy * nxp; }
  std::size_t zt_size() const { return std::size_t(6) * nzl * nk * nxp; }
  std::size_t yb_size() const { return std::size_t(6) * nzl * g.m * nxp; }
};

/// Field f of the inverse z pass at mode (kx, ky, kz) from the stage input a: a_f (f < 3) or
/// component f − 3 of ω̂ = i k × a.
template <class T>
VH_HD inline Cx<T> z_field(int f, T kx, T ky, T kz, const Cx<T> a[3]) {
  if (f < 3) return a[f];
  Cx<T> w[3];
  curl(kx, ky, kz, a, w);
  return w[f - 3];
}

/// Element j of the packed complex line z = u + iω of the x pass, from the half spectra U, W
/// (kx = 0 … nx−1) of two real lines: Z(j) = U(j) + i W(j) for j < nx, conj(U(M−j)) +
/// i conj(W(M−j)) for M − j < nx, else 0. The kx = 0 values count with their real parts only
/// (cuFFT's C2R ignores their imaginary parts too).
template <class T>
VH_HD inline Cx<T> x_pack(int j, int m, int nx, const Cx<T>* u, const Cx<T>* w) {
  Cx<T> a, b;
  if (j < nx) {
    a = u[j];
    b = w[j];
    if (j == 0) a.im = b.im = T(0);
  } else if (m - j < nx) {
    a = Cx<T>{u[m - j].re, -u[m - j].im};
    b = Cx<T>{w[m - j].re, -w[m - j].im};
  } else {
    return Cx<T>{T(0), T(0)};
  }
  return Cx<T>{a.re - b.im, a.im + b.re};  // a + i b
}

/// Unpacks mode kx of the two real lines p, q from Q = FFT[p + i q]: P = (Q(k) + conj Q(−k))/2,
/// Q = (Q(k) − conj Q(−k))/(2i); q1 = Q(k), q2 = Q((M − k) mod M).
template <class T>
VH_HD inline void x_unpack(Cx<T> q1, Cx<T> q2, Cx<T>& p, Cx<T>& q) {
  p = Cx<T>{T(0.5) * (q1.re + q2.re), T(0.5) * (q1.im - q2.im)};
  const T dr = q1.re - q2.re, di = q1.im + q2.im;  // Q(k) − conj Q(−k)
  q = Cx<T>{T(0.5) * di, T(-0.5) * dr};
}

}  // namespace vh::spectral::kernel
