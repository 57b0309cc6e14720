// GPU blob sums: see blobs_gpu.h.  The stencils and weights are blobs_kernel.h's, as in blobs.cpp
// (the same stencil start, cut-off test and formula, rounded as on the host), so the GPU sums
// differ from the CPU's only in the rounding of exp and in the order of the products and the
// additions (w_y w_z times α w_x on the tensor cores; the CPU takes w_x w_y w_z times α).
#include "vortex/blobs_gpu.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <stdexcept>

#include "base/cuda_check.h"
#include "base/device_buffer.h"
#include "vortex/blobs_kernel.h"

namespace vh::vortex::detail {
namespace {

struct Event {
  cudaEvent_t e = nullptr;
  Event() { VH_CHECK_CUDA(cudaEventCreate(&e)); }
  ~Event() { cudaEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

double last_seconds = 0;

// The tiling.  A block sums the kTX × kTY × kTZ = 8 × 16 × 16 lattice points of one tile as a
// product of matrices on the FP64 tensor cores.  For the particles p staged in shared memory the
// sums are
//   ω_c(i, j, k) = Σ_p [w_y,p(j) w_z,p(k)] [α_p,c w_x,p(i)]   (ζ separable, blobs_kernel.h),
// D[(j, k), (c, i)] = Σ_p A[(j, k), p] B[p, (c, i)]: mma.sync m16n8k4 takes 4 particles (a
// "chunk") at a time, A's 16 rows being a 4 × 4 block of (j, k) (an "m-block") and B's 8 columns
// the tile's 8 x-points of one component.  Warp w owns the m-blocks at j = 4 (w mod 4) …, k = 8 (w /
// 4) … and 8 (w / 4) + 4 …, both for the 3 components (or the one divergence, below): 6 (2)
// accumulator fragments a lane.  A chunk whose particles have no weight in an m-block's 4 y- or
// 4 z-points skips that m-block (the chunks are consecutive particles of the cell order, mostly of
// one row of cells, so nearly alike in y and z): each point then sees about 1.5 × 1.2 × 1.2 times
// the pairs inside the cut-off, against 3.4 times for the 8³ SIMT gather this replaced.  The
// divergence Σ_p α_p · ∇ζ is three products into one sum: A = (w_y w_z, dw_y w_z, w_y dw_z), B =
// (α_x dw_x, α_y w_x, α_z w_x).  Each round stages up to kSlots particles; their 1-D weights at the
// tile's points (blob::weight, one thread a nonzero weight) are the only exp evaluations.
constexpr int kTX = 8, kTY = 16, kTZ = 16;
constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kK = 4;                  // particles per mma (m16n8k4)
constexpr int kWeights = kTX + kTY + kTZ;  // 1-D weights per staged particle
static_assert(kTX == 8 && kTY == 16 && kTZ == 16 && kWarps == 8,
              "the warps' m-blocks assume 8 warps on 16 × 16 (j, k) and 8 x-points");
__device__ constexpr int tile_points(int d) { return d == 0 ? kTX : d == 1 ? kTY : kTZ; }

// Particles staged per round (a multiple of kK, at most 32 kK: warp 0 prefixes them a chunk a lane).
template <bool Div>
constexpr int kSlots = Div ? 64 : 128;

// Shared-memory rows per staged particle (doubles): X, the B values α_c w_x(i) (or the divergence's),
// component-major; Y and Z (and the derivatives YD, ZD), the w_y and w_z, padded to 20 so that a
// warp's A loads (4 particles × 4 y-points, 4 particles × 2 z-points) fall on distinct banks.
constexpr int kXS = 3 * kTX;
constexpr int kYS = kTY + 4;
constexpr int kZS = kTZ + 4;

// The dynamic shared memory of gather_kernel<Div>: doubles first, then ints (offsets in elements).
template <bool Div>
struct Smem {
  static constexpr int S = kSlots<Div>;
  static constexpr int X = 0, Y = X + S * kXS, Z = Y + S * kYS, YD = Z + S * kZS, ZD = YD + (Div ? S * kYS : 0);
  // per slot: position, core (σ, R, norm) and strength, [3][S] each
  static constexpr int POS = ZD + (Div ? S * kZS : 0), CORE = POS + 3 * S, STR = CORE + 3 * S, DOUBLES = STR + 3 * S;
  // per slot and direction: the run (ilo, sh, len) and its bits on the tile, [3][S] each; the
  // prefix of the nonzero weights per slot; the chunks' (y bits | z bits << 16); the segment
  // table (base, end) of two batches; the warps' hit counts; the first hit left for the next round
  static constexpr int ILO = 0, SH = ILO + 3 * S, LEN = SH + 3 * S, BITS = LEN + 3 * S, PRE = BITS + 3 * S,
                       CMASK = PRE + S + 1, SEG = CMASK + S / kK, WCOUNT = SEG + 2 * 64, STOP = WCOUNT + kWarps,
                       INTS = STOP + 1;
  static constexpr std::size_t bytes = sizeof(double) * DOUBLES + sizeof(int) * INTS;
};
static_assert(kSlots<false> % kK == 0 && kSlots<false> <= 32 * kK && kSlots<true> % kK == 0 &&
                  kSlots<true> <= 32 * kK,
              "warp 0 prefixes the slots a chunk a lane");

// Where the caller holds the particles: particle q's position, strength and core at
// x[xs q + d], s[ss q + d] (times `scale`) and sigma[gs q]: the host entry's packed rows (stride
// kPacked) or the device solver's arrays (xyz interleaved, stride 3; sigma stride 1).
struct Source {
  const double* x;
  const double* s;
  const double* sigma;
  int xs, ss, gs;
  double scale;
};

// The particles in cell order with what the tiles need of each: kF doubles (x, y, z and the
// blob::Core σ, R, (2πσ²)^{-1/2}) at f[k np + s] and, per direction d, the run of
// lattice points where the stencil is nonzero, (ilo + k) mod n for k < len, as ilo, ilo mod n
// and len at g[(3 d + j) np + s]; the strengths read where the caller holds them, through the
// sort's permutation perm (sorted position → particle), so that one sort serves several sets.
constexpr int kF = 6;
struct Sorted {
  const double* f;
  const int* g;
  const int* perm;
  const double* str;
  int np, ss;
  double scale;
  __device__ double operator()(int k, int s) const { return f[static_cast<long long>(k) * np + s]; }
  __device__ int run(int d, int j, int s) const { return g[static_cast<long long>(3 * d + j) * np + s]; }
  /// Component c of the strength of particle q = perm[s] (times scale).
  __device__ double strength(int c, int q) const { return str[static_cast<long long>(ss) * q + c] * scale; }
};

// Each particle's lattice cell, floor(x/h) clamped into the box, as its sort key.
__global__ void cell_keys(int np, Source src, int n, double h, int* __restrict__ key, int* __restrict__ idx) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= np) return;
  int c[3];
  for (int d = 0; d < 3; ++d)
    c[d] = min(max(static_cast<int>(floor(src.x[static_cast<long long>(src.xs) * q + d] / h)), 0), n - 1);
  key[q] = (c[2] * n + c[1]) * n + c[0];
  idx[q] = q;
}

// start[c]: the first sorted particle of cell c (start[ncells] = np): sorted position k starts
// the cells after its predecessor's up to its own.
__global__ void cell_starts(int np, int ncells, const int* __restrict__ key, int* __restrict__ start) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k > np) return;
  const int lo = k == 0 ? 0 : key[k - 1] + 1, hi = k == np ? ncells : key[k];
  for (int c = lo; c <= hi; ++c) start[c] = k;
}

