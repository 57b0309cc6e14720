// The GPU far field's device side, shared by its CUDA sources (CUDA only): the cell record,
// the column walker of the solid-harmonic recurrences (fmm/expansions_kernel.h), the M2L
// table geometry, and the stages as launches over a FarPlan, the device addresses of one pair of
// trees with their M2L lists:
//   upward_gpu.cu    P2M, M2M                 far_clear_multipoles, far_p2m, far_m2m
//   m2l_gpu.cu       M2L (tables, kernels)    far_m2l
//   downward_gpu.cu  L2L, L2P                 far_l2l, far_l2p
//   lattice_leaves_gpu.cu  P2M, L2P as matrix products where every leaf holds the same points
//   lattice_levels_gpu.cu  M2M, L2L as matrix products on the full levels of a uniform tree
//   periodic_gpu.cu  far lattice, mean terms  lattice_m2l_device, mean_terms_device
// and their one sequence, FarStages (far_gpu.cu), which runs them with the near field beside.
// FarGpu (far_gpu.cu) fills a FarPlan from host-built trees; GpuEvaluator (evaluator.cu) from
// device-built ones; both evaluate through FarStages.  Every launch goes to the given stream
// and checks its launch.
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <utility>
#include <vector>

#include "base/cuda_check.h"
#include "base/device_buffer.h"
#include "fmm/expansion_rows.h"
#include "fmm/expansions_kernel.h"
#include "fmm/far_gpu.h"
#include "fmm/mean_correction.h"

