// GPU blob sums: see blobs_gpu.h.  The stencils and weights are blobs_kernel.h's, as in blobs.cpp
// (the same stencil start, cut-off test and formula, rounded as on the host), so the GPU sums
// differ from the CPU's only in the rounding of exp and in the order of the additions.
#include "vortex/blobs_gpu.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <stdexcept>

#include "base/cuda_check.h"
#include "base/device_buffer.h"
#include "base/launch.h"
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

// The tiling.  A block of four warps sums the kT³ lattice points of one tile; warp w owns the
// z-points kZ w and kZ w + 1 and all 8 x 8 x-y points of those.  Each round every warp stages up
// to 32 particles (slots 32 w …), so kThreads particles a round, and every warp adds them all on
// the tensor cores in FP64 (accumulate), lane (g, t) = (lane/4, lane%4) holding the points x g,
// y 2t and 2t + 1 of both z-points: the blob sums one product a component, the divergence three
// (one a derivative's direction) into its one sum.  On an H200 at 256³ the three sets' nine
// components took 119 ms this way against 219 ms on the FP64 units (the shapes and warp counts
// tried: bench/RESULTS.md, 2026-11-28 "the blob sums on the tensor cores"); the divergence as
// fast as on the FP64 units with a layout of its own (2026-12-02 "no division a point").
constexpr int kT = 8;
constexpr int kWarps = 4;
constexpr int kZ = kT / kWarps;
constexpr int kThreads = 32 * kWarps;
static_assert(kT == 8 && kZ == 2, "the lane layout assumes 8 x 8 x-y points and two z-points a warp");

// A staged particle's row of shared memory: its weights at the tile's points along x — w, or for
// the divergence the (w, dw) pairs — then the strengths of the `Sets` strength sets (1 or 3: the
// reinitialisation's three fields at once), then its y and z weights, each part and the row
// 16-byte aligned (the accumulate reads pairs).  One row a particle, as short as that allows: on
// an H200 at 256³ the one-set sum took 34.6 ms and the divergence 46.7 ms this way against 40.9
// and 59.1 with separate x, y and z rows padded to odd numbers of 16-byte units; the three sets
// the same 64.0 ms.  Two sets of rows, the next round staged while the last is summed (one
// barrier a round instead of two), were slower: fewer blocks fit an SM (bench/RESULTS.md,
// 2026-12-02 "one shared-memory row a staged particle").
constexpr int even(int doubles) { return (doubles + 1) / 2 * 2; }
VH_HD constexpr int point_doubles(bool div) { return div ? 2 : 1; }  // w, or (w, dw)
template <bool Div, int Sets>
struct Row {
  static constexpr int x = 0, strengths = point_doubles(Div) * kT, y = even(strengths + 3 * Sets),
                       z = y + point_doubles(Div) * kT, size = z + point_doubles(Div) * kT;
  static constexpr std::size_t bytes = sizeof(double) * kThreads * size;  // a block's rows
};
static_assert(Row<false, 1>::size == 28 && Row<false, 3>::size == 34 && Row<true, 1>::size == 52,
              "rows of whole 16-byte units");

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

// Up to three strength sets summed in one pass (their strengths at s[j][ss q + c] times
// scale[j]) and where their sums go (set j's component c at out[j][c npts + i]).
struct Sets {
  const double* s[3];
  double scale[3];
  int ss;
  double* out[3];
};

