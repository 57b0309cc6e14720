// The GPU far field's device side, shared by its CUDA sources (CUDA only): the cell record,
// the column walkers of the solid-harmonic recurrences (fmm/expansions_kernel.h), the M2L
// table geometry, and the stages as launches over a FarPlan, the device addresses of one pair of
// trees with their M2L lists:
//   upward_gpu.cu    P2M, M2M                 far_upward
//   m2l_gpu.cu       M2L (tables, kernels)    far_m2l
//   downward_gpu.cu  L2L, L2P                 far_l2l, far_l2p
//   periodic_gpu.cu  far lattice, mean terms  lattice_m2l_device, mean_terms_device
// FarGpu (far_gpu.cu) fills a FarPlan from host-built trees; GpuEvaluator (evaluator.cu) from
// device-built ones.  Every launch goes to the given stream and checks its launch.
#pragma once

#include <cuda_runtime.h>

#include <utility>
#include <vector>

#include "fmm/cuda_util.h"
#include "fmm/expansions_kernel.h"
#include "fmm/mean_correction.h"

namespace vh::fmm {

// Largest order the kernels take: one thread per output coefficient, 3 ncoef(p) <= 1024.
constexpr int kMaxGpuOrder = 20;

/// What the far-field kernels read of a cell: the expansion centre, the particle range, the
/// parent and the level.
struct GCell {
  double cx, cy, cz;
  int begin, end, parent, level;
};

// ------------------------------------------------------------------------- device helpers
__device__ inline double2 cmul(double2 a, double2 b) { return make_double2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
__device__ inline double2 cconj(double2 a) { return make_double2(a.x, -a.y); }
// X_{l,-m} = (-1)^m conj(X_{lm})
__device__ inline double2 negm(double2 a, int m) { return (m & 1) ? make_double2(-a.x, a.y) : make_double2(a.x, -a.y); }

// A double2 or float2 from two values (rounded to float for float2).
template <class V>
__device__ inline V mk2(double x, double y) {
  V v;
  v.x = x;
  v.y = y;
  return v;
}

// Column m (degrees l = m..p) of the regular harmonics R_lm(x, y, z), written to the full
// layout F[fidx(l, +-m)].
__device__ inline void regular_column(double x, double y, double z, int p, int m, double2* F) {
  const double r2 = x * x + y * y + z * z;
  double cr = 1.0, ci = 0.0;
  for (int l = 0; l < m; ++l) regular_diagonal(l, x, y, cr, ci);
  double pr = 0, pi = 0;
  for (int l = m; l <= p; ++l) {
    const double2 cur = make_double2(cr, ci);
    F[fidx(l, m)] = cur;
    if (m > 0) F[fidx(l, -m)] = negm(cur, m);
    if (l == p) break;
    double nr, ni;
    regular_up(l, m, z, r2, cr, ci, pr, pi, nr, ni);
    pr = cr;
    pi = ci;
    cr = nr;
    ci = ni;
  }
}

// Column m of the irregular harmonics I_lm(x, y, z), added (add = true) or written to F
// (double2, or float2 for the single-precision M2L: the recurrence runs in double either way),
// at F[fidx(l, m)] or, with rowb, at F[rowb[l] + m] (the M2L's padded rows).
template <class V>
__device__ inline void irregular_column(double x, double y, double z, int p, int m, V* F, bool add,
                                        const int* rowb = nullptr) {
  const double inv_r2 = 1.0 / (x * x + y * y + z * z);
  double cr = sqrt(inv_r2), ci = 0.0;
  for (int l = 0; l < m; ++l) irregular_diagonal(l, x, y, inv_r2, cr, ci);
  double pr = 0, pi = 0;
  for (int l = m; l <= p; ++l) {
    const int row = rowb ? rowb[l] : fidx(l, 0);
    V& a = F[row + m];
    a = add ? mk2<V>(a.x + cr, a.y + ci) : mk2<V>(cr, ci);
    if (m > 0) F[row - m] = (m & 1) ? mk2<V>(-a.x, a.y) : mk2<V>(a.x, -a.y);  // negm
    if (l == p) break;
    double nr, ni;
    irregular_up(l, m, z, inv_r2, cr, ci, pr, pi, nr, ni);
    pr = cr;
    pi = ci;
    cr = nr;
    ci = ni;
  }
}

// Full-layout copy of the three components of an expansion (m >= 0 storage) into S[a][fidx];
// fold: (-1)^n conj (the M2L's source factor).  Entries first, first + stride, ... are this
// thread's (the block's threads by default).
__device__ inline void stage_full(const double2* X, int p, int nc, double2* S, bool fold, int first, int stride) {
  const int nf = (p + 1) * (p + 1);
  for (int t = first; t < 3 * nf; t += stride) {
    const int a = t / nf, f = t - a * nf;
    int n = static_cast<int>(sqrtf(static_cast<float>(f)));  // n^2 <= f < (n + 1)^2
    if (n * n > f) --n;
    if ((n + 1) * (n + 1) <= f) ++n;
    const int m = f - n * n - n;
    double2 v = X[a * nc + cidx(n, m < 0 ? -m : m)];
    if (m < 0) v = negm(v, -m);
    if (fold) {
      v = cconj(v);
      if (n & 1) v = make_double2(-v.x, -v.y);
    }
    S[t] = v;
  }
}

inline int round_up32(int n) { return (n + 31) / 32 * 32; }
/// Threads of the blocks that own one output coefficient each (P2M, M2M, L2L).
inline int coef_threads(int p) { return round_up32(3 * cidx(p + 1, 0)); }

// ------------------------------------------------------------------------- M2L tables
// Cells of one level at whole-cell offsets n (|n_i| <= kTableR), i.e. nearly every M2L of a
// uniform tree, share their table I_lm(n side_level): one per (level, n), computed once and kept
// (FarWork), copied by the M2L instead of running the recurrence per translation.
constexpr int kTableR = 7, kTableW = 2 * kTableR + 1, kTablesPerLevel = kTableW * kTableW * kTableW;

struct TableGeometry {
  double side0;      // side of the root cube
  int levels;        // tables for levels 0 .. levels - 1 (double)
  const double2* t;  // double: [levels][kTablesPerLevel][nf], full layout
  const float2* u;   // float: [kTablesPerLevel][nf], unit side (I_lm(n) = side^(l+1) I_lm(n side))
};

/// The device addresses and counts the far-field stages read: one pair of trees (the same with
/// self), the sorted particles, the M2L lists.  Cells are in tree order (parents before
/// children); levels are listed as (offset, count) into `parents` (bottom-up, cells with
/// children) and `children` (top-down, every cell below the root).
struct FarPlan {
  int p = 0;
  int nt = 0;                                  ///< target points
  int n_scells = 0, n_tcells = 0;
  const GCell* scells = nullptr;
  const GCell* tcells = nullptr;               ///< = scells with self
  const double4_32a* xs = nullptr;             ///< sorted source positions (x, y, z, -)
  const double4_32a* xt = nullptr;             ///< sorted target positions
  const double4_32a* alpha = nullptr;          ///< sorted strengths (a, 0)
  const int* perm = nullptr;                   ///< sorted target -> input index
  const double4_32a* shifts = nullptr;         ///< periodic shifts (s, 0)
  // Upward pass.
  const int* src_leaves = nullptr;             ///< source leaves holding particles
  int n_src_leaves = 0;
  const int* first_child = nullptr;            ///< per source cell
  const int* nchild = nullptr;
  const int* parents = nullptr;
  std::vector<std::pair<int, int>> m2m_levels;
  // Downward pass.
  const int* children = nullptr;
  std::vector<std::pair<int, int>> l2l_levels;
  const int* tgt_leaves = nullptr;             ///< target leaves holding particles
  int n_tgt_leaves = 0;
  // M2L lists (M2LArrays' layout, far_gpu.h).
  const int* m2l_targets = nullptr;
  const int* m2l_goffset = nullptr;
  const int* m2l_groups = nullptr;
  const int2* m2l_entries = nullptr;
  int n_m2l_targets = 0;
  double side0 = 0;                            ///< side of the root cube (both trees)
  int table_levels = 0;                        ///< min of the trees' level counts
  bool single_m2l = false;                     ///< fmm.precision single: the M2L in float
};

/// The far field's device work arrays: expansions (valid for the last evaluation) and the M2L
/// tables, kept across evaluations (the tables are rebuilt when p, the precision, the root
/// side or the depth change).
struct FarWork {
  DevBuf M, L, Mfold, tables;
  int tables_p = -1, tables_levels = 0;
  bool tables_single = false;
  double tables_side0 = 0;
  TableGeometry tg{};
};

/// P2M and M2M into w.M (zeroed first).
void far_upward(const FarPlan& f, FarWork& w, cudaStream_t s);
/// w.L sized and zeroed (the lattice, then the M2L add into it).
void far_clear_locals(const FarPlan& f, FarWork& w, cudaStream_t s);
/// M2L into w.L (tables built when needed).
void far_m2l(const FarPlan& f, FarWork& w, cudaStream_t s);
/// L2L, top-down.
void far_l2l(const FarPlan& f, FarWork& w, cudaStream_t s);
/// L2P at every target: u and grad (12 values per target) in the targets' input order,
/// u_out[3 i + m], grad_out[9 i + 3 m + k]; near (12 per sorted target, double or float) and
/// the mean correction (mean: device address, or null) are added.
void far_l2p(const FarPlan& f, const FarWork& w, const void* near, bool near_double, const MeanTerms* mean,
             double* u_out, double* grad_out, cudaStream_t s);

/// The periodic far lattice's summed tables on the device (fmm/periodic.h lattice_tables),
/// uploaded once per (p, r0, images).
struct LatticeDevice {
  int p = -1, r0 = -1, images = -1;
  DevBuf T, S;  // [images][ncoef(p)] double2 each
  void set(int p, int r0, int images);
};
/// lattice_m2l (fmm/periodic.h) on the device: adds the far lattice's local expansion about the
/// box centre to Lroot from the root multipole Mroot (3 ncoef(p) each), the host's operations in
/// the host's order (periodic_gpu.cu is compiled without contraction): the same bits.  work:
/// scratch (grown as needed).
void lattice_m2l_device(const LatticeDevice& t, const double2* Mroot, double2* Lroot, DevBuf& work, cudaStream_t s);
/// mean_terms (fmm/periodic.h, wrap = false) of n sorted sources on the device: the same chunks
/// of 4096 and the same order, hence the same bits as the host; `out` device, `part` scratch.
void mean_terms_device(int n, const double4_32a* x, const double4_32a* alpha, MeanTerms* out, DevBuf& part,
                       cudaStream_t s);

}  // namespace vh::fmm