__device__ int wrap(int a, int n) {
  a %= n;
  return a < 0 ? a + n : a;
}

// Sorted particle s = particle perm[s], with its constants and, per direction, the run of its
// stencil (lattice points i0 … i0 + m − 1, Weights::set) inside the cut-off (blob::inside): one
// run, as the offset grows with i.
__global__ void prepare(int np, Source src, const int* __restrict__ perm, int n, double h, double cutoff, int m,
                        double* __restrict__ f, int* __restrict__ g) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= np) return;
  const long long q = perm[s];
  const double p[3] = {src.x[src.xs * q], src.x[src.xs * q + 1], src.x[src.xs * q + 2]};
  const blob::Core bc = blob::core(src.sigma[src.gs * q], cutoff);
  const double c[kF] = {p[0], p[1], p[2], bc.sigma, bc.R, bc.norm};
  for (int k = 0; k < kF; ++k) f[static_cast<long long>(k) * np + s] = c[k];
  for (int d = 0; d < 3; ++d) {
    const int i0 = blob::stencil_start(p[d], bc.R, h);
    int lo = 0, len = 0;
    for (int a = 0; a < m; ++a)
      if (blob::inside(blob::offset(i0 + a, h, p[d]), bc)) {
        if (len == 0) lo = a;
        len = a - lo + 1;
      }
    const int run[3] = {i0 + lo, wrap(i0 + lo, n), len};
    for (int j = 0; j < 3; ++j) g[static_cast<long long>(3 * d + j) * np + s] = run[j];
  }
}

