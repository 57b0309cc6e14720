// The M2L of a uniform level (fmm/level_stencil.h) on the GPU as a convolution by FFTs (issue
// 26): the same translations as the per-pair M2L of its lists, in double precision, at a cost
// that does not grow with the number of sources a target takes.
//
// Method.  Group the level's n^3 cells by their parent: parent P (m = n/2 a side) holds 8
// children, child parity c.  A target child (P, c_t) takes source (P + T, c_s) exactly when the
// cell offset t = 2 T + c_s - c_t is in the stencil of parity c_t, so its local expansion is
//   L_{P,c_t,lm} = sum_{c_s} sum_T sum_jk M'_{P+T,c_s,jk} K^{c_t c_s}_{l+j,m+k}(T),
// M' = (-1)^j conj(M_jk) (the M2L's folded source, all orders -j..j) and K^{c_t c_s}(T) the sum
// of the tables I(t side) over the stencil's offsets with that (c_s, T mod m), periodic images
// folded in.  Each (j k, l+j m+k) product is a periodic correlation over the parent grid, so
//   L^_{c_t,lm}(kappa) = sum_{c_s} sum_jk M'^_{c_s,jk}(kappa) K~^{c_t c_s}_{l+j,m+k}(kappa)
// with M'^ the forward transform (e^{-i}), K~ the backward one (e^{+i}) and L the backward
// transform of L^ over m^3: m2l_table_terms (fmm/expansions_kernel.h) per wavenumber, on complex
// values.  Only m >= 0 of L is formed; the others follow from the symmetry in real space.
// Work per level: 24 (p+1)^2 forward and 24 ncoef(p) backward transforms of m^3 points and
// per wavenumber 64 (target, source parity) pairs of 3 sum_l (l+1)(p-l+1)^2 complex
// multiply-adds (5 148 at p = 10: one translation's), against (stencil entries / 8)
// translations per cell directly.
// A window (issue 25): where a rank needs the local expansions of a few parent planes only,
// [z0, z0 + nz), their sources lie in the planes [z0 + lo, z0 + nz + hi) (parent_z_reach), and
// the correlation in z over e >= nz + hi - lo planes, not periodic, gives the same sums: the
// transforms, tables and contraction then cost e / m of the whole level's.
// Tables: 27 (p+1)^2 m^2 e complex doubles (1.6 GiB at level 6, p = 10, e = m), built once per
// stencil: by the stencil's rule a (target, source parity) pair's table depends only on their
// difference c_s - c_t in {-1, 0, 1}^3, so the 64 pairs share 27 tables (64 were held before
// 2026-12-03).
// Host API: no CUDA types; built only with VH_ENABLE_CUDA (VH_FMM_HAVE_CUDA).
#pragma once

#include <complex>
#include <cstddef>
#include <memory>
#include <vector>

#include "base/hd.h"
#include "fmm/expansions_kernel.h"
#include "fmm/level_stencil.h"

struct CUstream_st;  // cudaStream_t

namespace vh::fmm {

/// The contraction's threads a block at order p (one block a wavenumber).  An output (l, m) sums
/// (p - l + 1)^2 products, so a warp takes as long as its lowest degree: the 8 (l + 1) outputs of
/// degree l (all target parities) fill warps of their own where that fits 1 024 threads (p <= 13);
/// otherwise (p 14) one thread per (target parity, output) in order.
VH_HD inline int m2l_fft_degree_threads(int p) {
  int n = 0;
  for (int l = 0; l <= p; ++l) n += (8 * (l + 1) + 31) / 32 * 32;
  return n;
}
VH_HD inline bool m2l_fft_by_degree(int p) { return m2l_fft_degree_threads(p) <= 1024; }
VH_HD inline int m2l_fft_contract_threads(int p) {
  return m2l_fft_by_degree(p) ? m2l_fft_degree_threads(p) : (8 * (p + 1) * (p + 2) / 2 + 31) / 32 * 32;
}
/// Thread t's target parity ct and output (l, m) in the contraction; ct = 8 for a thread without one.
VH_HD inline void m2l_fft_contract_slot(int p, int t, int& ct, int& l, int& m) {
  ct = 8;
  l = m = 0;
  if (m2l_fft_by_degree(p)) {
    for (int d = 0, base = 0; d <= p; ++d) {
      const int n = 8 * (d + 1), span = (n + 31) / 32 * 32;
      if (t < base + span) {
        if (t - base < n) {
          ct = (t - base) / (d + 1);
          l = d;
          m = (t - base) - ct * (d + 1);
        }
        return;
      }
      base += span;
    }
    return;
  }
  const int nc = (p + 1) * (p + 2) / 2;
  if (t < 8 * nc) {
    ct = t / nc;
    lm_of(t - ct * nc, l, m);
  }
}

class M2LFftGpu {
 public:
  /// The tables of order p for the stencil `st` of the cube of side `side` (the root cell's):
  /// level 2..8, p 1..14, transforms over `extent` parent planes in z (0 or the level's m = n / 2:
  /// the whole level, periodic; fewer, more than the stencil's hi - lo: windows of
  /// extent - (hi - lo) target planes).  Throws std::invalid_argument otherwise,
  /// std::runtime_error when the device lacks the memory.
  M2LFftGpu(int p, double side, const LevelStencil& st, int extent = 0);
  ~M2LFftGpu();
  M2LFftGpu(const M2LFftGpu&) = delete;
  M2LFftGpu& operator=(const M2LFftGpu&) = delete;

  /// Adds the level's M2L into the local expansions: M and L device arrays of double2, one
  /// expansion of 3 ncoef(p) coefficients per tree cell (the far field's layout), and grid the
  /// device array of level_grid() (n^3 cell indices, or the cells' rows in M and L: FarPlan::
  /// rows, -1 for a cell that keeps none, whose multipole counts as zero); only the children of
  /// the parent planes z0 .. z0 + nz - 1 (mod m; nz 0: planes()) take theirs.  Issued on
  /// `stream` (null: the legacy stream), not waited for.
  void apply_device(const void* M, void* L, const int* grid, CUstream_st* stream, int z0 = 0, int nz = 0);
  /// The same on host arrays (ncells x 3 ncoef(p) each; L added to), for the tests and benches.
  void apply(const std::vector<std::complex<double>>& M, std::vector<std::complex<double>>& L,
             const std::vector<int>& grid, int z0 = 0, int nz = 0);
  /// The most target parent planes one apply takes: m for the whole level, else the window's.
  int planes() const;
  /// Milliseconds of the last apply()'s kernels and transforms (CUDA events).
  double last_ms() const;
  /// Device bytes held (tables, transforms, plans' work areas).
  std::size_t bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vh::fmm
