// GPU far field (P2M, M2M, M2L, L2L, L2P); see far_gpu.h for the layout and expansions.h for
// the formulas, which the kernels below follow term by term.
#include "fmm/far_gpu.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

#include "fmm/cuda_util.h"
#include "fmm/expansions.h"
#include "fmm/mean_correction.h"
#include "fmm/profile.h"
#include "fmm/p2p_gpu.h"
#include "fmm/particles_gpu.h"
#include "fmm/traverse_gpu.h"
#include "fmm/traverse_gpu_device.h"

namespace vh::fmm {

namespace {

// Largest order the kernels take: one thread per output coefficient, 3 ncoef(p) <= 1024.
constexpr int kMaxGpuOrder = 20;

struct GCell {
  double cx, cy, cz;
  int begin, end, parent, level;
};

__host__ __device__ inline int cidx(int l, int m) { return l * (l + 1) / 2 + m; }  // m >= 0 storage
__host__ __device__ inline int fidx(int l, int m) { return l * l + l + m; }        // full, -l <= m <= l

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

// (l, m) of the stored coefficient c (m >= 0 storage).
__device__ inline void lm_of(int c, int& l, int& m) {
  l = 0;
  while ((l + 1) * (l + 2) / 2 <= c) ++l;
  m = c - l * (l + 1) / 2;
}

// Column m (degrees l = m..p) of the regular harmonics R_lm(x, y, z), written to the full
// layout F[fidx(l, +-m)]; the recurrences of solid_harmonics() (expansions.cpp).
__device__ void regular_column(double x, double y, double z, int p, int m, double2* F) {
  const double r2 = x * x + y * y + z * z;
  double2 rmm = make_double2(1.0, 0.0);
  for (int l = 0; l < m; ++l) {  // R_{l+1,l+1} = -(x + iy) / (2l + 2) R_ll
    const double2 t = cmul(make_double2(x, y), rmm);
    rmm = make_double2(-t.x / double(2 * l + 2), -t.y / double(2 * l + 2));
  }
  double2 prev = make_double2(0, 0), cur = rmm;
  for (int l = m; l <= p; ++l) {
    F[fidx(l, m)] = cur;
    if (m > 0) F[fidx(l, -m)] = negm(cur, m);
    if (l == p) break;
    // R_{l+1,m} = ((2l+1) z R_lm - r^2 R_{l-1,m}) / ((l+m+1)(l-m+1))
    const double den = double((l + m + 1) * (l - m + 1));
    const double2 next = make_double2((double(2 * l + 1) * z * cur.x - r2 * prev.x) / den,
                                      (double(2 * l + 1) * z * cur.y - r2 * prev.y) / den);
    prev = cur;
    cur = next;
  }
}

// Column m of the irregular harmonics I_lm(x, y, z), added (add = true) or written to F
// (double2, or float2 for the single-precision M2L: the recurrence runs in double either way),
// at F[fidx(l, m)] or, with rowb, at F[rowb[l] + m] (the M2L's padded rows).
template <class V>
__device__ void irregular_column(double x, double y, double z, int p, int m, V* F, bool add,
                                 const int* rowb = nullptr) {
  const double inv_r2 = 1.0 / (x * x + y * y + z * z);
  double2 imm = make_double2(sqrt(inv_r2), 0.0);
  for (int l = 0; l < m; ++l) {  // I_{l+1,l+1} = -(2l+1) (x + iy) / r^2 I_ll
    const double2 t = cmul(make_double2(x, y), imm);
    const double f = -double(2 * l + 1) * inv_r2;
    imm = make_double2(f * t.x, f * t.y);
  }
  double2 prev = make_double2(0, 0), cur = imm;
  for (int l = m; l <= p; ++l) {
    const int row = rowb ? rowb[l] : fidx(l, 0);
    V& a = F[row + m];
    a = add ? mk2<V>(a.x + cur.x, a.y + cur.y) : mk2<V>(cur.x, cur.y);
    if (m > 0) F[row - m] = (m & 1) ? mk2<V>(-a.x, a.y) : mk2<V>(a.x, -a.y);  // negm
    if (l == p) break;
    // I_{l+1,m} = ((2l+1) z I_lm - (l^2 - m^2) I_{l-1,m}) / r^2
    const double c = double(l * l - m * m);
    const double2 next = make_double2((double(2 * l + 1) * z * cur.x - c * prev.x) * inv_r2,
                                      (double(2 * l + 1) * z * cur.y - c * prev.y) * inv_r2);
    prev = cur;
    cur = next;
  }
}

// Full-layout copy of the three components of an expansion (m >= 0 storage) into S[a][fidx];
// fold: (-1)^n conj (the M2L's source factor).  Entries first, first + stride, ... are this
// thread's (the block's threads by default, a warp's lanes in the M2L).
__device__ void stage_full(const double2* X, int p, int nc, double2* S, bool fold, int first = threadIdx.x,
                           int stride = blockDim.x) {
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

// ------------------------------------------------------------------------------------ P2M
// Block per source leaf; chunks of `chunk` particles: thread t < chunk computes R of particle t
// into shared memory (m >= 0 storage), then thread o = (a, c) sums q_a R_c.
__global__ void p2m_kernel(const int* __restrict__ leaves, const GCell* __restrict__ cells,
                           const double4_32a* __restrict__ x, const double4_32a* __restrict__ alpha, int p, int chunk,
                           double2* __restrict__ M) {
  extern __shared__ double2 sh[];
  const int nc = cidx(p + 1, 0);
  double2* R = sh;                                            // [chunk][nc]
  double* q = reinterpret_cast<double*>(R + chunk * nc);     // [chunk][3]
  const GCell C = cells[leaves[blockIdx.x]];
  const int o = threadIdx.x, a = o / nc, c = o - a * nc;
  double2 acc = make_double2(0, 0);
  for (int b = C.begin; b < C.end; b += chunk) {
    const int n = min(chunk, C.end - b);
    if (threadIdx.x < n) {
      const double4_32a xi = x[b + threadIdx.x];
      const double4_32a ai = alpha[b + threadIdx.x];
      double2* Ri = R + threadIdx.x * nc;
      const double dx = xi.x - C.cx, dy = xi.y - C.cy, dz = xi.z - C.cz, r2 = dx * dx + dy * dy + dz * dz;
      Ri[0] = make_double2(1.0, 0.0);
      for (int l = 0; l < p; ++l) {
        const double2 t = cmul(make_double2(dx, dy), Ri[cidx(l, l)]);
        Ri[cidx(l + 1, l + 1)] = make_double2(-t.x / double(2 * l + 2), -t.y / double(2 * l + 2));
        for (int m = 0; m <= l; ++m) {
          const double2 prev = (m <= l - 1) ? Ri[cidx(l - 1, m)] : make_double2(0, 0);
          const double den = double((l + m + 1) * (l - m + 1));
          const double2 cur = Ri[cidx(l, m)];
          Ri[cidx(l + 1, m)] = make_double2((double(2 * l + 1) * dz * cur.x - r2 * prev.x) / den,
                                            (double(2 * l + 1) * dz * cur.y - r2 * prev.y) / den);
        }
      }
      q[3 * threadIdx.x + 0] = ai.x;
      q[3 * threadIdx.x + 1] = ai.y;
      q[3 * threadIdx.x + 2] = ai.z;
    }
    __syncthreads();
    if (a < 3)
      for (int i = 0; i < n; ++i) {
        const double2 r = R[i * nc + c];
        const double qa = q[3 * i + a];
        acc.x += qa * r.x;
        acc.y += qa * r.y;
      }
    __syncthreads();
  }
  if (a < 3) M[static_cast<long long>(leaves[blockIdx.x]) * 3 * nc + o] = acc;
}

// ------------------------------------------------------------------------------------ M2M
// Block per parent cell of one level: P_lm = sum over children sum_jk R_jk(d) M_{l-j, m-k}.
__global__ void m2m_kernel(const int* __restrict__ parents, const int* __restrict__ first_child,
                           const int* __restrict__ nchild, const GCell* __restrict__ cells, int p,
                           double2* __restrict__ M) {
  extern __shared__ double2 sh[];
  const int nc = cidx(p + 1, 0), nf = (p + 1) * (p + 1);
  double2* Rf = sh;        // [nf]
  double2* Mf = sh + nf;   // [3][nf]
  const int P = parents[blockIdx.x];
  const GCell C = cells[P];
  const int o = threadIdx.x, a = o / nc;
  int l = 0, m = 0;
  if (a < 3) lm_of(o - a * nc, l, m);
  double2 acc = make_double2(0, 0);
  for (int ch = first_child[P]; ch < first_child[P] + nchild[P]; ++ch) {
    const GCell H = cells[ch];
    if (threadIdx.x <= p) regular_column(H.cx - C.cx, H.cy - C.cy, H.cz - C.cz, p, threadIdx.x, Rf);
    stage_full(M + static_cast<long long>(ch) * 3 * nc, p, nc, Mf, false);
    __syncthreads();
    if (a < 3) {
      const double2* Ma = Mf + a * nf;
      for (int j = 0; j <= l; ++j) {
        const int n = l - j;
        for (int k = -j; k <= j; ++k) {
          const int mm = m - k;
          if (mm > n || mm < -n) continue;
          const double2 t = cmul(Rf[fidx(j, k)], Ma[fidx(n, mm)]);
          acc.x += t.x;
          acc.y += t.y;
        }
      }
    }
    __syncthreads();
  }
  if (a < 3) {
    double2& out = M[static_cast<long long>(P) * 3 * nc + o];
    out = make_double2(out.x + acc.x, out.y + acc.y);
  }
}

// ------------------------------------------------------------------------------------ M2L
// Translation tables.  Cells of one level at whole-cell offsets n (|n_i| <= kTableR), i.e. nearly
// every M2L of a uniform tree, share their table I_lm(n side_level): one per (level, n),
// computed once per downward() (m2l_table_kernel) and copied by the M2L instead of running the
// recurrence per translation.  Cell centres are dyadic fractions of the root cube, so a
// same-level offset is a whole number of sides to rounding; the table uses the exact multiple.
// Other pairs (different levels, larger offsets) run the recurrence as before.
constexpr int kTableR = 7, kTableW = 2 * kTableR + 1, kTablesPerLevel = kTableW * kTableW * kTableW;

struct TableGeometry {
  double side0;      // side of the root cube
  int levels;        // tables for levels 0 .. levels - 1 (double)
  const double2* t;  // double: [levels][kTablesPerLevel][nf], full layout
  const float2* u;   // float: [kTablesPerLevel][nf], unit side (I_lm(n) = side^(l+1) I_lm(n side))
};

// Where row n (orders -n..n) of the M2L's shared table T is centred: n^2 + n plus a padding,
// chosen so that the lanes of one load fall in different banks.  The float contraction's table
// loads were 35 % bank conflicts at p = 10 (ncu, 2^21: 1.87e9 of 5.37e9 shared-load
// wavefronts); the paddings of m2l_row_bases, found by a search over the kernel's exact access
// pattern (8-byte loads, 16 lanes per wavefront), cut them from 312 to 194 wavefronts per
// translation (lower bound 141).  size: the entries T needs.
struct RowBases {
  int b[kMaxGpuOrder + 1];
  int size;
};

// Block of 32 per (level, offset); lanes l <= p run the columns.  The zero offset is left unset
// (table_index never returns it).  V = float2: the unit-side tables (level 0 of side 1).
template <class V>
__global__ void m2l_table_kernel(int p, TableGeometry g, V* __restrict__ tables) {
  const int b = blockIdx.x, level = b / kTablesPerLevel, o = b - level * kTablesPerLevel;
  const int ix = o % kTableW - kTableR, iy = (o / kTableW) % kTableW - kTableR, iz = o / (kTableW * kTableW) - kTableR;
  if ((ix | iy | iz) == 0 || threadIdx.x > p) return;
  const double side = sizeof(V) == sizeof(double2) ? ldexp(g.side0, -level) : 1.0;
  irregular_column(ix * side, iy * side, iz * side, p, threadIdx.x, tables + static_cast<long long>(b) * (p + 1) * (p + 1),
                   false);
}

// Offset index (0 .. kTablesPerLevel - 1) of the offset d between same-level cells A and B (B's
// centre, shifted, minus A's) when it is a whole number of sides within the tables, or -1.
__device__ inline int table_offset(const TableGeometry& g, const GCell& A, const GCell& B, double dx, double dy,
                                   double dz) {
  if (A.level != B.level) return -1;
  const double inv = ldexp(1.0 / g.side0, A.level);
  const double q[3] = {dx * inv, dy * inv, dz * inv};
  int n[3];
  for (int d = 0; d < 3; ++d) {
    const double r = rint(q[d]);
    if (fabs(q[d] - r) > 1e-6 || fabs(r) > kTableR) return -1;
    n[d] = static_cast<int>(r);
  }
  if ((n[0] | n[1] | n[2]) == 0) return -1;
  return ((n[2] + kTableR) * kTableW + (n[1] + kTableR)) * kTableW + (n[0] + kTableR);
}

// Block per target cell, `warps` warps working independently ("multiple walks" over the source
// groups: warp w takes groups w, w + warps, ...).  A group is one source cell with all the
// periodic images of it that the target takes: its I_lm(d) tables are summed by the p + 1
// column lanes (each runs the recurrence up its column), the folded source multipole is
// staged, then the 32 lanes contract the 3 ncoef outputs dealt round-robin (balanced: lane q
// owns outputs q, q + 32, ...), accumulating in registers:
//   L_lm += sum_j sum_k (-1)^j conj(M_jk) T_{l+j, m+k}.
// The warps' partial sums are added in warp order at the end (repeatable).  No block barrier
// inside the loop.
// Q: outputs per lane, ceil(3 ncoef(p) / 32), a template parameter so the accumulators stay in
// registers.
// R = float (fmm.precision single): the same contraction in float on expansions scaled by the
// target cell's side s, which keeps every factor near 1 at any depth (unscaled, I_lm at degree
// 10 of level-8 cells is ~1e34): M'_j = M_j / s^j, T_n = s^(n+1) I_n(d) = I_n(d / s) (the
// unit-side tables, or the recurrence at d / s), and L_l = s^-(l+1) sum_j M'_j T_{l+j}, added
// to the double local expansion.  Expansions, tables and the other stages stay double.
// Three components at once: s[a] += sum over k = k0, k0 + dk, ... <= j of M'_a,jk T_k, with
// Mj = M' at (j, 0) (components nf apart) and Tj = T at (l + j, m).
// s += m t (complex) as four fused multiply-adds (written as s + m.x t.x - m.y t.y the compiler
// emits two multiplies, two FMAs and two adds: 12.9e9 unfused FP64 instructions against 5.2e9
// fused in one 2^21 M2L launch, ncu).
__device__ inline void cmac(double2& s, double2 m, double2 t) {
  s.x = fma(m.x, t.x, s.x);
  s.x = fma(-m.y, t.y, s.x);
  s.y = fma(m.x, t.y, s.y);
  s.y = fma(m.y, t.x, s.y);
}
__device__ inline void cmac(float2& s, float2 m, float2 t) {
  s.x = fmaf(m.x, t.x, s.x);
  s.x = fmaf(-m.y, t.y, s.x);
  s.y = fmaf(m.x, t.y, s.y);
  s.y = fmaf(m.y, t.x, s.y);
}

template <class V>
__device__ inline void contract3(const V* Tj, const V* Mj, int nf, int k0, int j, int dk, V s[3]) {
#pragma unroll
  for (int k = k0; k <= j; k += dk) {
    const V t = Tj[k];
    for (int a = 0; a < 3; ++a) cmac(s[a], Mj[a * nf + k], t);
  }
}

template <class V>
__device__ inline void add3(V acc[3], const V s[3]) {
  for (int a = 0; a < 3; ++a) {
    acc[a].x += s[a].x;
    acc[a].y += s[a].y;
  }
}

template <class R> struct Complex2;
template <> struct Complex2<double> { using type = double2; };
template <> struct Complex2<float> { using type = float2; };

// The folded multipole (-1)^n conj(M_nm) in the full layout, entry f = fidx(n, m): the stored
// coefficient cidx(n, |m|) it comes from, with the signs of its real and imaginary parts
// (M_{n,-m} = (-1)^m conj(M_nm)), packed as bits 0..19 the index, 20..25 the degree n,
// bit 30 negates Re, bit 31 negates Im.
__host__ __device__ inline unsigned fold_map(int f) {
  int n = 0;
  while ((n + 1) * (n + 1) <= f) ++n;
  const int m = f - n * n - n;
  // negm for m < 0: odd m (-x, y), even m (x, -y); then conj and (-1)^n.
  bool nre = false, nim = true;  // conj
  if (m < 0) {
    if ((-m) & 1) nre = !nre; else nim = !nim;
  }
  if (n & 1) {
    nre = !nre;
    nim = !nim;
  }
  return static_cast<unsigned>(cidx(n, m < 0 ? -m : m)) | static_cast<unsigned>(n) << 20 | (nre ? 1u << 30 : 0u) |
         (nim ? 1u << 31 : 0u);
}

// The single-precision M2L's sources, once per downward(): every cell's folded multipole
// scaled by its own side s, (-1)^n conj(M_nm) / s^n as float2, [cell][3][nfp] (nfp = nf
// rounded up to even, so that a cell's 3 nfp values copy as float4).
__global__ void fold_multipoles_kernel(int ncells, const GCell* __restrict__ cells, int p, double side0,
                                       const double2* __restrict__ M, float2* __restrict__ Mf) {
  const int nc = cidx(p + 1, 0), nf = (p + 1) * (p + 1), nfp = (nf + 1) & ~1;
  const long long total = static_cast<long long>(ncells) * 3 * nfp;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int f = static_cast<int>(i % nfp), a = static_cast<int>((i / nfp) % 3);
    const long long c = i / (3 * nfp);
    float2 v = make_float2(0, 0);
    if (f < nf) {
      const unsigned mp = fold_map(f);
      const int n = static_cast<int>((mp >> 20) & 63u);
      const double sc = pow(ldexp(side0, -cells[c].level), -n);
      const double2 x = M[(c * 3 + a) * nc + (mp & 0xfffffu)];
      v = make_float2(static_cast<float>((mp >> 30) & 1u ? -sc * x.x : sc * x.x),
                      static_cast<float>((mp >> 31) ? -sc * x.y : sc * x.y));
    }
    Mf[i] = v;
  }
}

// At degrees j where the outputs l <= p - j are more than 32: k outermost, so that the three
// multipole loads (broadcasts) serve all of a lane's outputs; QA = the rounds of 32 outputs
// that have an active lane at this j (a separate instantiation, so that idle rounds cost no
// issue slots).
template <int QA, int Q, class V>
__device__ inline void contract_k_outer(V (&acc)[Q][3], const V* T, const int* rowb, const V* Mj, int stride, int j,
                                        int lane, int nact, const int (&ol)[Q], const int (&om)[Q]) {
  const V* Tq[QA];
  bool on[QA];
#pragma unroll
  for (int q = 0; q < QA; ++q) {
    on[q] = lane + 32 * q < nact;
    Tq[q] = T + (on[q] ? rowb[ol[q] + j] + om[q] : 0);
  }
#pragma unroll
  for (int k = -j; k <= j; ++k) {
    const V m0 = Mj[k], m1 = Mj[stride + k], m2 = Mj[2 * stride + k];
#pragma unroll
    for (int q = 0; q < QA; ++q)
      if (on[q]) {
        const V t = Tq[q][k];
        cmac(acc[q][0], m0, t);
        cmac(acc[q][1], m1, t);
        cmac(acc[q][2], m2, t);
      }
  }
}

// At most 4 warps per block; double: 5 blocks per SM cap the registers at 102 a thread (at
// p = 10, 4 blocks: M2L 0.550 s at 2^24 lattice particles, 5: 0.521, 6: 0.524; without a bound
// the kernel took 136 registers, 3 blocks); float: 8 blocks, 64 registers (6: 0.350 s, 7:
// 0.337, 8: 0.324).  A prefetch of the next group's
// multipole into L1 gained nothing (0.521 s): ncu puts the limit in issue and shared-memory
// throughput, not in L2 latency.
// Mfold (float only): fold_multipoles_kernel's output.
// P > 0: the kernel for p = P alone (p_arg ignored; float p = 8, 10, 12, double p = 10), every
// j and k loop unrolled, so that the contraction's offsets are immediates (2^24 turbulent lattice, p = 10, float: 0.324 s -> 0.231
// s, and 7 blocks per SM: 8 gave 0.238, 6 0.239); P = 0: any p.
template <class R, int Q, int P = 0>
__global__ void __launch_bounds__(128, sizeof(R) == 4 ? (P > 0 ? 7 : 8) : 5)
    m2l_kernel(const int* __restrict__ targets, const int* __restrict__ goffset, const int* __restrict__ groups,
               const int2* __restrict__ entries, const GCell* __restrict__ tcells, const GCell* __restrict__ scells,
               const double4_32a* __restrict__ shifts, int p_arg, TableGeometry tg, RowBases rb,
               const double2* __restrict__ M, const float2* __restrict__ Mfold, double2* __restrict__ L) {
  using V = typename Complex2<R>::type;
  const int p = P > 0 ? P : p_arg;
  constexpr bool scaled = sizeof(R) == sizeof(float);
  extern __shared__ __align__(16) unsigned char m2l_shared[];
  const int nc = cidx(p + 1, 0), nf = (p + 1) * (p + 1), nfp = (nf + 1) & ~1, nout = 3 * nc;
  const int tsz = (rb.size + 1) & ~1, ws = tsz + 3 * nfp;  // a warp's T and Mf
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, warps = blockDim.x >> 5;
  V* sh = reinterpret_cast<V*>(m2l_shared);
  V* T = sh + w * ws;  // [tsz], row n centred at rowb[n]
  V* Mf = T + tsz;     // [3][nfp], folded
  unsigned* smap = reinterpret_cast<unsigned*>(sh + warps * ws);  // fold_map, double only
  // scaled: s^-n, n = 0 .. p + 1 (s: the side of the target's level).
  double* pw = reinterpret_cast<double*>(smap + nfp);
  int* rowb = reinterpret_cast<int*>(pw + p + 2);  // RowBases::b
  int* tpos = rowb + p + 1;                         // full-layout entry f -> its place in T
  const int A = targets[blockIdx.x];
  const GCell CA = tcells[A];
  const double inv_s = ldexp(1.0 / tg.side0, CA.level);
  if (threadIdx.x <= p) rowb[threadIdx.x] = rb.b[threadIdx.x];
  for (int f = threadIdx.x; f < nf; f += blockDim.x) {
    int n = 0;
    while ((n + 1) * (n + 1) <= f) ++n;
    tpos[f] = rb.b[n] + f - fidx(n, 0);
    if (!scaled) smap[f] = fold_map(f);
  }
  if (scaled && threadIdx.x == 0) {
    pw[0] = 1;
    for (int n = 1; n <= p + 1; ++n) pw[n] = pw[n - 1] * inv_s;
  }
  __syncthreads();
  // L_lm = sum_{j <= p - l} sum_{|k| <= j} M'_jk T_{l+j, m+k}, walked by source degree j, the
  // same j for every lane, so that the multipole's loads are one address (or, below, a few
  // consecutive ones) across the warp.  Lane owns the (l, m) outputs c = lane + 32 q with all
  // three components: one load of the table serves three multiply-adds.  At degree j only the
  // first A(j) = cidx(p - j + 1, 0) outputs (l <= p - j) take part; when they are fewer than 32,
  // G = 32 / A(j) lanes (a power of two, at most 8: eight consecutive complex values are one
  // conflict-free shared-memory access) share an output, each every G-th k, and their partial
  // sums meet in the owner lane by shuffles.  Fixed order throughout.
  V acc[Q][3];
  int ol[Q], om[Q];
  const int nq = (nc - lane + 31) / 32;
#pragma unroll
  for (int q = 0; q < Q; ++q) {
    for (int a = 0; a < 3; ++a) acc[q][a] = mk2<V>(0, 0);
    ol[q] = om[q] = 0;
    if (q < nq) lm_of(lane + 32 * q, ol[q], om[q]);
  }
  // (l, m) of output lane mod A' for A' = 32 / G = 32, 16, 8, 4.
  int sl[4], sm[4];
  for (int g = 0; g < 4; ++g) lm_of(lane & ((32 >> g) - 1), sl[g], sm[g]);
  const int g_end = goffset[blockIdx.x + 1];
  for (int g = goffset[blockIdx.x] + w; g < g_end; g += warps) {
    const int e0 = groups[g], e1 = groups[g + 1];
    const int src = entries[e0].x;
    const GCell CB = scells[src];
    for (int k = e0; k < e1; ++k) {
      const double4_32a s = shifts[entries[k].y];
      const double dx = CB.cx + s.x - CA.cx, dy = CB.cy + s.y - CA.cy, dz = CB.cz + s.z - CA.cz;
      const int o = table_offset(tg, CA, CB, dx, dy, dz);
      if (o >= 0 && (scaled || CA.level < tg.levels)) {
        const V* tab = scaled ? reinterpret_cast<const V*>(tg.u + static_cast<long long>(o) * nf)
                              : reinterpret_cast<const V*>(
                                    tg.t + static_cast<long long>(CA.level * kTablesPerLevel + o) * nf);
        for (int f = lane; f < nf; f += 32) {
          const V v = tab[f];
          V& t = T[tpos[f]];
          t = k > e0 ? mk2<V>(t.x + v.x, t.y + v.y) : v;
        }
      } else if (lane <= p) {
        if (scaled)
          irregular_column(dx * inv_s, dy * inv_s, dz * inv_s, p, lane, T, k > e0, rowb);
        else
          irregular_column(dx, dy, dz, p, lane, T, k > e0, rowb);
      }
      __syncwarp();
    }
    // Folded multipole in the full layout: float, a copy of Mfold (rescaled from the source's
    // side to the target's, 2^(dl n), when their levels differ); double, from M through the map.
    if (scaled) {
      const float2* Ms = Mfold + static_cast<long long>(src) * 3 * nfp;
      if (CB.level == CA.level) {
        const float4* s4 = reinterpret_cast<const float4*>(Ms);
        float4* d4 = reinterpret_cast<float4*>(Mf);
        for (int i = lane; i < 3 * nfp / 2; i += 32) d4[i] = s4[i];
      } else {
        const int dl = CA.level - CB.level;
        for (int f = lane; f < nf; f += 32) {
          int n = 0;
          while ((n + 1) * (n + 1) <= f) ++n;
          const float c = ldexpf(1.0f, dl * n);
          for (int a = 0; a < 3; ++a) {
            const float2 v = Ms[a * nfp + f];
            Mf[a * nfp + f] = mk2<V>(c * v.x, c * v.y);
          }
        }
      }
    } else {
      const double2* Ms = M + static_cast<long long>(src) * 3 * nc;
      for (int f = lane; f < nf; f += 32) {
        const unsigned mp = smap[f];
        const int ci = static_cast<int>(mp & 0xfffffu);
        const double sr = (mp >> 30) & 1u ? -1.0 : 1.0, si = (mp >> 31) ? -1.0 : 1.0;
        for (int a = 0; a < 3; ++a) {
          const double2 v = Ms[a * nc + ci];
          Mf[a * nfp + f] = mk2<V>(sr * v.x, si * v.y);
        }
      }
    }
    __syncwarp();
#pragma unroll
    for (int j = 0; j <= p; ++j) {
      const int nact = cidx(p - j + 1, 0);  // A(j)
      const V* Mj = Mf + fidx(j, 0);
      if (nact > 32) {
        const int rounds = (nact + 31) >> 5;
        if (rounds == 2)
          contract_k_outer<(Q < 2 ? Q : 2)>(acc, T, rowb, Mj, nfp, j, lane, nact, ol, om);
        else if (rounds == 3)
          contract_k_outer<(Q < 3 ? Q : 3)>(acc, T, rowb, Mj, nfp, j, lane, nact, ol, om);
        else
          contract_k_outer<Q>(acc, T, rowb, Mj, nfp, j, lane, nact, ol, om);
      } else {
        const int gl = nact > 16 ? 0 : nact > 8 ? 1 : nact > 4 ? 2 : 3;  // G = 2^gl lanes per output
        const int Ap = 32 >> gl;
        const int o = lane & (Ap - 1), t0 = lane >> (5 - gl);
        V sq[3] = {mk2<V>(0, 0), mk2<V>(0, 0), mk2<V>(0, 0)};
        if (o < nact) contract3(T + rowb[sl[gl] + j] + sm[gl], Mj, nfp, -j + t0, j, 1 << gl, sq);
        for (int off = 16; off >= Ap; off >>= 1)
          for (int a = 0; a < 3; ++a) {
            sq[a].x += __shfl_down_sync(0xffffffffu, sq[a].x, off);
            sq[a].y += __shfl_down_sync(0xffffffffu, sq[a].y, off);
          }
        if (lane < nact) add3(acc[0], sq);  // the owner: o == lane, t0 == 0
      }
    }
    __syncwarp();  // T and Mf are rewritten by the next group
  }
  // Sum the warps in order: their partials go to shared memory, then each output adds them in
  // warp order.
  __syncthreads();
  V* part = sh;  // [warps][nout], reuses the tables (nout <= ws)
#pragma unroll
  for (int q = 0; q < Q; ++q)
    if (q < nq)
      for (int a = 0; a < 3; ++a) part[w * nout + a * nc + lane + 32 * q] = acc[q][a];
  __syncthreads();
  for (int o = threadIdx.x; o < nout; o += blockDim.x) {
    V s = part[o];
    for (int v = 1; v < warps; ++v) {
      s.x += part[v * nout + o].x;
      s.y += part[v * nout + o].y;
    }
    double sx = s.x, sy = s.y;
    if (scaled) {  // L_l = s^-(l+1) L'_l
      int l, m;
      lm_of(o % nc, l, m);
      sx *= pw[l + 1];
      sy *= pw[l + 1];
    }
    double2& out = L[static_cast<long long>(A) * nout + o];
    out = make_double2(out.x + sx, out.y + sy);
  }
}

// ------------------------------------------------------------------------------------ L2L
// Block per child cell of one level: L_jk += sum_n sum_q L^parent_{n+j, k+q} conj(R_nq(d)).
__global__ void l2l_kernel(const int* __restrict__ children, const GCell* __restrict__ cells, int p,
                           double2* __restrict__ L) {
  extern __shared__ double2 sh[];
  const int nc = cidx(p + 1, 0), nf = (p + 1) * (p + 1);
  double2* Rf = sh;
  double2* Lf = sh + nf;
  const int c = children[blockIdx.x];
  const GCell C = cells[c];
  const GCell P = cells[C.parent];
  if (threadIdx.x <= p) regular_column(C.cx - P.cx, C.cy - P.cy, C.cz - P.cz, p, threadIdx.x, Rf);
  stage_full(L + static_cast<long long>(C.parent) * 3 * nc, p, nc, Lf, false);
  __syncthreads();
  const int o = threadIdx.x, a = o / nc;
  if (a >= 3) return;
  int j = 0, k = 0;
  lm_of(o - a * nc, j, k);
  const double2* La = Lf + a * nf;
  double2 acc = make_double2(0, 0);
  for (int n = 0; n <= p - j; ++n)
    for (int q = -n; q <= n; ++q) {
      const double2 t = cmul(La[fidx(n + j, k + q)], cconj(Rf[fidx(n, q)]));
      acc.x += t.x;
      acc.y += t.y;
    }
  double2& out = L[static_cast<long long>(c) * 3 * nc + o];
  out = make_double2(out.x + acc.x, out.y + acc.y);
}

// ------------------------------------------------------------------------------------ L2P
// Block per target leaf, thread per target: the local expansion shifted to degrees <= 2 at the
// target (rows of R(d) by the recurrence, three at a time), then
//   grad phi = (-Re L11, -Im L11, Re L10),
//   phi_xx = (c - L20)/2, phi_yy = -(c + L20)/2, phi_zz = L20, phi_xy = d/2, phi_xz = -Re L21,
//   phi_yz = -Im L21   (L22 = c + i d; from phi = sum L_jk conj(R_jk(r)), R_1 and R_2 written out),
// u = curl psi, grad u_m,l = eps_mjk d_l d_j psi_k, psi = phi / (4 pi).  near (float or double,
// 12 per target) is added when given.
template <class N>
__global__ void l2p_kernel(const int* __restrict__ leaves, const GCell* __restrict__ cells,
                           const double4_32a* __restrict__ x, int p, const double2* __restrict__ L,
                           const N* __restrict__ near, const int* __restrict__ perm, MeanTerms mc, bool correct,
                           double* __restrict__ u_out, double* __restrict__ grad_out) {
  extern __shared__ double2 sh[];
  const int nc = cidx(p + 1, 0), nf = (p + 1) * (p + 1);
  double2* Lf = sh;  // [3][nf]
  const int cell = leaves[blockIdx.x];
  const GCell C = cells[cell];
  stage_full(L + static_cast<long long>(cell) * 3 * nc, p, nc, Lf, false);
  __syncthreads();
  for (int i = C.begin + threadIdx.x; i < C.end; i += blockDim.x) {
    const double4_32a xi = x[i];
    const double dx = xi.x - C.cx, dy = xi.y - C.cy, dz = xi.z - C.cz, r2 = dx * dx + dy * dy + dz * dz;
    double2 Lt[3][6];
    for (int a = 0; a < 3; ++a)
      for (int c = 0; c < 6; ++c) Lt[a][c] = make_double2(0, 0);
    double2 rows[3][kMaxGpuOrder + 1];  // rows n - 2, n - 1, n of R (m >= 0), cyclic
    for (int n = 0; n <= p; ++n) {
      double2* Rn = rows[n % 3];
      if (n == 0) {
        Rn[0] = make_double2(1, 0);
      } else {
        const double2* R1 = rows[(n - 1) % 3];
        const double2* R2 = rows[(n + 1) % 3];  // n - 2
        const int l = n - 1;
        for (int m = 0; m <= l; ++m) {
          const double2 prev = (m <= l - 1) ? R2[m] : make_double2(0, 0);
          const double den = double((l + m + 1) * (l - m + 1));
          Rn[m] = make_double2((double(2 * l + 1) * dz * R1[m].x - r2 * prev.x) / den,
                               (double(2 * l + 1) * dz * R1[m].y - r2 * prev.y) / den);
        }
        const double2 t = cmul(make_double2(dx, dy), R1[l]);
        Rn[n] = make_double2(-t.x / double(2 * l + 2), -t.y / double(2 * l + 2));
      }
      for (int j = 0; j <= 2 && j <= p - n; ++j)
        for (int k = 0; k <= j; ++k)
          for (int q = -n; q <= n; ++q) {
            const double2 Rq = q >= 0 ? Rn[q] : negm(Rn[-q], -q);
            const int f = fidx(n + j, k + q);
            for (int a = 0; a < 3; ++a) {
              const double2 t = cmul(Lf[a * nf + f], cconj(Rq));
              Lt[a][cidx(j, k)].x += t.x;
              Lt[a][cidx(j, k)].y += t.y;
            }
          }
    }
    double dphi[3][3], h[3][3][3];
    for (int a = 0; a < 3; ++a) {
      const double2 L10 = Lt[a][cidx(1, 0)], L11 = Lt[a][cidx(1, 1)];
      const double L20 = Lt[a][cidx(2, 0)].x;
      const double2 L21 = Lt[a][cidx(2, 1)], L22 = Lt[a][cidx(2, 2)];
      dphi[a][0] = -L11.x;
      dphi[a][1] = -L11.y;
      dphi[a][2] = L10.x;
      h[a][0][0] = 0.5 * (L22.x - L20);
      h[a][1][1] = -0.5 * (L22.x + L20);
      h[a][2][2] = L20;
      h[a][0][1] = h[a][1][0] = 0.5 * L22.y;
      h[a][0][2] = h[a][2][0] = -L21.x;
      h[a][1][2] = h[a][2][1] = -L21.y;
    }
    const double inv4pi = 0.25 / 3.14159265358979323846;
    double r[12];
    r[0] = inv4pi * (dphi[2][1] - dphi[1][2]);
    r[1] = inv4pi * (dphi[0][2] - dphi[2][0]);
    r[2] = inv4pi * (dphi[1][0] - dphi[0][1]);
    for (int k = 0; k < 3; ++k) {
      r[3 + k] = inv4pi * (h[2][1][k] - h[1][2][k]);
      r[6 + k] = inv4pi * (h[0][2][k] - h[2][0][k]);
      r[9 + k] = inv4pi * (h[1][0][k] - h[0][1][k]);
    }
    if (near) {
      const N* ni = near + 12 * static_cast<long long>(i);
      for (int c = 0; c < 12; ++c) r[c] += double(ni[c]);
    }
    if (correct) {
      const double xd[3] = {xi.x, xi.y, xi.z};
      mean_correction(mc, xd, r, r + 3);
    }
    const long long o = perm[i];
    for (int c = 0; c < 3; ++c) u_out[3 * o + c] = r[c];
    for (int c = 0; c < 9; ++c) grad_out[9 * o + c] = r[3 + c];
  }
}

int round_up32(int n) { return (n + 31) / 32 * 32; }

}  // namespace

struct FarGpu::Impl {
  int p = 0, nc = 0, nf = 0, nt = 0, ns = 0, chunk = 1;
  bool self = false;
  long long n_m2l = 0;
  DevBuf tcells, scells, xs, xt, alpha, shifts;
  DevBuf src_leaves, tgt_leaves, first_child, nchild;
  std::vector<std::pair<int, int>> m2m_levels;  // (offset, count) into parents, bottom-up
  std::vector<std::pair<int, int>> l2l_levels;  // (offset, count) into children, top-down
  DevBuf parents, children;
  DevBuf m2l_targets, m2l_entries, m2l_goffset, m2l_groups;
  DevBuf perm;  // sorted target -> input index (from tgt.perm)
  const int* perm_dev = nullptr;  // perm, or a SortedSourcesGpu's permutation (self)
  // Sorted positions (x, y, z, unused): xs, xt or those of the P2PGpu given to the constructor.
  const double4_32a* xs_dev = nullptr;
  const double4_32a* xt_dev = nullptr;
  const double4_32a* alpha_dev = nullptr;  // alpha or a SortedSourcesGpu's strengths
  int n_src_leaves = 0, n_tgt_leaves = 0, n_m2l_targets = 0;
  DevBuf M, L, out;
  bool m2l_fp32 = false;  // M2L in float on scaled expansions (fmm.precision single)
  DevBuf Mfold;   // single-precision M2L: the folded, scaled float multipoles (fold_multipoles_kernel)
  DevBuf tables;  // M2L tables per (level, whole-cell offset), or the float unit-side ones; first downward()
  TableGeometry table_geometry{};
  cudaEvent_t ev[5] = {};
  ~Impl() {
    for (auto& e : ev)
      if (e) cudaEventDestroy(e);
  }
  int threads() const { return round_up32(3 * nc); }
  // The constructors' common parts: parameters, cells, positions and level lists up (before
  // the M2L lists); the expansions and outputs allocated (after them).
  void setup(const Tree& tgt, const Tree& src, bool self, const std::vector<Vec3>& shifts, int p, const P2PGpu* near,
             StepTimer& st);
  void finish(const Tree& tgt, const Tree& src, StepTimer& st);
};

namespace {

// RowBases of the M2L: n^2 + n plus the paddings found by bench/fmm/m2l_bank_conflicts.py for
// the float kernels at p = 8, 10 and 12 (cumulative per row); none elsewhere (the double kernels'
// 16-byte loads have another bank pattern, and other p use the generic kernel).
RowBases m2l_row_bases(int p, bool single) {
  static const int pad8[9] = {0, 10, 3, 6, 0, 7, 10, 14, 8};                  // 165 -> 92 wavefronts
  static const int pad10[11] = {0, 0, 4, 3, 11, 12, 9, 7, 2, 8, 6};          // 312 -> 194
  static const int pad12[13] = {0, 13, 2, 14, 5, 12, 0, 9, 2, 4, 3, 5, 1};   // 513 -> 372
  const int* pad = !single ? nullptr : p == 8 ? pad8 : p == 10 ? pad10 : p == 12 ? pad12 : nullptr;
  RowBases rb{};
  int acc = 0;
  for (int n = 0; n <= p; ++n) {
    acc += pad ? pad[n] : 0;
    rb.b[n] = n * n + n + acc;
  }
  rb.size = rb.b[p] + p + 1;
  return rb;
}

std::vector<GCell> gcells(const Tree& t) {
  std::vector<GCell> g(t.cells.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    const Cell& c = t.cells[i];
    g[i] = GCell{c.center[0], c.center[1], c.center[2], c.begin, c.end, c.parent, c.level};
  }
  return g;
}

// Uploads x as double4 (x, y, z, 0).
void upload_positions(DevBuf& d, const std::vector<Vec3>& x) {
  d.upload_with<double4_32a>(x.size(), [&](std::ptrdiff_t i) { return make_double4_32a(x[i][0], x[i][1], x[i][2], 0.0); });
}

// FarGpu's M2L arrays from the host lists (M2LArrays): target cells with a list, each list
// sorted by (source, shift) where it mixes shifts (as the CPU's M2L does), and its groups.
// alloc(n) gives room for the n entries (pinned staging memory for the upload, or a vector);
// cells in parallel.  Returns the number of entries.
template <class Alloc>
std::size_t group_m2l_lists(const Tree& tgt, const Lists& lists, std::vector<int>& tg, std::vector<int>& goff,
                            std::vector<int>& groups, Alloc&& alloc) {
  std::vector<int> off{0};
  tg.clear();
  for (std::size_t i = 0; i < tgt.cells.size() && i < lists.m2l.size(); ++i)
    if (!lists.m2l[i].empty()) {
      tg.push_back(static_cast<int>(i));
      off.push_back(off.back() + static_cast<int>(lists.m2l[i].size()));
    }
  const std::size_t n_ent = static_cast<std::size_t>(off.back());
  std::array<int, 2>* ent = alloc(n_ent);
  std::vector<int> ngroup(tg.size() + 1, 0);
#pragma omp parallel for schedule(dynamic, 16)
  for (int t = 0; t < static_cast<int>(tg.size()); ++t) {
    std::array<int, 2>* e = ent + off[t];
    const auto& l = lists.m2l[tg[t]];
    bool one_shift = true;
    for (std::size_t k = 0; k < l.size(); ++k) {
      e[k] = {l[k].source, l[k].shift};
      one_shift = one_shift && l[k].shift == l[0].shift;
    }
    // With one shift every source appears once (the traversal meets a pair once per shift):
    // each entry is its own group and the list needs no sorting.
    if (!one_shift) std::sort(e, e + l.size());  // (source, shift), lexicographic
    for (std::size_t k = 0; k < l.size(); ++k) ngroup[t + 1] += (k == 0 || e[k][0] != e[k - 1][0]) ? 1 : 0;
  }
  // Groups (one source, all its images): per target cell [goff[t], goff[t+1]) into `groups`,
  // group g = entries [groups[g], groups[g+1]).
  goff.assign(tg.size() + 1, 0);
  for (std::size_t t = 0; t < tg.size(); ++t) goff[t + 1] = goff[t] + ngroup[t + 1];
  groups.assign(goff.back() + 1, 0);
  groups[goff.back()] = off.back();
#pragma omp parallel for schedule(dynamic, 16)
  for (int t = 0; t < static_cast<int>(tg.size()); ++t) {
    int g = goff[t];
    for (int k = off[t]; k < off[t + 1]; ++k)
      if (k == off[t] || ent[k][0] != ent[k - 1][0]) groups[g++] = k;
  }
  return n_ent;
}

}  // namespace

void FarGpu::Impl::setup(const Tree& tgt, const Tree& src, bool self, const std::vector<Vec3>& shifts, int p,
                         const P2PGpu* near, StepTimer& st) {
  Impl& m = *this;
  if (p < 1 || p > kMaxGpuOrder)
    throw std::invalid_argument("FarGpu: p = " + std::to_string(p) + " must be in [1, " +
                                std::to_string(kMaxGpuOrder) + "] on the GPU");
  m.p = p;
  m.nc = ncoef(p);
  m.nf = (p + 1) * (p + 1);
  m.self = self;
  m.nt = tgt.size();
  m.ns = src.size();
  m.chunk = std::max(1, std::min(32, static_cast<int>((40 * 1024) / (m.nc * sizeof(double2) + 3 * sizeof(double)))));

  m.scells.upload(gcells(src));
  if (!self) m.tcells.upload(gcells(tgt));
  if (near) {
    m.xs_dev = static_cast<const double4_32a*>(near->device_sources());
    m.xt_dev = static_cast<const double4_32a*>(near->device_targets());
  } else {
    upload_positions(m.xs, src.x);
    if (!self) upload_positions(m.xt, tgt.x);
    m.xs_dev = m.xs.as<double4_32a>();
    m.xt_dev = self ? m.xs_dev : m.xt.as<double4_32a>();
  }
  std::vector<double4_32a> sh(shifts.size());
  for (std::size_t s = 0; s < shifts.size(); ++s) sh[s] = make_double4_32a(shifts[s][0], shifts[s][1], shifts[s][2], 0);
  if (sh.empty()) sh.push_back(make_double4_32a(0, 0, 0, 0));
  m.shifts.upload(sh);
  m.table_geometry.side0 = 2 * tgt.cells[0].half;  // the trees share the root cube
  m.table_geometry.levels = static_cast<int>(std::min(tgt.levels.size(), src.levels.size()));
  st.mark("cells+positions up");

  // Source leaves, parents per level (bottom-up), children per level (top-down), target leaves.
  std::vector<int> sl, fc(src.cells.size()), nch(src.cells.size()), par, chl, tl;
  for (std::size_t c = 0; c < src.cells.size(); ++c) {
    fc[c] = src.cells[c].child;
    nch[c] = src.cells[c].nchild;
    if (src.cells[c].leaf() && src.cells[c].end > src.cells[c].begin) sl.push_back(static_cast<int>(c));
  }
  for (int lev = static_cast<int>(src.levels.size()) - 2; lev >= 0; --lev) {
    const int off = static_cast<int>(par.size());
    for (int c : src.levels[lev])
      if (src.cells[c].nchild > 0) par.push_back(c);
    if (static_cast<int>(par.size()) > off) m.m2m_levels.push_back({off, static_cast<int>(par.size()) - off});
  }
  for (int lev = 1; lev < static_cast<int>(tgt.levels.size()); ++lev) {
    const int off = static_cast<int>(chl.size());
    for (int c : tgt.levels[lev]) chl.push_back(c);
    if (static_cast<int>(chl.size()) > off) m.l2l_levels.push_back({off, static_cast<int>(chl.size()) - off});
  }
  for (std::size_t c = 0; c < tgt.cells.size(); ++c)
    if (tgt.cells[c].leaf() && tgt.cells[c].end > tgt.cells[c].begin) tl.push_back(static_cast<int>(c));
  m.n_src_leaves = static_cast<int>(sl.size());
  m.n_tgt_leaves = static_cast<int>(tl.size());
  m.src_leaves.upload(sl);
  m.first_child.upload(fc);
  m.nchild.upload(nch);
  m.parents.upload(par);
  m.children.upload(chl);
  m.tgt_leaves.upload(tl);
  st.mark("level lists");
}

void FarGpu::Impl::finish(const Tree& tgt, const Tree& src, StepTimer& st) {
  Impl& m = *this;
  m.M.resize(src.cells.size() * 3 * m.nc * sizeof(double2));
  m.L.resize(tgt.cells.size() * 3 * m.nc * sizeof(double2));
  st.mark("m2l lists up");
  if (!tgt.perm.empty()) {
    m.perm.upload(tgt.perm);
    m.perm_dev = m.perm.as<int>();
  }
  m.out.resize(static_cast<std::size_t>(m.nt) * 12 * sizeof(double));
  for (auto& e : m.ev) VH_FMM_CUDA(cudaEventCreate(&e));
  // Dynamic shared memory above 48 KB is not needed: P2M chunks fit 40 KB, the rest 4 nf double2.
}

FarGpu::FarGpu(const Tree& tgt, const Tree& src, bool self, const Lists& lists, const std::vector<Vec3>& shifts, int p,
               const P2PGpu* near)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  StepTimer st("far setup");
  m.setup(tgt, src, self, shifts, p, near, st);
  // The entries are written straight into the pinned staging memory (8.6e7 of them at 2^24
  // particles) and uploaded from there before anything else uses it.
  static_assert(sizeof(std::array<int, 2>) == sizeof(int2), "entry layout");
  std::vector<int> tg, goff, groups;
  void* ent = nullptr;
  const std::size_t n_ent = group_m2l_lists(tgt, lists, tg, goff, groups, [&](std::size_t n) {
    ent = pinned_staging(std::max<std::size_t>(1, n) * sizeof(int2));
    return static_cast<std::array<int, 2>*>(ent);
  });
  st.mark("m2l lists sorted");
  m.m2l_entries.resize(n_ent * sizeof(int2));
  if (n_ent) VH_FMM_CUDA(cudaMemcpy(m.m2l_entries.p, ent, n_ent * sizeof(int2), cudaMemcpyHostToDevice));
  m.m2l_goffset.upload(goff);
  m.m2l_groups.upload(groups);
  m.n_m2l = static_cast<long long>(n_ent);
  m.n_m2l_targets = static_cast<int>(tg.size());
  m.m2l_targets.upload(tg);
  m.finish(tgt, src, st);
}