// Bits lo … hi − 1 of a tile's T points along one direction (0 <= lo).
__device__ unsigned span(int lo, int hi, int T) {
  lo = min(lo, T);
  hi = min(hi, T);
  return hi > lo ? ((1u << hi) - 1) & ~((1u << lo) - 1) : 0u;
}

// One particle's run along one direction seen from the tile's points o + t: those with
// (o + t − ilo) mod n < len, i.e. t in the cyclic interval [sh, sh + len) of the box, sh =
// (ilo − o) mod n.
struct Run {
  int ilo, sh, len;
  unsigned bits;  // the tile's points on the run, within the box (`valid`)
};

__device__ Run run_at(const Sorted& P, int d, int s, int o, int n, unsigned valid) {
  const int T = tile_points(d);
  Run r{P.run(d, 0, s), P.run(d, 1, s) - o, P.run(d, 2, s), valid};
  if (r.sh < 0) r.sh += n;
  if (r.len < n) r.bits &= span(r.sh, r.sh + r.len, T) | (r.sh + r.len > n ? span(0, r.sh + r.len - n, T) : 0u);
  return r;
}

// w and dw = ∂w/∂x_i (blob::weight) of a particle at coordinate x with core c at the tile's point
// t on its run (ilo, sh, len): the sum over the run's points k, k + n, … < len that are that point
// (several where the stencil is wider than the box).
__device__ void weight_at(int ilo, int sh, int len, int t, int n, double h, double x, const blob::Core& c, double& w,
                          double& dw) {
  int k = t - sh;
  if (k < 0) k += n;
  w = 0;
  dw = 0;
  for (int kk = k; kk < len; kk += n) {
    double v, dv;
    blob::weight(blob::offset(ilo + kk, h, x), c, v, dv);
    w += v;
    dw += dv;
  }
}

// Cells along one direction whose particles may reach the tile's points o … o + T − 1: those
// within `reach` cells (wrapped), or every cell once when that window covers the box.
struct Cells {
  int lo, len;
};

__device__ Cells cells_near(int o, int T, int reach, int n) {
  return T + 2 * reach >= n ? Cells{0, n} : Cells{o - reach, T + 2 * reach};
}

// d += A B for the warp's fragments of a 16 × 4 A, a 4 × 8 B and the 16 × 8 D (PTX mma
// m16n8k4 .f64, row.col): lane = 4 g + t holds a0 = A[g][t], a1 = A[g + 8][t], b0 = B[t][g] and
// d = (D[g][2t], D[g][2t + 1], D[g + 8][2t], D[g + 8][2t + 1]).  Below sm_90 (no f64 m16n8k4)
// the same products through shuffles and FMAs, slowly.
__device__ __forceinline__ void mma(double (&d)[4], double a0, double a1, double b0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a0), "d"(a1), "d"(b0));
#else
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  for (int k = 0; k < kK; ++k) {
    const double lo = __shfl_sync(~0u, a0, 4 * g + k), hi = __shfl_sync(~0u, a1, 4 * g + k);
    const double b_0 = __shfl_sync(~0u, b0, 4 * (2 * t) + k), b_1 = __shfl_sync(~0u, b0, 4 * (2 * t + 1) + k);
    d[0] = fma(lo, b_0, d[0]);
    d[1] = fma(lo, b_1, d[1]);
    d[2] = fma(hi, b_0, d[2]);
    d[3] = fma(hi, b_1, d[3]);
  }