namespace vh::fmm {

// Largest order the kernels take: one thread per output coefficient, 3 ncoef(p) <= 1024.
constexpr int kMaxGpuOrder = 20;

// The reciprocals of the regular recurrences' denominators (expansions_kernel.h Reciprocal: up
// to (p + 1)^2), one table per translation unit, read through L1.
static __device__ const ReciprocalTable<(kMaxGpuOrder + 1) * (kMaxGpuOrder + 1) + 1> kReciprocals;
__device__ inline Reciprocal reciprocals() { return Reciprocal{kReciprocals.v}; }

/// What the far-field kernels read of a cell: the expansion centre, the particle range, the
/// parent and the level.
struct GCell {
  double cx, cy, cz;
  int begin, end, parent, level;
};

// The z plane of cell C among the 2^level of its level in the cube [lo_z, lo_z + side0) along z.
__device__ inline int z_plane(const GCell& C, double lo_z, double side0) {
  return cell_plane(C.cz, C.level, lo_z, side0);
}

// ------------------------------------------------------------------------- device helpers
__device__ inline double2 cmul(double2 a, double2 b) { return make_double2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

// A double2 or float2 from two values (rounded to float for float2).
template <class V>
__device__ inline V mk2(double x, double y) {
  V v;
  v.x = x;
  v.y = y;
  return v;
}

// Column m (degrees l = m..p) of the regular harmonics R_lm(x, y, z), or of the irregular
// I_lm when Irr, by the recurrences of expansions_kernel.h (run in double; R's divisions by the
// reciprocals' table): emit(l, re, im) for l = m, m + 1, ..., p in turn.
template <bool Irr, class Emit>
__device__ inline void harmonic_column(double x, double y, double z, int p, int m, Emit&& emit) {
  const double r2 = x * x + y * y + z * z, q = Irr ? 1.0 / r2 : r2;  // q as harmonic_row_up's
  double cr = Irr ? sqrt(q) : 1.0, ci = 0.0;
  for (int l = 0; l < m; ++l) {
    if (Irr) {
      irregular_diagonal(l, x, y, q, cr, ci);
    } else {
      regular_diagonal(l, x, y, cr, ci, reciprocals());
    }
  }
  double pr = 0, pi = 0;
  for (int l = m; l <= p; ++l) {
    emit(l, cr, ci);
    if (l == p) break;
    double nr, ni;
    if (Irr) {
      irregular_up(l, m, z, q, cr, ci, pr, pi, nr, ni);
    } else {
      regular_up(l, m, z, q, cr, ci, pr, pi, nr, ni, reciprocals());
    }
    pr = cr;
    pi = ci;
    cr = nr;
    ci = ni;
  }
}

// Column m of the regular harmonics R_lm(x, y, z), written to the full layout F[fidx(l, +-m)].
__device__ inline void regular_column(double x, double y, double z, int p, int m, double2* F) {
  harmonic_column<false>(x, y, z, p, m, [&](int l, double re, double im) {
    F[fidx(l, m)] = make_double2(re, im);
    if (m > 0) {
      negm(m, re, im);
      F[fidx(l, -m)] = make_double2(re, im);
    }
  });
}

// Column m of the irregular harmonics I_lm(x, y, z), added (add = true) or written to F
// (double2, or float2 for the single-precision M2L: the recurrence runs in double either way),
// at F[fidx(l, m)] or, with rowb, at F[rowb[l] + m] (the M2L's padded rows).
template <class V>
__device__ inline void irregular_column(double x, double y, double z, int p, int m, V* F, bool add,
                                        const int* rowb = nullptr) {
  harmonic_column<true>(x, y, z, p, m, [&](int l, double re, double im) {
    const int row = rowb ? rowb[l] : fidx(l, 0);
    V& a = F[row + m];
    a = add ? mk2<V>(a.x + re, a.y + im) : mk2<V>(re, im);
    if (m > 0) {
      V b = a;
      negm(m, b.x, b.y);
      F[row - m] = b;
    }
  });
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
    if (m < 0) negm(-m, v.x, v.y);
    if (fold) m2l_fold(n, v.x, v.y);
    S[t] = v;
  }
}

// One output (l, m) of one component's M2M, added to (re, im): m2m_terms with the child's
// R_jk(d) and multipole in the full layout (Rf, Mf).  The per-cell kernel and the full levels'
// matrices (lattice_levels_gpu.cu) both take it.
__device__ inline void m2m_output(int l, int m, const double2* Rf, const double2* Mf, double& re, double& im) {
  m2m_terms(
      l, m,
      [&](int j, int k, double& r, double& i) {
        r = Rf[fidx(j, k)].x;
        i = Rf[fidx(j, k)].y;
      },
      [&](int n, int mm, double& r, double& i) {
        r = Mf[fidx(n, mm)].x;
        i = Mf[fidx(n, mm)].y;
      },
      re, im);
}

// One output (j, k) of one component's L2L, added to (re, im): l2l_terms over n = 0 .. p - j with
// the parent's local expansion and R(d) in the full layout (Lf, Rf).  The per-cell kernel and the
// full levels' matrices both take it.
__device__ inline void l2l_output(int p, int j, int k, const double2* Lf, const double2* Rf, double& re, double& im) {
  for (int n = 0; n <= p - j; ++n)
    l2l_terms<1>(
        n, j, k,
        [&](int, int f, double& r, double& i) {
          r = Lf[f].x;
          i = Lf[f].y;
        },
        [&](int q, double& r, double& i) {
          r = Rf[fidx(n, q)].x;
          i = Rf[fidx(n, q)].y;
        },
        &re, &im);
}

// ------------------------------------------------------------------------- L2P at one target
// Doubles between two threads' rows of R in the L2P's shared memory: three rows of p + 1 pairs,
// and one more to make it odd.
__host__ __device__ inline int l2p_rows_stride(int p) { return 6 * (p + 1) + 1; }
/// Shared memory of an L2P block of `threads` threads: the local expansion in the full layout
/// and each thread's rows of R.
inline std::size_t l2p_shared_bytes(int p, int threads) {
  return 3 * (p + 1) * (p + 1) * sizeof(double2) + threads * l2p_rows_stride(p) * sizeof(double);
}

// u and grad u (r[0..2], r[3..11]) at offset (dx, dy, dz) from the centre of the local
// expansion Lf (three components, full layout, [3][(p + 1)^2]): the expansion shifted to degrees
// <= 2 at the target (l2l_terms on the rows of R(d), made by harmonic_row_up three at a time),
// then the derivatives of the three potentials and u, grad u (potential_derivatives,
// velocity_from_potentials: the CPU's own functions).  rows: this thread's rows n - 2, n - 1, n
// of R (m >= 0, pairs), cyclic, l2p_rows_stride(p) doubles in shared memory, as an array
// indexed at run time would be in local memory (the stride is odd, so that the lanes' rows fall
// in different banks).
__device__ inline void l2p_at(const double2* Lf, int p, double dx, double dy, double dz, double* rows, double r[12]) {
  const int nf = (p + 1) * (p + 1), w = 2 * (p + 1);
  const double r2 = dx * dx + dy * dy + dz * dz;
  double Lr[6][3], Li[6][3];  // the shifted expansion at degrees <= 2: [cidx(j, k)][component]
  for (int c = 0; c < 6; ++c)
    for (int a = 0; a < 3; ++a) Lr[c][a] = Li[c][a] = 0;
  for (int n = 0; n <= p; ++n) {
    double* Rn = rows + (n % 3) * w;
    if (n == 0) {
      Rn[0] = 1.0;
      Rn[1] = 0.0;
    } else {
      harmonic_row_up<false>(n - 1, dx, dy, dz, r2, rows + ((n - 1) % 3) * w, rows + ((n + 1) % 3) * w, Rn,
                             reciprocals());
    }
    for (int j = 0; j <= 2 && j <= p - n; ++j)
      for (int k = 0; k <= j; ++k)
        l2l_terms<3>(
            n, j, k,
            [&](int a, int f, double& re, double& im) {
              re = Lf[a * nf + f].x;
              im = Lf[a * nf + f].y;
            },
            [&](int q, double& re, double& im) {
              re = Rn[2 * abs(q)];
              im = Rn[2 * abs(q) + 1];
              if (q < 0) negm(-q, re, im);
            },
            Lr[cidx(j, k)], Li[cidx(j, k)]);
  }
  double Lt[3][12];  // potential_derivatives' layout: (re, im) of component a at [a][2 cidx]
  for (int a = 0; a < 3; ++a)
    for (int c = 0; c < 6; ++c) {
      Lt[a][2 * c] = Lr[c][a];
      Lt[a][2 * c + 1] = Li[c][a];
    }
  double dphi[3][3], h[3][3][3];
  potential_derivatives(&Lt[0][0], dphi, h);
  velocity_from_potentials(dphi, h, r);
}

// The L2P's last step for sorted target i at output index o (its input index less
// FarPlan::out_first), position xi: the near-field sums (12 a sorted target, float or double)
// added when given, then the mean correction when mc is; u and grad written.
template <class N>
__device__ inline void l2p_store(double r[12], long long i, long long o, double4_32a xi, const N* near,
                                 const MeanTerms* mc, double* u_out, double* grad_out) {
  if (near) {
    const N* ni = near + 12 * i;
    for (int c = 0; c < 12; ++c) r[c] += double(ni[c]);
  }
  if (mc) {
    const double xd[3] = {xi.x, xi.y, xi.z};
    mean_correction(*mc, xd, r, r + 3);
  }
  for (int c = 0; c < 3; ++c) u_out[3 * o + c] = r[c];
  for (int c = 0; c < 9; ++c) grad_out[9 * o + c] = r[3 + c];
}

/// The row of cell c's expansions in M and L (FarPlan::rows; null: c), -1 where none is kept.
__device__ inline long long row_of(const int* rows, int c) { return rows ? rows[c] : c; }

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

class UniformFar;  // fmm/uniform_gpu.h

/// The device addresses and counts the far-field stages read: one pair of trees (the same with
/// self), the sorted particles, the M2L lists.  Cells are in tree order (parents before
/// children); levels are listed as (offset, count) into `parents` (bottom-up, cells with
/// children) and `children` (top-down, every cell below the root).
struct FarPlan {
  int p = 0;
  int nt = 0, ns = 0;                          ///< target and source points
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
  /// The M2M's parents, level by level (offset into parents, count), bottom-up; with own, those
  /// that hold some of this rank's sources (GpuEvaluator::evaluate_own).
  const int* parents = nullptr;
  std::vector<std::pair<int, int>> m2m_levels;
  /// The upward pass shared over ranks (GpuEvaluator::share_upward): own[s] = how many of the
  /// sorted sources before s are this rank's (ns + 1 entries); P2M and M2M then form the
  /// multipoles of those only.  Null: every source.
  const int* own = nullptr;
  /// Where a cell's multipole and local expansion sit in M and L (fmm/expansion_rows.h): at row
  /// rows[cell], and nowhere where that is -1 (a cell no stage of this rank reads or writes);
  /// n_rows rows, the cells 0 .. whole - 1 at their index (the periodic root, the per-pair M2L of
  /// the uniform levels 0 and 1, the ranks' all-reduce read only those).  Null: every cell at its
  /// index (n_scells rows of M, n_tcells of L).
  const int* rows = nullptr;
  int n_rows = 0, whole = 0;
  // Downward pass.
  /// The L2L's children, level by level, top-down; evaluate_own: those that hold some of this
  /// rank's targets (the others' locals would reach no target of its).
  const int* children = nullptr;
  std::vector<std::pair<int, int>> l2l_levels;
  const int* tgt_leaves = nullptr;             ///< target leaves holding particles
  int n_tgt_leaves = 0;
  /// The L2P writes the targets of input index o in [out_first, out_first + out_count) only, at
  /// o - out_first (GpuEvaluator::evaluate_own: this rank's); by default every target at o.
  long long out_first = 0, out_count = LLONG_MAX;
  /// The mean correction's sums (device), where the caller formed them (GpuEvaluator::evaluate_own
  /// on a part of the sources: every rank's); null: from the sources above.
  const MeanTerms* mean = nullptr;
  // M2L lists (M2LArrays' layout, far_gpu.h).
  const int* m2l_targets = nullptr;
  const int* m2l_goffset = nullptr;
  const int* m2l_groups = nullptr;
  const int2* m2l_entries = nullptr;
  int n_m2l_targets = 0;
  /// The M2L for some of the lists' targets only: the M2L takes targets m2l_rows[0 ..
  /// n_m2l_targets) of the arrays above (GpuEvaluator::evaluate_own: the cells that hold this
  /// rank's targets); null: targets 0 .. n_m2l_targets.
  const int* m2l_rows = nullptr;
  double side0 = 0;                            ///< side of the root cube (both trees)
  int table_levels = 0;                        ///< min of the trees' level counts
  bool single_m2l = false;                     ///< fmm.precision single: the M2L in float
  /// A complete tree's uniform levels 2 .. L by FFTs after the M2L of the arrays above, which
  /// then hold levels 0 and 1 (fmm/uniform_gpu.h); null: the lists alone.
  const UniformFar* uniform = nullptr;
};

/// Rows of M and of L (FarPlan::rows).
inline std::size_t multipole_rows(const FarPlan& f) { return static_cast<std::size_t>(f.rows ? f.n_rows : f.n_scells); }
inline std::size_t local_rows(const FarPlan& f) { return static_cast<std::size_t>(f.rows ? f.n_rows : f.n_tcells); }
/// The cells that the per-pair M2L (far_m2l) may index M and L by: with FarPlan::rows only those
/// kept at their index (the uniform levels 0 and 1), else every source cell.
inline int m2l_list_cells(const FarPlan& f) { return f.rows ? f.whole : f.n_scells; }

/// The far field's device work arrays: expansions (valid for the last evaluation) and the M2L
/// tables, kept across evaluations (the tables are rebuilt when p, the precision, the root
/// side or the depth change).
struct FarWork {
  DeviceArray<double2> M, L;      ///< [cell][3][ncoef(p)]
  DeviceArray<float2> Mfold;      ///< single M2L: the folded scaled multipoles (m2l_gpu.cu)
  DeviceBytes tables;             ///< TableGeometry's t (double2) or u (float2)
  int tables_p = -1, tables_levels = 0;
  bool tables_single = false;
  double tables_side0 = 0;
  TableGeometry tg{};
};

/// w.M sized and zeroed (the P2M writes the leaves' multipoles, the M2M adds into the parents').
void far_clear_multipoles(const FarPlan& f, FarWork& w, cudaStream_t s);
/// P2M at the source leaves into w.M, a block per leaf.
void far_p2m(const FarPlan& f, FarWork& w, cudaStream_t s);
class LatticeLevels;
/// M2M, bottom-up; the levels `levels` finds full by matrix products (null: none).
void far_m2m(const FarPlan& f, FarWork& w, cudaStream_t s, const LatticeLevels* levels = nullptr);
/// w.L sized and zeroed (the lattice, then the M2L add into it).
void far_clear_locals(const FarPlan& f, FarWork& w, cudaStream_t s);
/// M2L into w.L (tables built when needed).
void far_m2l(const FarPlan& f, FarWork& w, cudaStream_t s);
/// The uniform levels' M2L by FFTs into w.L (u null: nothing; fmm/uniform_gpu.cu).
void uniform_m2l(const UniformFar* u, FarWork& w, cudaStream_t s);
/// L2L, top-down; the levels `levels` finds full by matrix products (null: none).
void far_l2l(const FarPlan& f, FarWork& w, cudaStream_t s, const LatticeLevels* levels = nullptr);
/// L2P at every target, a block per leaf: u and grad (12 values per target) in the targets'
/// input order, u_out[3 i + m], grad_out[9 i + 3 m + k]; near (12 per sorted target, double or
/// float) and the mean correction (mean: device address, or null) are added.
void far_l2p(const FarPlan& f, const FarWork& w, const void* near, bool near_double, const MeanTerms* mean,
             double* u_out, double* grad_out, cudaStream_t s);

/// P2M and L2P as matrix products where every leaf holds the same points (fmm/lattice_leaves.h:
/// the vortex solver's particles just reinitialised, a lattice in the leaves of a uniform tree).
/// Then a leaf's L2P is one matrix A (u and grad at its K points, 12 K doubles, from the 6
/// ncoef(p) doubles of its local expansion) for every leaf, and its P2M one matrix R (each
/// component's 2 ncoef(p) doubles of its multipole from that component of the K strengths, the
/// regular harmonics at the K points): matrix products over all leaves (fmm/dgemm_gpu.h) in
/// place of a thread per point running the recurrences.  A and R are made at each evaluation by
/// the per-leaf kernels' own device code (l2p_at on unit expansions, harmonic_column at the first
/// leaf's points); the L2P's near-field sums, mean correction and output window are l2p_store's.
/// The results are the per-leaf kernels' up to the order of the sums (round-off).
/// lattice_leaves_gpu.cu.
class LatticeLeaves {
 public:
  /// Off: prepare() finds nothing alike (the per-leaf kernels, for comparisons); on by default.
  void enable(bool on) { enabled_ = on; }
  /// Looks at f's target leaves and, without FarPlan::own, its source leaves, and allocates the
  /// matrices for those alike: on the legacy stream, which it synchronises (a kernel and a
  /// 32-byte download).
  void prepare(const FarPlan& f);
  bool targets() const { return t_.k > 0; }
  bool sources() const { return s_.k > 0; }
  /// P2M of every source leaf into w.M (sources() only).
  void p2m(const FarPlan& f, FarWork& w, cudaStream_t s);
  /// far_l2p's results (targets() only).
  void l2p(const FarPlan& f, const FarWork& w, const void* near, bool near_double, const MeanTerms* mean, double* u_out,
           double* grad_out, cudaStream_t s);