// The particles in cell order with what the tiles need of each: kF doubles (x, y, z, the
// blob::Core R, (2πσ²)^{-1/2}, 1/2σ², and blob::weight_run_q, an exponential each tile that
// stages the particle would repeat) at f[k np + s] and, per direction d, the run of
// lattice points where the stencil is nonzero, (ilo + k) mod n for k < len, as ilo, ilo mod n
// and len at g[(3 d + j) np + s]; the strengths read where the caller holds them, through the
// sort's permutation perm (sorted position → particle), so that one sort serves several sets.
constexpr int kF = 7;
struct Sorted {
  const double* f;
  const int* g;
  const int* perm;
  Sets sets;
  int np;
  __device__ double operator()(int k, int s) const { return f[static_cast<long long>(k) * np + s]; }
  __device__ blob::Core core(int s) const { return {(*this)(3, s), (*this)(4, s), (*this)(5, s)}; }
  __device__ double run_q(int s) const { return (*this)(6, s); }
  __device__ int run(int d, int j, int s) const { return g[static_cast<long long>(3 * d + j) * np + s]; }
  __device__ double strength(int set, int c, int s) const {
    return sets.s[set][static_cast<long long>(sets.ss) * perm[s] + c] * sets.scale[set];
  }
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

// start[c]: the first sorted particle of cell c (start[ncells] = np), by binary search of the
// sorted keys, one thread a cell: the particles may leave long runs of cells empty (a rank's
// share of them covers only its planes, vortex/solver_gpu.cu), which a thread per particle
// filling the cells up to its own would walk alone.
__global__ void cell_starts(int np, int ncells, const int* __restrict__ key, int* __restrict__ start) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c > ncells) return;
  int lo = 0, hi = np;  // the first k with key[k] >= c
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (key[mid] < c) lo = mid + 1;
    else hi = mid;
  }
  start[c] = lo;
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
  const double c[kF] = {p[0], p[1], p[2], bc.R, bc.norm, bc.a, blob::weight_run_q(bc, h)};
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

// Bits lo … hi − 1 of the tile's kT.
__device__ unsigned span(int lo, int hi) {
  lo = min(lo, kT);
  hi = min(hi, kT);
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
  Run r{P.run(d, 0, s), P.run(d, 1, s) - o, P.run(d, 2, s), valid};
  if (r.sh < 0) r.sh += n;
  if (r.len < n) r.bits &= span(r.sh, r.sh + r.len) | (r.sh + r.len > n ? span(0, r.sh + r.len - n) : 0u);
  return r;
}

// A particle that reaches the tile, as the scan found it, with what its staging needs of the
// runs in one word: per direction d the tile's points on the run (bits 8d … 8d + 7) and, where
// those are one block t0 … t1 − 1 of a run narrower than the box (one image a point: the common
// case), where the run's (unwrapped) lattice index at t0 lies: o + t0 + j n with j in {−1, 0, 1}
// (the index is ilo + (t0 − sh) mod n with ilo in (−n, n)), as j + 1 in bits 24 + 2d and 25 + 2d;
// 3 there (kMixed) where the points are not one block (the staging then reads the run again and
// goes point by point). Eight bytes a hit: the divergence's 52 KiB of rows and the queues fit
// four blocks an SM.
constexpr unsigned kMixed = 3;
struct Hit {
  int s;
  unsigned code;
  __device__ unsigned bits(int d) const { return (code >> (8 * d)) & 0xffu; }
  __device__ unsigned image(int d) const { return (code >> (24 + 2 * d)) & 3u; }
};

// Whether particle s has a nonzero weight at some point of the tile at o, and if so its Hit.
// The three directions are read before any is tested (no early return): one wait for the nine
// loads instead of three (the scan is bound by their latency).
__device__ bool reaches(const Sorted& P, int s, const int (&o)[3], const unsigned (&valid)[3], int n, Hit& hit) {
  bool all = true;
  hit.s = s;
  hit.code = 0;
#pragma unroll
  for (int d = 0; d < 3; ++d) {
    const Run r = run_at(P, d, s, o[d], n, valid[d]);
    all &= r.bits != 0u;
    const int t0 = __ffs(r.bits) - 1, t1 = 32 - __clz(r.bits);
    // The index at t0: ilo + (t0 − sh) mod n, sh and t0 in [0, n); o + t0 + j n.
    const int v = r.ilo - r.sh + (t0 < r.sh ? n : 0) - o[d];  // j n
    const int j = (v > 0) - (v < 0);
    const unsigned image = r.bits && r.len < n && r.bits == span(t0, t1) ? static_cast<unsigned>(j + 1) : kMixed;
    hit.code |= r.bits << (8 * d) | image << (24 + 2 * d);
  }
  return all;
}