#endif
}

// One tile a block (the tiling above), in rounds of three phases.
//  1. Candidates: the particles of the tile's window of cells, by rows of cells along x (one or
//     two runs of sorted particles, "segments", each), are tested kThreads at a time; those that
//     reach the tile take the next slots in the order of the segments (a block-wide prefix of the
//     warps' ballots) until kSlots are taken.  A batch's positions come from a table of the next
//     32 segments (warp 0: their starts and the prefix of their lengths); the cursor (segment sg,
//     offset off) is the same in every thread.
//  2. Staging: the 1-D weights of the slots at the tile's points, zero off their runs and in the
//     padding up to a whole chunk; one thread a nonzero weight.
//  3. Products: every warp adds the round's chunks, in order, to its fragments.
// Every point thus sums its particles in one fixed order (the candidates' order; within a chunk,
// the tensor core's): the same bits on every run.
template <bool Div>
__global__ void __launch_bounds__(kThreads, 2)
    gather_kernel(Sorted P, const int* __restrict__ start, int n, int reach, double h, double* __restrict__ out) {
  using L = Smem<Div>;
  constexpr int S = L::S;
  constexpr int NC = Div ? 1 : 3;  // output components
  extern __shared__ double smem[];
  double* const X = smem + L::X;
  double* const Y = smem + L::Y;
  double* const Z = smem + L::Z;
  double* const YD = smem + L::YD;
  double* const ZD = smem + L::ZD;
  double* const pos = smem + L::POS;
  double* const core = smem + L::CORE;
  double* const str = smem + L::STR;
  int* const ints = reinterpret_cast<int*>(smem + L::DOUBLES);
  int* const ilo = ints + L::ILO;
  int* const shs = ints + L::SH;
  int* const lens = ints + L::LEN;
  unsigned* const bits = reinterpret_cast<unsigned*>(ints + L::BITS);
  int* const pre = ints + L::PRE;
  unsigned* const cmask = reinterpret_cast<unsigned*>(ints + L::CMASK);
  int* const seg_table = ints + L::SEG;
  int* const wcount = ints + L::WCOUNT;
  int* const stop = ints + L::STOP;

  const int tx = (n + kTX - 1) / kTX, ty = (n + kTY - 1) / kTY;
  const int b = static_cast<int>(blockIdx.x);
  const int o[3] = {b % tx * kTX, b / tx % ty * kTY, b / (tx * ty) * kTZ};
  const unsigned valid[3] = {span(0, n - o[0], kTX), span(0, n - o[1], kTY), span(0, n - o[2], kTZ)};
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;

  // The window's segments: row r = (z, y) of cells, then [ca0, cb0) and, where the window wraps
  // in x, [0, cb1).
  const Cells cx = cells_near(o[0], kTX, reach, n), cy = cells_near(o[1], kTY, reach, n),
              cz = cells_near(o[2], kTZ, reach, n);
  int ca0 = cx.lo, cb0 = cx.lo + cx.len, cb1 = 0, nseg = 1;
  if (cx.lo < 0 || cx.lo + cx.len > n) {
    ca0 = wrap(cx.lo, n);
    cb0 = n;
    cb1 = cx.lo + cx.len - (cx.lo < 0 ? 0 : n);
    nseg = 2;
  }
  const int nsegs = cy.len * cz.len * nseg;

  // This warp's m-blocks: j = jb + 0 … 3, k = kb0 + 4 mb + 0 … 3 (mb = 0, 1).
  const int jb = 4 * (warp % 4), kb0 = 8 * (warp / 4);
  double acc[2][NC][4] = {};

  int sg = 0, off = 0, batch = 0;  // the candidates' cursor and the batches so far (block-uniform)
  for (;;) {
    // ---- 1. candidates ----
    int nslot = 0;
    while (nslot < S && sg < nsegs) {
      int* const base = seg_table + 64 * (batch & 1);  // two tables: one may still be read
      int* const end = base + 32;
      if (warp == 0) {
        int a = 0, e = 0;
        if (sg + lane < nsegs) {
          const int sgl = sg + lane, row = sgl / nseg, seg = sgl - row * nseg;
          const int c = (wrap(cz.lo + row / cy.len, n) * n + wrap(cy.lo + row % cy.len, n)) * n;
          a = start[c + (seg ? 0 : ca0)] + (lane == 0 ? off : 0);
          e = start[c + (seg ? cb1 : cb0)] - a;
        }
        for (int dl = 1; dl < 32; dl *= 2) {
          const int v = __shfl_up_sync(~0u, e, dl);
          if (lane >= dl) e += v;
        }
        base[lane] = a;
        end[lane] = e;  // positions before the end of segment sg + lane
      }
      __syncthreads();
      const int covered = end[31], total = min(covered, kThreads);
      const int e = threadIdx.x;
      bool hit = false;
      int s = 0, ps = 0;
      double fv[kF];
      Run r[3];
      if (e < total) {
        int l = 0;
        while (end[l] <= e) ++l;
        s = base[l] + e - (l ? end[l - 1] : 0);
        ps = P.perm[s];  // now, with the runs: one wait less before the slot's strength
#pragma unroll
        for (int k = 0; k < kF; ++k) fv[k] = P(k, s);
        hit = true;
#pragma unroll
        for (int d = 0; d < 3; ++d) {
          r[d] = run_at(P, d, s, o[d], n, valid[d]);
          hit = hit && r[d].bits;
        }
      }
      const unsigned ballot = __ballot_sync(~0u, hit);
      if (lane == 0) wcount[warp] = __popc(ballot);
      __syncthreads();
      int before = 0, all = 0;
      for (int w = 0; w < kWarps; ++w) {
        before += w < warp ? wcount[w] : 0;
        all += wcount[w];
      }
      const int rank = before + __popc(ballot & ((1u << lane) - 1)), room = S - nslot;
      if (hit && rank < room) {
        const int q = nslot + rank;
#pragma unroll
        for (int d = 0; d < 3; ++d) {
          pos[d * S + q] = fv[d];
          core[d * S + q] = fv[3 + d];  // σ, R, norm
          str[d * S + q] = P.strength(d, ps);
          ilo[d * S + q] = r[d].ilo;
          shs[d * S + q] = r[d].sh;
          lens[d * S + q] = r[d].len;
          bits[d * S + q] = r[d].bits;
        }
      }
      if (hit && rank == room) *stop = e;  // the first hit left for the next round
      __syncthreads();
      // The next position: after the batch, or the hit left over.
      int next = total;
      if (all > room) {
        next = *stop;
        nslot = S;
      } else {
        nslot += all;
      }
      if (next >= covered) {
        sg += 32;
        off = 0;
      } else {
        int l = 0;
        while (end[l] <= next) ++l;
        off = (l ? 0 : off) + next - (l ? end[l - 1] : 0);
        sg += l;
      }
      ++batch;
    }
    if (nslot == 0) break;  // block-uniform: every thread saw the same counts
    const int nch = (nslot + kK - 1) / kK;

    // The slots' nonzero weights as a prefix (pre[q] … pre[q + 1] − 1 are slot q's; pre[S] all)
    // and the chunks' bits along y and z: warp 0, a chunk a lane.
    if (warp == 0) {
      int cnt[kK], sum = 0;
      unsigned cm = 0;
#pragma unroll
      for (int i = 0; i < kK; ++i) {
        const int q = kK * lane + i;
        cnt[i] = 0;
        if (q < nslot) {
          cnt[i] = __popc(bits[q]) + __popc(bits[S + q]) + __popc(bits[2 * S + q]);
          cm |= bits[S + q] | bits[2 * S + q] << 16;
        }
        sum += cnt[i];
      }
      int incl = sum;
      for (int dl = 1; dl < 32; dl *= 2) {
        const int v = __shfl_up_sync(~0u, incl, dl);
        if (lane >= dl) incl += v;
      }
      int p = incl - sum;
      if (kK * lane < S) {
#pragma unroll
        for (int i = 0; i < kK; ++i) {
          pre[kK * lane + i] = p;
          p += cnt[i];
        }
      }
      if (lane == 31) pre[S] = incl;
      if (lane < nch) cmask[lane] = cm;
    }
    __syncthreads();

    // ---- 2. staging ----
    // Zeros: the points off the runs, and every point of the padding slots.
    for (int e = threadIdx.x; e < kK * nch * kWeights; e += kThreads) {
      const int q = e / kWeights, u = e - q * kWeights;
      const int d = u < kTX ? 0 : u < kTX + kTY ? 1 : 2;
      const int t = u - (d == 0 ? 0 : d == 1 ? kTX : kTX + kTY);
      if (q < nslot && ((bits[d * S + q] >> t) & 1u)) continue;
      if (d == 0) {
        for (int c = 0; c < 3; ++c) X[q * kXS + kTX * c + t] = 0.0;
      } else if (d == 1) {
        Y[q * kYS + t] = 0.0;
        if constexpr (Div) YD[q * kYS + t] = 0.0;
      } else {
        Z[q * kZS + t] = 0.0;
        if constexpr (Div) ZD[q * kZS + t] = 0.0;
      }
    }
    // The nonzero weights, the r-th of the round in slot q with pre[q] <= r < pre[q + 1].
    const int nw = pre[S];
    for (int r = threadIdx.x; r < nw; r += kThreads) {
      int lo = 0, hi = nslot - 1;
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (pre[mid] <= r) lo = mid;
        else hi = mid - 1;
      }
      const int q = lo;
      int k = r - pre[q], d = 0;
      unsigned m = bits[q];
      while (k >= __popc(m)) {  // every slot has at least one point along each direction
        k -= __popc(m);
        m = bits[++d * S + q];
      }
      for (int i = 0; i < k; ++i) m &= m - 1;
      const int t = __ffs(m) - 1;  // the k-th point on the run
      const blob::Core c{core[q], core[S + q], core[2 * S + q]};
      double w, dw;
      weight_at(ilo[d * S + q], shs[d * S + q], lens[d * S + q], t, n, h, pos[d * S + q], c, w, dw);
      if (d == 0) {
        X[q * kXS + t] = str[q] * (Div ? dw : w);
        X[q * kXS + kTX + t] = str[S + q] * w;
        X[q * kXS + 2 * kTX + t] = str[2 * S + q] * w;
      } else if (d == 1) {
        Y[q * kYS + t] = w;
        if constexpr (Div) YD[q * kYS + t] = dw;
      } else {
        Z[q * kZS + t] = w;
        if constexpr (Div) ZD[q * kZS + t] = dw;
      }
    }
    __syncthreads();

    // ---- 3. products ----
    // Chunk ch: particles (slots) kK ch + t, lane (g, t) giving A rows g (j = jb + g mod 4, k = kb +
    // g / 4) and g + 8 (the same j, k + 2) and B row t at column g (x-point g).
    for (int ch = 0; ch < nch; ++ch) {
      const unsigned cm = cmask[ch];
      if (!((cm >> jb) & 0xFu)) continue;
      const int q = kK * ch + t4;
      const double wy = Y[q * kYS + jb + g % 4];
      const double dwy = Div ? YD[q * kYS + jb + g % 4] : 0.0;
#pragma unroll
      for (int mb = 0; mb < 2; ++mb) {
        const int kb = kb0 + 4 * mb;
        if (!((cm >> (16 + kb)) & 0xFu)) continue;
        const int zi = q * kZS + kb + g / 4;
        const double z0 = Z[zi], z1 = Z[zi + 2];
        if constexpr (Div) {
          const double dz0 = ZD[zi], dz1 = ZD[zi + 2];
          mma(acc[mb][0], wy * z0, wy * z1, X[q * kXS + g]);               // α_x dw_x w_y w_z
          mma(acc[mb][0], dwy * z0, dwy * z1, X[q * kXS + kTX + g]);       // α_y w_x dw_y w_z
          mma(acc[mb][0], wy * dz0, wy * dz1, X[q * kXS + 2 * kTX + g]);   // α_z w_x w_y dw_z
        } else {
          const double a0 = wy * z0, a1 = wy * z1;
#pragma unroll
          for (int c = 0; c < 3; ++c) mma(acc[mb][c], a0, a1, X[q * kXS + kTX * c + g]);
        }
      }
    }
    __syncthreads();  // the next round overwrites the slots
  }

  // Fragment value v of m-block mb: x = 2 t + v mod 2, y = jb + g mod 4, z = kb + g / 4 + 2 (v / 2).
  const long long npts = static_cast<long long>(n) * n * n;
  const int y = o[1] + jb + g % 4;