  /// What prepare() found of one side: K points a leaf (0: not alike), the first leaf's cell
  /// and its first point, the leaves, the first leaf's row in M and L (FarPlan::rows).
  struct Side {
    int k = 0, leaf0 = 0, begin0 = 0, leaves = 0, row0 = 0;
  };

 private:
  bool enabled_ = true;
  Side t_, s_;
  DeviceArray<int> found_;
  DeviceArray<double> a_, p_, out_;  // A, R, and the L2P's results for a run of leaves
};

/// M2M and L2L as matrix products on the full levels of a uniform tree: where every parent of a
/// level has its eight children at the same offsets from it, in the same order, the parents
/// consecutive cells and their children too (the uniform levels of fmm.m2l fft: any particles,
/// not only a lattice), the translation from a child's octant o is one real matrix T_o of 2
/// ncoef(p) x 2 ncoef(p) (an expansion component's doubles, re and im, from the other's) for
/// every parent; a level's M2M is then 24 matrix products (8 octants x 3 components, each over
/// all parents: P += T_o C_o, fmm/dgemm_gpu.h), its L2L the same with the children's locals as
/// outputs.  T_o is made at each level's turn by the per-cell kernels' own device code
/// (m2m_terms, l2l_terms on unit expansions, regular_column at the first parent's children); the
/// results are the per-cell kernels' up to the order of the sums (round-off).  Levels with fewer
/// than kMinParents parents keep the per-cell kernels (on an H200 at p 13 the products of levels
/// of 512 and 4 096 parents took 1.3 ms more than the kernels over a 128^3 lattice's FMM, those of
/// 32 768 parents 7.8 ms less over the sc09 step at 256^3: bench/RESULTS.md, 2026-12-04), and so
/// does the M2M shared over ranks (FarPlan::own).  lattice_levels_gpu.cu.
class LatticeLevels {
 public:
  static constexpr int kMinParents = 32768;
  /// Off: prepare() finds no level full (the per-cell kernels, for comparisons); on by default.
  void enable(bool on) { enabled_ = on; }
  /// Levels of at least `parents` parents by products (kMinParents by default; lower for tests).
  void set_min_parents(int parents) { min_parents_ = parents; }
  /// Looks at f's M2M and L2L levels: on the legacy stream, which it synchronises (a kernel a
  /// level and a download for each pass).
  void prepare(const FarPlan& f);
  /// The M2M of f.m2m_levels[i], or the L2L of f.l2l_levels[i], when that level is full (true),
  /// else nothing (false).
  bool m2m(const FarPlan& f, FarWork& w, int i, cudaStream_t s) const;
  bool l2l(const FarPlan& f, FarWork& w, int i, cudaStream_t s) const;
  /// Levels prepare() found full, M2M and L2L together.
  int count() const;