// Writes particle s's weights at the tile's points into slot `slot`, along each direction w, or
// for the divergence the (w, dw) pairs (blob::weight at the run's points k, k + n, … < len where
// the stencil is wider than the box), and after the x row's the sets' strengths.  Returns the
// bits of the z-points with a nonzero weight.  The loops with exponentials inside stay rolled:
// unrolled, such code overflowed the instruction cache and the warps waited on instruction fetch.
template <bool Div, int NSets>
__device__ unsigned stage(const Sorted& P, const Hit& hit, int slot, const int (&o)[3], const unsigned (&valid)[3],
                          int n, double h, double* rows) {
  const int s = hit.s;
  using R = Row<Div, NSets>;
  // Unrolled: the sets' pointers are then read from the parameters, not from a local copy, and
  // the 3 NSets loads are in flight at once.
  double* const row = rows + slot * R::size;
  double* str = row + R::strengths;
#pragma unroll
  for (int j = 0; j < NSets; ++j)
#pragma unroll
    for (int c = 0; c < 3; ++c) str[3 * j + c] = P.strength(j, c, s);
  const blob::Core c = P.core(s);
  const double q = P.run_q(s);
#pragma unroll 1
  for (int d = 0; d < 3; ++d) {
    const unsigned bits = hit.bits(d), image = hit.image(d);
    const double x = P(d, s);
    double* dst = row + (d == 0 ? R::x : d == 1 ? R::y : R::z);
    auto put = [&](int t, double w, double dw) {
      if constexpr (Div)
        reinterpret_cast<double2*>(dst)[t] = make_double2(w, dw);
      else
        dst[t] = w;
    };
    // The common case (Hit::image): the tile's points on the run one block t0 … t1 − 1, at the
    // lattice indices first … first + t1 − t0 − 1: their weights by blob::WeightRun from the
    // first (two exponentials), unrolled and predicated.
    if (image != kMixed) {
      const int t0 = __ffs(bits) - 1, t1 = 32 - __clz(bits);
      const int first = (d == 0 ? o[0] : d == 1 ? o[1] : o[2]) + t0 + (static_cast<int>(image) - 1) * n;
      blob::WeightRun wr(blob::offset(first, h, x), c, h, q);
#pragma unroll
      for (int t = 0; t < kT; ++t) {
        const bool on = t >= t0 && t < t1;
        const double w = on ? wr.w : 0.0;
        put(t, w, Div && on ? blob::slope(blob::offset(first + t - t0, h, x), c, w) : 0.0);
        if (on) wr.next();
      }
    } else {
      // Otherwise (stencils wider than the box, or a run that wraps around it inside the tile)
      // point by point, summing the images k, k + n, … < len.
      const Run r = run_at(P, d, s, d == 0 ? o[0] : d == 1 ? o[1] : o[2], n,
                           d == 0 ? valid[0] : d == 1 ? valid[1] : valid[2]);
#pragma unroll 1
      for (int t = 0; t < kT; ++t) {
        double w = 0, dw = 0;
        if ((r.bits >> t) & 1u) {
          int k = t - r.sh;
          if (k < 0) k += n;
          for (int kk = k; kk < r.len; kk += n) {
            double v, dv;
            blob::weight(blob::offset(r.ilo + kk, h, x), c, v, dv);
            w += v;
            dw += dv;
          }
        }
        put(t, w, dw);
      }
    }
  }
  return hit.bits(2);
}

// Zeros in slot `slot`'s row: a slot of the last group of eight that no particle was staged into.
template <bool Div, int NSets>
__device__ void clear(int slot, double* rows) {
  using R = Row<Div, NSets>;
  double* const row = rows + slot * R::size;
#pragma unroll
  for (int k = 0; k < R::size; ++k) row[k] = 0.0;
}