#pragma unroll
  for (int mb = 0; mb < 2; ++mb)
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      const int x = o[0] + 2 * t4 + v % 2, z = o[2] + kb0 + 4 * mb + g / 4 + 2 * (v / 2);
      if (x >= n || y >= n || z >= n) continue;
      const long long i = (static_cast<long long>(z) * n + y) * n + x;
#pragma unroll
      for (int c = 0; c < NC; ++c) out[c * npts + i] = acc[mb][c][v];
    }
}

unsigned blocks(long long count, int threads) { return static_cast<unsigned>((count + threads - 1) / threads); }

// A device buffer of at least `count` elements: grown as needed, kept.
template <class T>
T* at_least(DeviceBytes& b, std::size_t count) {
  b.reserve((count ? count : 1) * sizeof(T));
  return b.as<T>();
}

}  // namespace

// The sort and the gather, for either entry.  Buffers: f (kF doubles a particle), runs (9 ints),
// perm (1 int) and start (1 int a lattice point, and one more).  The sort's keys and indices
// live in runs until prepare() overwrites them, and its scratch in f where it fits.
struct DeviceBlobSums::Impl {
  DeviceBytes f, runs, perm, start, temp;
  int np = 0, n = 0, m = 0, bits = 0;
  double h = 0, cutoff = 0;
  std::size_t temp_bytes = 0;