  /// A full level: its parents, the first of them and its first child (0 parents: not full).
  struct Level {
    int parents = 0, parent0 = 0, child0 = 0;
    int parent_row0 = 0, child_row0 = 0;  ///< their rows in M and L (FarPlan::rows)
  };

 private:
  void products(const Level& v, int p, double* X, bool up, cudaStream_t s) const;
  bool enabled_ = true;
  int min_parents_ = kMinParents;
  std::vector<Level> up_, down_;
  DeviceArray<int> found_;
  mutable DeviceArray<double> t_;  // a level's T_0 ... T_7, made at its turn on the stream
};

/// The periodic far lattice's summed tables on the device (fmm/periodic.h lattice_tables),
/// uploaded once per (p, r0, images).
struct LatticeDevice {
  int p = -1, r0 = -1, images = -1;
  DeviceArray<double2> T, S;  // [images][ncoef(p)] each
  void set(int p, int r0, int images);
};
/// Scratch doubles lattice_m2l_device needs at order p.
int lattice_work_doubles(int p);
/// lattice_m2l (fmm/periodic.h) on the device: adds the far lattice's local expansion about the
/// box centre to Lroot from the root multipole Mroot (3 ncoef(p) each), the host's operations in
/// the host's order (periodic_gpu.cu is compiled without contraction): the same bits.  work:
/// scratch (grown as needed).
void lattice_m2l_device(const LatticeDevice& t, const double2* Mroot, double2* Lroot, DeviceArray<double>& work,
                        cudaStream_t s);
/// Sources per partial sum of mean_terms (periodic.cpp) and mean_terms_device.
constexpr int kMeanChunk = 4096;
/// mean_terms (fmm/periodic.h, wrap = false) of n sorted sources on the device: the same chunks
/// of kMeanChunk and the same order, hence the same bits as the host; `out` device, `part`
/// scratch (grown as needed). mask (device, n, optional): the sources whose flag is 0 left out.
void mean_terms_device(int n, const double4_32a* x, const double4_32a* alpha, MeanTerms* out,
                       DeviceArray<MeanTerms>& part, cudaStream_t s, const int* mask = nullptr);

/// The periodic terms of one evaluation: with `on`, the far lattice of `images` levels beyond
/// the near images [-r0, r0]^3 into the root (when images > 0) and the mean correction at the L2P.
struct FarPeriodic {
  bool on = false;
  int r0 = 0, images = 0;
};

/// The far field's stages in their one order, on one stream, with the near field beside it:
///   P2M, M2M | locals cleared, far lattice, mean terms | M2L | L2L | join | L2P
/// where join, the caller's, makes the stream wait for the near field's sums (and may issue
/// work of its own), which the L2P adds with the mean correction, writing u and grad u in the
/// targets' input order.  FarGpu (far_gpu.cu) and GpuEvaluator (evaluator.cu) both evaluate
/// through it.  Owns the work arrays (kept across evaluations) and the events that time the
/// stages.
class FarStages {
 public:
  FarStages();
  ~FarStages();
  FarStages(const FarStages&) = delete;
  FarStages& operator=(const FarStages&) = delete;

