// The GPU far field's M2L (far_gpu.h for the layout, expansions.h for the formula):
// translation tables per level and whole-cell offset, the folded float multipoles of the
// single-precision M2L, and the M2L kernel (block per target cell, warps walking the source
// groups).
#include <algorithm>

#include "base/cuda_check.h"
#include "fmm/far_gpu_device.h"

namespace vh::fmm {

namespace {

// Translation tables (far_gpu_device.h): one per (level, whole-cell offset), built when the
// FarWork has none for this p, precision, root side and depth (m2l_table_kernel).  Cell centres
// are dyadic fractions of the root cube, so a same-level offset is a whole number of sides to
// rounding; the table uses the exact multiple.  Other pairs (different levels, larger offsets)
// run the recurrence per translation.
//
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
// (table_offset never returns it).  V = float2: the unit-side tables (level 0 of side 1).
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
    m2l_kernel(const int* __restrict__ rows, const int* __restrict__ targets, const int* __restrict__ goffset,
               const int* __restrict__ groups,
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
  const int row = rows ? rows[blockIdx.x] : static_cast<int>(blockIdx.x);  // FarPlan::m2l_rows
  const int A = targets[row];
  const GCell CA = tcells[A];
  const double inv_s = ldexp(1.0 / tg.side0, CA.level);
  if (threadIdx.x <= p) rowb[threadIdx.x] = rb.b[threadIdx.x];
  for (int f = threadIdx.x; f < nf; f += blockDim.x) {
    const int n = degree_of(f);
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
  const int g_end = goffset[row + 1];
  for (int g = goffset[row] + w; g < g_end; g += warps) {
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
          const float c = ldexpf(1.0f, dl * degree_of(f));
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


}  // namespace

void far_clear_locals(const FarPlan& f, FarWork& w, cudaStream_t s) {
  const std::size_t count = local_rows(f) * 3 * cidx(f.p + 1, 0);
  w.L.reserve(count);
  if (count) VH_CHECK_CUDA(cudaMemsetAsync(w.L.data(), 0, count * sizeof(double2), s));
}

void far_m2l(const FarPlan& f, FarWork& w, cudaStream_t s) {
  if (f.n_m2l_targets == 0) return;
  const int p = f.p, nc = cidx(p + 1, 0), nf = (p + 1) * (p + 1);
  // Tables: float ones at unit side depend on p alone; double ones on the root side and the
  // levels too (more levels than needed change nothing: a table serves same-level pairs).
  const bool stale = w.tables_p != p || w.tables_single != f.single_m2l ||
                     (!f.single_m2l && (w.tables_side0 != f.side0 || w.tables_levels < f.table_levels));
  if (stale) {
    w.tg = TableGeometry{};
    w.tg.side0 = f.side0;
    w.tables_p = -1;
    if (f.single_m2l) {
      w.tables.reserve(static_cast<std::size_t>(kTablesPerLevel) * nf * sizeof(float2));
      m2l_table_kernel<<<kTablesPerLevel, 32, 0, s>>>(p, w.tg, w.tables.as<float2>());
      VH_CHECK_LAUNCH();
      w.tg.u = w.tables.as<float2>();
    } else if (f.table_levels > 0) {
      const int nb = f.table_levels * kTablesPerLevel;
      w.tables.reserve(static_cast<std::size_t>(nb) * nf * sizeof(double2));
      w.tg.levels = f.table_levels;
      m2l_table_kernel<<<nb, 32, 0, s>>>(p, w.tg, w.tables.as<double2>());
      VH_CHECK_LAUNCH();
      w.tg.t = w.tables.as<double2>();
    }
    w.tables_p = p;
    w.tables_single = f.single_m2l;
    w.tables_side0 = f.side0;
    w.tables_levels = f.single_m2l ? 0 : f.table_levels;
  }
  TableGeometry tg = w.tg;
  tg.side0 = f.side0;  // the float tables are at unit side: any root side
  // Warps per block: as many as fit 40 KB of tables and multipoles (ws complex values each),
  // at most 4; the final reduction reuses the space (3 ncoef <= ws).  Then the staging map,
  // the powers of the scale, the row bases and the table positions.
  const std::size_t cx = f.single_m2l ? sizeof(float2) : sizeof(double2);
  const RowBases rb = m2l_row_bases(p, f.single_m2l);
  const int nfp = (nf + 1) & ~1, ws = ((rb.size + 1) & ~1) + 3 * nfp;
  const int warps = std::max(1, std::min(4, static_cast<int>((40 * 1024) / (ws * cx))));
  const int q = (nc + 31) / 32;  // (l, m) outputs per lane
  const std::size_t shm_m2l =
      warps * ws * cx + nfp * sizeof(unsigned) + (p + 2) * sizeof(double) + (p + 1 + nf) * sizeof(int);
  const int folded = m2l_list_cells(f);
  if (f.single_m2l) {
    w.Mfold.reserve(static_cast<std::size_t>(folded) * 3 * nfp);
    const long long total = static_cast<long long>(folded) * 3 * nfp;
    fold_multipoles_kernel<<<static_cast<int>(std::min<long long>(65535, (total + 255) / 256)), 256, 0, s>>>(
        folded, f.scells, p, f.side0, w.M.data(), w.Mfold.data());
    VH_CHECK_LAUNCH();
  }
  auto launch = [&](auto kernel) {
    kernel<<<f.n_m2l_targets, 32 * warps, shm_m2l, s>>>(f.m2l_rows, f.m2l_targets, f.m2l_goffset, f.m2l_groups,
                                                          f.m2l_entries,
                                                          f.tcells, f.scells, f.shifts, p, tg, rb, w.M.data(),
                                                          w.Mfold.data(), w.L.data());
  };
  if (f.single_m2l) {
    if (q <= 1) launch(m2l_kernel<float, 1>);            // p <= 6
    else if (p == 8) launch(m2l_kernel<float, 3, 8>);    // the tolerance table's p
    else if (p == 10) launch(m2l_kernel<float, 3, 10>);
    else if (p == 12) launch(m2l_kernel<float, 3, 12>);
    else if (q <= 3) launch(m2l_kernel<float, 3>);       // p <= 10
    else if (q <= 4) launch(m2l_kernel<float, 4>);       // p <= 14
    else launch(m2l_kernel<float, 8>);                   // p <= 20
  } else {
    if (q <= 1) launch(m2l_kernel<double, 1>);
    else if (p == 10) launch(m2l_kernel<double, 3, 10>);
    else if (q <= 3) launch(m2l_kernel<double, 3>);
    else if (q <= 4) launch(m2l_kernel<double, 4>);
    else launch(m2l_kernel<double, 8>);
  }
  VH_CHECK_LAUNCH();
}

}  // namespace vh::fmm