// D += A B for a 16 x 8 D, 16 x 8 A and 8 x 8 B in FP64, one warp together: lane l, with g = l/4
// and t = l%4, gives A[g][t], A[g + 8][t], A[g][t + 4], A[g + 8][t + 4] (a0 … a3) and B[t][g],
// B[t + 4][g] (b0, b1) and holds D[g][2t], D[g][2t + 1], D[g + 8][2t], D[g + 8][2t + 1] (d0 … d3):
// the PTX ISA's mma.m16n8k8 with .f64, on the tensor cores of sm_90 and later.  Before sm_90 the
// same product by warp shuffles and FMAs (the same sums up to the order of the additions).
__device__ void mma_16x8x8(double a0, double a1, double a2, double a3, double b0, double b1, double& d0, double& d1,
                           double& d2, double& d3) {
#if __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+d"(d0), "+d"(d1), "+d"(d2), "+d"(d3)
      : "d"(a0), "d"(a1), "d"(a2), "d"(a3), "d"(b0), "d"(b1));
#else
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int k = 0; k < 8; ++k) {  // A[.][k] and B[k][.] from the lanes (., k % 4)
    const double ag = __shfl_sync(~0u, k < 4 ? a0 : a2, 4 * g + k % 4);
    const double ag8 = __shfl_sync(~0u, k < 4 ? a1 : a3, 4 * g + k % 4);
    const double bn0 = __shfl_sync(~0u, k < 4 ? b0 : b1, 4 * (2 * t) + k % 4);
    const double bn1 = __shfl_sync(~0u, k < 4 ? b0 : b1, 4 * (2 * t + 1) + k % 4);
    d0 = fma(ag, bn0, d0);
    d1 = fma(ag, bn1, d1);
    d2 = fma(ag8, bn0, d2);
    d3 = fma(ag8, bn1, d3);
  }
#endif
}

// Adds the staged particles first … first + 7 to this thread's sums, on the tensor
// cores: the tile's 16 x 8 block of points (x, z) by y — x 8 times the warp's two z-points, by the
// 8 y-points — takes D += A B over the eight particles k, A the products of their x and z weights
// and B their y weights times a strength.  For the sums of `NSets` sets one product a component
// c: A = w_x ⊗ w_z, B = w_y s_c.  For the divergence α·∇ζ, with ζ = w_x w_y w_z, three into its
// one sum: (dw_x ⊗ w_z, α_x w_y), (w_x ⊗ w_z, α_y dw_y) and (w_x ⊗ dw_z, α_z w_y).  Lane (g, t)
// gives particles t and t + 4 their weights at x-point g and y-point g (mma_16x8x8's layout) and
// holds the points x g, y 2t + ii, z kk.  The slots past a warp's staged particles in its last
// group of eight hold zeros (clear): they add exactly nothing, with no test a value (selecting
// zeros for them instead made the one-set sum 5 % and the divergence 9 % slower on an H200).
template <bool Div, int NSets>
__device__ void accumulate(int first, int lane, int warp, const double* rows,
                           double (&acc)[Div ? 1 : 3 * NSets][2][kZ]) {
  using R = Row<Div, NSets>;
  constexpr int P = point_doubles(Div);
  const int g = lane / 4;
  // [particle t, t + 4]: A's two z-points for each product, B's weight for each.
  double a[Div ? 3 : 1][2][2], b[Div ? 3 : 1][2];
  const double* str[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const double* row = rows + (first + lane % 4 + 4 * h) * R::size;
    const double* X = row + R::x;
    const double* Y = row + R::y;
    const double2* Z = reinterpret_cast<const double2*>(row + R::z) + kZ * P / 2 * warp;  // the warp's two z-points
    str[h] = row + R::strengths;
    if constexpr (Div) {
      const double2 x = reinterpret_cast<const double2*>(X)[g], y = reinterpret_cast<const double2*>(Y)[g];
#pragma unroll
      for (int k = 0; k < kZ; ++k) {
        const double2 z = Z[k];  // (w, dw)
        a[0][h][k] = x.y * z.x;
        a[1][h][k] = x.x * z.x;
        a[2][h][k] = x.x * z.y;
      }
      b[0][h] = y.x * str[h][0];
      b[1][h] = y.y * str[h][1];
      b[2][h] = y.x * str[h][2];
    } else {
      const double wx = X[g];
      const double2 z = Z[0];
      a[0][h][0] = wx * z.x;
      a[0][h][1] = wx * z.y;
      b[0][h] = Y[g];
    }
  }
  if constexpr (Div) {
#pragma unroll
    for (int m = 0; m < 3; ++m)
      mma_16x8x8(a[m][0][0], a[m][0][1], a[m][1][0], a[m][1][1], b[m][0], b[m][1], acc[0][0][0], acc[0][1][0],
                 acc[0][0][1], acc[0][1][1]);
  } else {
    // the strengths by pairs (R::strengths even; the last pair's second is the row's padding)
    constexpr int kPairs = (3 * NSets + 1) / 2;
    double sv[2][2 * kPairs];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int k = 0; k < kPairs; ++k) {
        const double2 v = reinterpret_cast<const double2*>(str[h])[k];
        sv[h][2 * k] = v.x;
        sv[h][2 * k + 1] = v.y;
      }
#pragma unroll
    for (int c = 0; c < 3 * NSets; ++c)
      mma_16x8x8(a[0][0][0], a[0][0][1], a[0][1][0], a[0][1][1], b[0][0] * sv[0][c], b[0][1] * sv[1][c], acc[c][0][0],
                 acc[c][1][0], acc[c][0][1], acc[c][1][1]);
  }
}