FarGpu::FarGpu(const Tree& tgt, const Tree& src, bool self, GpuLists& lists, const std::vector<Vec3>& shifts, int p,
               const P2PGpu* near)
    : impl_(std::make_unique<Impl>()) {
  if (!lists.dev || lists.dev->m2l_taken) throw std::invalid_argument("FarGpu: the GpuLists' M2L arrays were taken");
  if (lists.self != self || lists.shifts.size() != shifts.size())
    throw std::invalid_argument("FarGpu: GpuLists built for other self/shifts");
  Impl& m = *impl_;
  StepTimer st("far setup");
  m.setup(tgt, src, self, shifts, p, near, st);
  GpuListsDevice& d = *lists.dev;
  take_buffer(m.m2l_targets, d.m2l_targets);
  take_buffer(m.m2l_goffset, d.m2l_goffset);
  take_buffer(m.m2l_groups, d.m2l_groups);
  take_buffer(m.m2l_entries, d.m2l_entries);
  d.m2l_taken = true;
  m.n_m2l = lists.n_m2l;
  m.n_m2l_targets = lists.n_m2l_targets;
  m.finish(tgt, src, st);
}

M2LArrays m2l_arrays(const Tree& tgt, const Lists& lists) {
  M2LArrays a;
  group_m2l_lists(tgt, lists, a.targets, a.goffset, a.groups, [&](std::size_t n) {
    a.entries.resize(n);
    return a.entries.data();
  });
  return a;
}