  /// Every buffer of an evaluation of plan f allocated now, in order on the legacy default
  /// stream (for callers whose streams start after it: stream-ordered pool memory), and the
  /// leaves looked at (LatticeLeaves::prepare); without it each stage allocates what it lacks
  /// and upward() looks at the leaves on the legacy stream.
  void reserve(const FarPlan& f, const FarPeriodic& per);
  /// P2M and M2M.
  void upward(const FarPlan& f, cudaStream_t s);
  /// P2M and L2P as matrix products where the leaves are alike and M2M and L2L where the levels
  /// are full (on, the default), or always the per-cell kernels (off: for comparisons).
  void set_lattice_leaves(bool on) {
    leaves_.enable(on);
    levels_.enable(on);
  }
  /// The full levels by products from `parents` parents up (LatticeLevels::set_min_parents).
  void set_lattice_levels_from(int parents) { levels_.set_min_parents(parents); }
  /// The multipoles of the last upward(): multipole_count() double2 (rows x 3 x ncoef(p)), for the
  /// ranks to sum where they share the upward pass.
  double2* multipoles() { return work_.M.data(); }
  static std::size_t multipole_count(const FarPlan& f) {
    return multipole_rows(f) * 3 * cidx(f.p + 1, 0);
  }
  /// The lattice and mean terms, M2L, L2L, join(), L2P (see the class comment); near: 12
  /// values per sorted target, double when near_double, else float (or null).
  template <class Join>
  void downward(const FarPlan& f, const FarPeriodic& per, Join&& join, const void* near, bool near_double,
                double* u_out, double* grad_out, cudaStream_t s) {
    const MeanTerms* mean = before_m2l(f, per, s);
    record(kM2L0, s);
    far_m2l(f, work_, s);
    uniform_m2l(f.uniform, work_, s);
    record(kM2L1, s);
    far_l2l(f, work_, s, &levels_);
    record(kL2L1, s);
    join();
    record(kL2P0, s);
    if (leaves_.targets()) {
      leaves_.l2p(f, work_, near, near_double, mean, u_out, grad_out, s);
    } else {
      far_l2p(f, work_, near, near_double, mean, u_out, grad_out, s);
    }
    record(kL2P1, s);
  }
  /// Stage times of the last upward() and downward(), milliseconds: P2M + M2M, M2L, L2L + L2P
  /// (the join left out).
  FarGpuTimes times() const;

 private:
  enum { kUp0, kUp1, kM2L0, kM2L1, kL2L1, kL2P0, kL2P1, kEvents };
  void record(int e, cudaStream_t s) { VH_CHECK_CUDA(cudaEventRecord(ev_[e], s)); }
  /// Locals cleared, the far lattice, the mean terms; returns the mean terms' device address
  /// (null in free space).
  const MeanTerms* before_m2l(const FarPlan& f, const FarPeriodic& per, cudaStream_t s);
  FarWork work_;
  LatticeLeaves leaves_;
  LatticeLevels levels_;
  bool leaves_prepared_ = false;  // leaves_ and levels_ by reserve(), for the next upward()
  LatticeDevice lattice_;
  DeviceArray<double> lattice_work_;
  DeviceArray<MeanTerms> mean_, mean_part_;
  cudaEvent_t ev_[kEvents] = {};
};

}  // namespace vh::fmm