  // Allocations for np particles on the lattice g (nothing is allocated by sort() and sum()
  // after this).
  void reserve(std::size_t np_, const Grid& g) {
    const long long npl = static_cast<long long>(np_), npts = static_cast<long long>(g.points());
    if (npl >= (1LL << 31) || npts >= (1LL << 31))
      throw std::runtime_error("blob sums on the GPU: particles and lattice points must number below 2^31");
    np = static_cast<int>(npl);
    n = g.n;
    h = g.h();
    bits = 1;
    while ((1LL << bits) < npts) ++bits;
    at_least<double>(f, kF * np_);
    int* r = at_least<int>(runs, 9 * np_);
    int* sidx = at_least<int>(perm, np_);
    at_least<int>(start, npts + 1);
    temp_bytes = 0;
    VH_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, r, r + 2 * np_, r + np_, sidx, np, 0, bits));
    if (temp_bytes > f.bytes()) at_least<char>(temp, temp_bytes);
  }

  void sort(const Source& src, double cutoff_, int m_) {
    cutoff = cutoff_;
    m = m_;
    const int threads = 256;
    int* key = runs.as<int>();
    int* idx = key + np;
    int* skey = key + 2 * static_cast<long long>(np);
    if (np > 0) {
      cell_keys<<<blocks(np, threads), threads>>>(np, src, n, h, key, idx);
      VH_CHECK_LAUNCH();
      void* scratch = temp_bytes > f.bytes() ? temp.data() : f.data();
      std::size_t bytes = temp_bytes;
      VH_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(scratch, bytes, key, skey, idx, perm.as<int>(), np, 0, bits));
    }
    cell_starts<<<blocks(np + 1, threads), threads>>>(np, n * n * n, skey, start.as<int>());
    VH_CHECK_LAUNCH();
    if (np > 0) {
      prepare<<<blocks(np, threads), threads>>>(np, src, perm.as<int>(), n, h, cutoff, m, f.as<double>(),
                                                runs.as<int>());
      VH_CHECK_LAUNCH();
    }
  }

  void sum(const Source& src, bool divergence, double* out) const {
    // A particle in cell c has its nonzero weights within ceil(cutoff σ_max/h) = m/2 − 1 lattice
    // points of c; one cell more covers the rounding of floor(x/h) and of the cut-off test.
    const int reach = m / 2;
    const long long tiles = static_cast<long long>((n + kTX - 1) / kTX) * ((n + kTY - 1) / kTY) * ((n + kTZ - 1) / kTZ);
    const Sorted P{f.as<double>(), runs.as<int>(), perm.as<int>(), src.s, np, src.ss, src.scale};
    if (divergence)
      launch<true>(P, static_cast<unsigned>(tiles), reach, out);
    else
      launch<false>(P, static_cast<unsigned>(tiles), reach, out);
  }

  template <bool Div>
  void launch(const Sorted& P, unsigned nblocks, int reach, double* out) const {
    // More than the 48 KB of shared memory a block gets unasked (set on every call: cheap, and
    // right for whichever device is current).
    VH_CHECK_CUDA(cudaFuncSetAttribute(gather_kernel<Div>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(Smem<Div>::bytes)));
    gather_kernel<Div><<<nblocks, kThreads, Smem<Div>::bytes>>>(P, start.as<int>(), n, reach, h, out);
    VH_CHECK_LAUNCH();
  }
};