FarGpu::~FarGpu() = default;

void FarGpu::set_strengths(const SortedSourcesGpu& s) {
  Impl& m = *impl_;
  if (s.size() != m.ns) throw std::invalid_argument("FarGpu: one strength per source");
  m.alpha_dev = static_cast<const double4_32a*>(s.alpha_double());
  if (m.self) m.perm_dev = s.permutation();
}

void FarGpu::set_strengths(const std::vector<Vec3>& alpha) {
  Impl& m = *impl_;
  if (static_cast<int>(alpha.size()) != m.ns) throw std::invalid_argument("FarGpu: one strength per source");
  upload_positions(m.alpha, alpha);
  m.alpha_dev = m.alpha.as<double4_32a>();
}

void FarGpu::set_single_m2l(bool on) {
  Impl& m = *impl_;
  if (m.tables.p && on != m.m2l_fp32) throw std::logic_error("FarGpu::set_single_m2l after downward()");
  m.m2l_fp32 = on;
}

std::vector<std::complex<double>> FarGpu::upward() {
  Impl& m = *impl_;
  if (m.ns > 0 && !m.alpha_dev) throw std::runtime_error("FarGpu::upward: set_strengths first");
  VH_FMM_CUDA(cudaEventRecord(m.ev[0]));
  VH_FMM_CUDA(cudaMemset(m.M.p, 0, m.M.bytes));
  const GCell* sc = m.scells.as<GCell>();
  if (m.n_src_leaves > 0) {
    const std::size_t shm = m.chunk * (m.nc * sizeof(double2) + 3 * sizeof(double));
    p2m_kernel<<<m.n_src_leaves, m.threads(), shm>>>(m.src_leaves.as<int>(), sc, m.xs_dev,
                                                     m.alpha_dev, m.p, m.chunk, m.M.as<double2>());
    VH_FMM_CUDA(cudaGetLastError());
  }
  const std::size_t shm = 4 * m.nf * sizeof(double2);
  for (const auto& lv : m.m2m_levels) {
    m2m_kernel<<<lv.second, m.threads(), shm>>>(m.parents.as<int>() + lv.first, m.first_child.as<int>(),
                                                m.nchild.as<int>(), sc, m.p, m.M.as<double2>());
    VH_FMM_CUDA(cudaGetLastError());
  }
  VH_FMM_CUDA(cudaEventRecord(m.ev[1]));
  std::vector<std::complex<double>> root(3 * m.nc);
  if (m.ns > 0) VH_FMM_CUDA(cudaMemcpy(root.data(), m.M.p, root.size() * sizeof(double2), cudaMemcpyDeviceToHost));
  return root;
}