// Cells along one direction whose particles may reach the tile's points o … o + kT − 1: those
// within `reach` cells (wrapped), or every cell once when that window covers the box.
struct Cells {
  int lo, len;
};

__device__ Cells cells_near(int o, int reach, int n) {
  return kT + 2 * reach >= n ? Cells{0, n} : Cells{o - reach, kT + 2 * reach};
}

// One tile a block.  The candidates are the particles of the tile's window of cells, taken by
// rows of cells along x (one or two runs of sorted particles each, two where the window wraps);
// warp w walks rows w, w + kWarps, … 32 candidates at a time, keeps those that reach the tile in
// a queue, with the runs as the test found them (Hit: the staging does not read them again), and
// stages 32 of them a round.  Then every thread adds the round's particles, warp 0's
// slots before warp 1's and so on, skipping a warp's slots where their z weights miss its
// z-points: a fixed order, so the sums have the same bits on every run.  Three sets hold 36
// accumulators a thread: capped at 128 registers (4 blocks an SM) the kernel ran 9 % faster on an
// H200 than at 102 (5) and 19 % faster than at 170 (3).
// The staged rows (Row::bytes) are the launch's dynamic shared memory.
template <bool Div, int NSets>
__global__ void __launch_bounds__(kThreads, NSets == 3 ? 4 : 1)
    gather_kernel(Sorted P, const int* __restrict__ start, int n, int reach, double h, int z0, int z1) {
  extern __shared__ double2 shared[];  // Row<Div, NSets>::bytes
  double* const rows = reinterpret_cast<double*>(shared);
  __shared__ Hit queue[kWarps][64];
  __shared__ int count[kWarps];
  __shared__ unsigned zmask[kWarps];

  const int tiles = (n + kT - 1) / kT;
  const int o[3] = {static_cast<int>(blockIdx.x % tiles) * kT, static_cast<int>(blockIdx.x / tiles % tiles) * kT,
                    static_cast<int>(blockIdx.x / (tiles * tiles) + z0 / kT) * kT};
  const unsigned valid[3] = {span(0, n - o[0]), span(0, n - o[1]), span(0, n - o[2])};  // points in the box
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  const Cells cx = cells_near(o[0], reach, n), cy = cells_near(o[1], reach, n), cz = cells_near(o[2], reach, n);
  // A row's runs of cells: [ca0, cb0), then [0, cb1) where the window wraps.
  int ca0 = cx.lo, cb0 = cx.lo + cx.len, cb1 = 0, nseg = 1;
  if (cx.lo < 0 || cx.lo + cx.len > n) {
    ca0 = wrap(cx.lo, n);
    cb0 = n;
    cb1 = cx.lo + cx.len - (cx.lo < 0 ? 0 : n);
    nseg = 2;
  }
  const int nrows = cy.len * cz.len;
  int row = warp, seg = 0, pos = 0, end = 0, qlen = 0;
  auto open = [&] {
    const int c = (wrap(cz.lo + row / cy.len, n) * n + wrap(cy.lo + row % cy.len, n)) * n;
    pos = start[c + (seg ? 0 : ca0)];
    end = start[c + (seg ? cb1 : cb0)];
  };
  if (row < nrows) open();

  double acc[Div ? 1 : 3 * NSets][2][kZ] = {};
  for (;;) {
    while (qlen < 32 && row < nrows) {
      const int s = pos + lane;
      Hit found;
      const bool hit = s < end && reaches(P, s, o, valid, n, found);
      const unsigned ballot = __ballot_sync(~0u, hit);
      if (hit) queue[warp][qlen + __popc(ballot & ((1u << lane) - 1))] = found;
      qlen += __popc(ballot);
      pos += 32;
      if (pos >= end) {
        if (++seg == nseg) {
          seg = 0;
          row += kWarps;
        }
        if (row < nrows) open();
      }
    }
    __syncwarp();
    const int take = min(qlen, 32);
    unsigned zbits = 0;
    if (lane < take) zbits = stage<Div, NSets>(P, queue[warp][lane], 32 * warp + lane, o, valid, n, h, rows);
    else if (lane < (take + 7) / 8 * 8) clear<Div, NSets>(32 * warp + lane, rows);
    zbits = __reduce_or_sync(~0u, zbits);
    const Hit rest = lane + 32 < qlen ? queue[warp][lane + 32] : Hit{};
    __syncwarp();
    if (lane + 32 < qlen) queue[warp][lane] = rest;
    qlen -= take;
    if (lane == 0) {
      count[warp] = take;
      zmask[warp] = zbits;
    }
    __syncthreads();
    int total = 0;
    for (int w = 0; w < kWarps; ++w) total += count[w];
    if (total == 0) break;
    for (int w = 0; w < kWarps; ++w) {
      if (!((zmask[w] >> (kZ * warp)) & ((1u << kZ) - 1))) continue;
      const int c = count[w];
#pragma unroll 1
      for (int p = 0; p < c; p += 8) accumulate<Div, NSets>(32 * w + p, lane, warp, rows, acc);
    }
    __syncthreads();
  }

  const long long npts = static_cast<long long>(z1 - z0) * n * n;  // of the window
  for (int kk = 0; kk < kZ; ++kk)
    for (int ii = 0; ii < 2; ++ii) {
      const int x = o[0] + lane / 4, y = o[1] + 2 * (lane % 4) + ii, z = o[2] + kZ * warp + kk;  // the thread's points
      if (x >= n || y >= n || z < z0 || z >= z1) continue;
      const long long i = (static_cast<long long>(z - z0) * n + y) * n + x;
      for (int c = 0; c < (Div ? 1 : 3 * NSets); ++c) P.sets.out[c / 3][c % 3 * npts + i] = acc[c][ii][kk];
    }
}

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
      cell_keys<<<blocks_for(np, threads), threads>>>(np, src, n, h, key, idx);
      VH_CHECK_LAUNCH();
      void* scratch = temp_bytes > f.bytes() ? temp.data() : f.data();
      std::size_t bytes = temp_bytes;
      VH_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(scratch, bytes, key, skey, idx, perm.as<int>(), np, 0, bits));
    }
    cell_starts<<<blocks_for(static_cast<long long>(n) * n * n + 1, threads), threads>>>(np, n * n * n, skey,
                                                                                         start.as<int>());
    VH_CHECK_LAUNCH();
    if (np > 0) {
      prepare<<<blocks_for(np, threads), threads>>>(np, src, perm.as<int>(), n, h, cutoff, m, f.as<double>(),
                                                    runs.as<int>());
      VH_CHECK_LAUNCH();
    }
  }

  // The sums of `sets` (ss and the scales as the Sets: up to three strength sets, each into its
  // out), or the divergence of set 0 into out[0].
  void sum(const Sets& sets, int nsets, bool divergence, int z0 = 0, int nz = -1) const {
    // A particle in cell c has its nonzero weights within ceil(cutoff σ_max/h) = m/2 − 1 lattice
    // points of c; one cell more covers the rounding of floor(x/h) and of the cut-off test.
    const int reach = m / 2;
    const int z1 = nz < 0 ? n : z0 + nz;
    if (z0 < 0 || z1 > n || z1 < z0) throw std::invalid_argument("blob sums: z-planes outside the lattice");
    if (z1 == z0) return;
    // The tiles of the whole lattice that hold the window's planes: each point's sum is the one
    // the whole lattice's tile gives it, bit for bit.
    const long long tiles = (n + kT - 1) / kT, ztiles = (z1 + kT - 1) / kT - z0 / kT;
    const Sorted P{f.as<double>(), runs.as<int>(), perm.as<int>(), sets, np};
    const unsigned nblocks = static_cast<unsigned>(tiles * tiles * ztiles);
    if (divergence)
      launch<true, 1>(nblocks, P, reach, z0, z1);
    else if (nsets == 1)
      launch<false, 1>(nblocks, P, reach, z0, z1);
    else if (nsets == 3)
      launch<false, 3>(nblocks, P, reach, z0, z1);
    else
      throw std::invalid_argument("blob sums: 1 or 3 strength sets at once");
  }

  template <bool Div, int NSets>
  void launch(unsigned nblocks, const Sorted& P, int reach, int z0, int z1) const {
    constexpr std::size_t bytes = Row<Div, NSets>::bytes;
    if (bytes > 48 * 1024)  // the divergence's rows, 52 KiB
      VH_CHECK_CUDA(cudaFuncSetAttribute(gather_kernel<Div, NSets>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(bytes)));
    gather_kernel<Div, NSets><<<nblocks, kThreads, bytes>>>(P, start.as<int>(), n, reach, h, z0, z1);
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

void DeviceBlobSums::sum(const double* d_s, double scale, bool divergence, double* d_out, int z0, int nz) const {
  impl_->sum(Sets{{d_s}, {scale}, 3, {d_out}}, 1, divergence, z0, nz);
}

void DeviceBlobSums::sum3(const double* const d_s[3], const double scale[3], double* const d_out[3], int z0,
                          int nz) const {
  impl_->sum(Sets{{d_s[0], d_s[1], d_s[2]}, {scale[0], scale[1], scale[2]}, 3, {d_out[0], d_out[1], d_out[2]}}, 3,
             false, z0, nz);
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
  sums.sum(Sets{{src.s}, {src.scale}, src.ss, {out.data()}}, 1, divergence);
  out.download(host, ncomp * npts);
  VH_CHECK_CUDA(cudaEventRecord(t1.e));
  VH_CHECK_CUDA(cudaEventSynchronize(t1.e));
  float ms = 0;
  VH_CHECK_CUDA(cudaEventElapsedTime(&ms, t0.e, t1.e));
  last_seconds = 1e-3 * ms;
}

}  // namespace vh::vortex::detail