DeviceBlobSums::DeviceBlobSums() : impl_(std::make_unique<Impl>()) {}
DeviceBlobSums::~DeviceBlobSums() = default;

void DeviceBlobSums::sort(const double* d_x, const double* d_sigma, std::size_t np, const Grid& g, double cutoff,
                          int m) {
  impl_->reserve(np, g);
  impl_->sort(Source{d_x, nullptr, d_sigma, 3, 0, 1, 1.0}, cutoff, m);
}

void DeviceBlobSums::sum(const double* d_s, double scale, bool divergence, double* d_out) const {
  impl_->sum(Source{nullptr, d_s, nullptr, 0, 3, 0, scale}, divergence, d_out);
}

std::size_t DeviceBlobSums::device_bytes() const {
  return impl_->f.bytes() + impl_->runs.bytes() + impl_->perm.bytes() + impl_->start.bytes() + impl_->temp.bytes();
}

double* pinned_doubles(std::size_t count) { return static_cast<double*>(pinned_staging(count * sizeof(double))); }

double last_gather_gpu_seconds() { return last_seconds; }

void gather_gpu(std::size_t np, const Grid& g, double cutoff, int m, bool divergence, double* host) {
  const std::size_t npts = g.points(), ncomp = divergence ? 1 : 3;
  // Everything allocated before the clock starts.
  DeviceBlobSums::Impl sums;
  sums.reserve(np, g);
  DeviceArray<double> packed(std::max<std::size_t>(kPacked * np, 1)), out(ncomp * npts);
  Event t0, t1;

  VH_CHECK_CUDA(cudaEventRecord(t0.e));
  if (np > 0) packed.upload(host, kPacked * np);
  const Source src{packed.data(), packed.data() + 3, packed.data() + 6, kPacked, kPacked, kPacked, 1.0};
  sums.sort(src, cutoff, m);
  sums.sum(src, divergence, out.data());
  out.download(host, ncomp * npts);
  VH_CHECK_CUDA(cudaEventRecord(t1.e));
  VH_CHECK_CUDA(cudaEventSynchronize(t1.e));
  float ms = 0;
  VH_CHECK_CUDA(cudaEventElapsedTime(&ms, t0.e, t1.e));
  last_seconds = 1e-3 * ms;
}

}  // namespace vh::vortex::detail