void FarGpu::downward(const std::vector<std::complex<double>>& root_local, const P2PGpu* near,
                      const MeanTerms* mean) {
  Impl& m = *impl_;
  VH_FMM_CUDA(cudaMemset(m.L.p, 0, m.L.bytes));
  if (!root_local.empty()) {
    if (static_cast<int>(root_local.size()) != 3 * m.nc) throw std::invalid_argument("FarGpu: root_local size");
    VH_FMM_CUDA(cudaMemcpy(m.L.p, root_local.data(), root_local.size() * sizeof(double2), cudaMemcpyHostToDevice));
  }
  const GCell* sc = m.scells.as<GCell>();
  const GCell* tc = m.self ? sc : m.tcells.as<GCell>();
  const std::size_t shm = 4 * m.nf * sizeof(double2);
  VH_FMM_CUDA(cudaEventRecord(m.ev[2]));
  if (m.n_m2l_targets > 0 && m.m2l_fp32 && !m.tables.p) {
    m.tables.resize(static_cast<std::size_t>(kTablesPerLevel) * m.nf * sizeof(float2));
    m2l_table_kernel<<<kTablesPerLevel, 32>>>(m.p, m.table_geometry, m.tables.as<float2>());
    VH_FMM_CUDA(cudaGetLastError());
    m.table_geometry.u = m.tables.as<float2>();
  } else if (m.n_m2l_targets > 0 && !m.m2l_fp32 && !m.tables.p && m.table_geometry.levels > 0) {
    const int nb = m.table_geometry.levels * kTablesPerLevel;
    m.tables.resize(static_cast<std::size_t>(nb) * m.nf * sizeof(double2));
    m2l_table_kernel<<<nb, 32>>>(m.p, m.table_geometry, m.tables.as<double2>());
    VH_FMM_CUDA(cudaGetLastError());
    m.table_geometry.t = m.tables.as<double2>();
  }
  if (m.n_m2l_targets > 0) {
    // Warps per block: as many as fit 40 KB of tables and multipoles (ws complex values each),
    // at most 4; the final reduction reuses the space (3 ncoef <= ws).  Then the staging map,
    // the powers of the scale, the row bases and the table positions.
    const std::size_t cx = m.m2l_fp32 ? sizeof(float2) : sizeof(double2);
    const RowBases rb = m2l_row_bases(m.p, m.m2l_fp32);
    const int nfp = (m.nf + 1) & ~1, ws = ((rb.size + 1) & ~1) + 3 * nfp;
    const int warps = std::max(1, std::min(4, static_cast<int>((40 * 1024) / (ws * cx))));
    const int q = (m.nc + 31) / 32;  // (l, m) outputs per lane
    const std::size_t shm_m2l = warps * ws * cx + nfp * sizeof(unsigned) + (m.p + 2) * sizeof(double) +
                                (m.p + 1 + m.nf) * sizeof(int);
    if (m.m2l_fp32) {
      const int ncells = static_cast<int>(m.M.bytes / (3 * m.nc * sizeof(double2)));
      m.Mfold.resize(static_cast<std::size_t>(ncells) * 3 * nfp * sizeof(float2));
      fold_multipoles_kernel<<<std::min(65535, (ncells * 3 * nfp + 255) / 256), 256>>>(
          ncells, sc, m.p, m.table_geometry.side0, m.M.as<double2>(), m.Mfold.as<float2>());
      VH_FMM_CUDA(cudaGetLastError());
    }
    auto launch = [&](auto kernel) {
      kernel<<<m.n_m2l_targets, 32 * warps, shm_m2l>>>(m.m2l_targets.as<int>(), m.m2l_goffset.as<int>(),
                                                        m.m2l_groups.as<int>(), m.m2l_entries.as<int2>(), tc, sc,
                                                        m.shifts.as<double4_32a>(), m.p, m.table_geometry, rb,
                                                        m.M.as<double2>(), m.Mfold.as<float2>(),
                                                        m.L.as<double2>());
    };
    if (m.m2l_fp32) {
      if (q <= 1) launch(m2l_kernel<float, 1>);       // p <= 6
      else if (m.p == 8) launch(m2l_kernel<float, 3, 8>);  // the tolerance table's p
      else if (m.p == 10) launch(m2l_kernel<float, 3, 10>);
      else if (m.p == 12) launch(m2l_kernel<float, 3, 12>);
      else if (q <= 3) launch(m2l_kernel<float, 3>);  // p <= 10
      else if (q <= 4) launch(m2l_kernel<float, 4>);  // p <= 14
      else launch(m2l_kernel<float, 8>);              // p <= 20
    } else {
      if (q <= 1) launch(m2l_kernel<double, 1>);
      else if (m.p == 10) launch(m2l_kernel<double, 3, 10>);
      else if (q <= 3) launch(m2l_kernel<double, 3>);
      else if (q <= 4) launch(m2l_kernel<double, 4>);
      else launch(m2l_kernel<double, 8>);
    }
    VH_FMM_CUDA(cudaGetLastError());
  }
  VH_FMM_CUDA(cudaEventRecord(m.ev[3]));
  for (const auto& lv : m.l2l_levels) {
    l2l_kernel<<<lv.second, m.threads(), shm>>>(m.children.as<int>() + lv.first, tc, m.p, m.L.as<double2>());
    VH_FMM_CUDA(cudaGetLastError());
  }
  if (near) near->make_default_stream_wait();
  if (m.n_tgt_leaves > 0) {
    if (!m.perm_dev)
      throw std::invalid_argument("FarGpu: the targets' permutation is unknown (a tree without perm takes it from "
                                  "set_strengths(const SortedSourcesGpu&) with self)");
    const double4_32a* xt = m.xt_dev;
    const MeanTerms mc = mean ? *mean : MeanTerms{};
    const bool correct = mean != nullptr;
    double* u_out = m.out.as<double>();
    double* grad_out = u_out + 3 * static_cast<std::size_t>(m.nt);
    const std::size_t shm_l2p = 3 * m.nf * sizeof(double2);
    if (near && near->n_targets() > 0 && near->device_result_is_double())
      l2p_kernel<double><<<m.n_tgt_leaves, 64, shm_l2p>>>(m.tgt_leaves.as<int>(), tc, xt, m.p, m.L.as<double2>(),
                                                           static_cast<const double*>(near->device_result()),
                                                           m.perm_dev, mc, correct, u_out, grad_out);
    else
      l2p_kernel<float><<<m.n_tgt_leaves, 64, shm_l2p>>>(
          m.tgt_leaves.as<int>(), tc, xt, m.p, m.L.as<double2>(),
          near && near->n_targets() > 0 ? static_cast<const float*>(near->device_result()) : nullptr,
          m.perm_dev, mc, correct, u_out, grad_out);
    VH_FMM_CUDA(cudaGetLastError());
  }
  VH_FMM_CUDA(cudaEventRecord(m.ev[4]));
}

void FarGpu::get(std::vector<Vec3>& u, std::vector<Mat3>& grad) const {
  const Impl& m = *impl_;
  // Vec3 and Mat3 are arrays of doubles (3 and 9, no padding).
  static_assert(sizeof(Vec3) == 3 * sizeof(double) && sizeof(Mat3) == 9 * sizeof(double), "Vec3/Mat3 layout");
  if (u.size() != static_cast<std::size_t>(m.nt)) u.resize(m.nt);
  if (grad.size() != static_cast<std::size_t>(m.nt)) grad.resize(m.nt);
  if (m.nt == 0) return;
  // Through the pinned staging memory, copied out by all host threads (a pageable download of
  // 1.6 GB at 2^24 targets runs at a few GB/s).
  const std::size_t n = static_cast<std::size_t>(m.nt);
  double* h = static_cast<double*>(pinned_staging(12 * n * sizeof(double)));
  VH_FMM_CUDA(cudaMemcpy(h, m.out.p, 12 * n * sizeof(double), cudaMemcpyDeviceToHost));
  const double* hg = h + 3 * n;
  const std::ptrdiff_t nn = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < nn; ++i) {
    for (int c = 0; c < 3; ++c) u[i][c] = h[3 * i + c];
    for (int a = 0; a < 3; ++a)
      for (int c = 0; c < 3; ++c) grad[i][a][c] = hg[9 * i + 3 * a + c];
  }
}

FarGpuTimes FarGpu::times() const {
  const Impl& m = *impl_;
  VH_FMM_CUDA(cudaEventSynchronize(m.ev[4]));
  float a = 0, b = 0, c = 0;
  VH_FMM_CUDA(cudaEventElapsedTime(&a, m.ev[0], m.ev[1]));
  VH_FMM_CUDA(cudaEventElapsedTime(&b, m.ev[2], m.ev[3]));
  VH_FMM_CUDA(cudaEventElapsedTime(&c, m.ev[3], m.ev[4]));
  return {a, b, c};
}

long long FarGpu::n_m2l() const { return impl_->n_m2l; }

}  // namespace vh::fmm
