// GPU blob sums: see blobs_gpu.h.  The weights repeat Weights::set of blobs.cpp (the stencil
// start i0, the cut-off test, the Gaussian), so the GPU sums differ from the CPU's only in the
// rounding of exp, of 1/σ² and of the order of the additions.
#include "vortex/blobs_gpu.h"

#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <stdexcept>

#include "fmm/cuda_util.h"

namespace vh::vortex::detail {
namespace {

template <class T>
struct Dev {
  T* p = nullptr;
  explicit Dev(std::size_t n) { VH_FMM_CUDA(cudaMalloc(&p, (n ? n : 1) * sizeof(T))); }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() { VH_FMM_CUDA(cudaEventCreate(&e)); }
  ~Event() { cudaEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

double last_seconds = 0;

// The tiling.  A block sums the kT³ lattice points of one tile; warp w owns its z-points
// kZ w … kZ w + kZ − 1, lane (ig, j) the x-points 2 ig, 2 ig + 1 and the y-point j of those: 2 kZ
// points a thread, so that each value read from shared memory feeds several multiply-adds and
// the lanes of a warp read few distinct addresses (the z weights are one broadcast).  Each round
// every warp stages up to 32 particles (slots 32 w …), so kThreads particles a round.
constexpr int kT = 8;
constexpr int kWarps = 2;
constexpr int kZ = kT / kWarps;
constexpr int kThreads = 32 * kWarps;
static_assert(kT == 8 && kZ % 2 == 0, "the lane layout assumes 4 x-pairs times 8 y-points a warp");

// Shared-memory doubles per staged particle: the x weights times α, 3 per point, and the y and
// z weights (w, or (w, dw) pairs for the divergence), each padded to an odd number of 16-byte
// units so that the lanes storing different particles hit different banks.
constexpr int kXS = 3 * kT + 2;
template <bool Div>
constexpr int kYZS = Div ? 2 * kT + 2 : kT + 2;

// The particles in cell order: field k (x, y, z, α_x, α_y, α_z, σ) of particle s at f[k np + s].
struct Sorted {
  const double* f;
  int np;
  __device__ double operator()(int k, int s) const { return f[static_cast<long long>(k) * np + s]; }
};

// CellList's cell, floor(x/h) clamped into the box, as each particle's sort key.
__global__ void cell_keys(int np, const double* __restrict__ packed, int n, double h, int* __restrict__ key,
                          int* __restrict__ idx) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= np) return;
  int c[3];
  for (int d = 0; d < 3; ++d)
    c[d] = min(max(static_cast<int>(floor(packed[kPacked * static_cast<long long>(q) + d] / h)), 0), n - 1);
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

__global__ void sort_fields(int np, const double* __restrict__ packed, const int* __restrict__ perm,
                            double* __restrict__ sorted) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= np) return;
  const long long q = perm[s];
  for (int k = 0; k < kPacked; ++k) sorted[static_cast<long long>(k) * np + s] = packed[kPacked * q + k];
}

__device__ int wrap(int a, int n) {
  a %= n;
  return a < 0 ? a + n : a;
}

// i h − x as blobs.cpp computes it (no fused multiply-add), so that the cut-off test |i h − x| ≤ R
// takes the CPU's decision.
__device__ double offset(int i, double h, double x) { return __dsub_rn(__dmul_rn(static_cast<double>(i), h), x); }

// One particle along one direction: its stencil, lattice points i0 … i0 + m − 1 wrapped into the
// box (Weights::set), seen from the tile's points o … o + kT − 1; a = (o − i0) mod n is the
// stencil index of the first of them.
struct Line {
  double x, R;
  int i0, a;
};

__device__ Line line(double x, double R, double h, int o, int n) {
  const int i0 = static_cast<int>(ceil(__dsub_rn(x, R) / h));  // no fused multiply-add into R = cutoff σ
  return {x, R, i0, wrap(o - i0, n)};
}

// Bit t set where the tile's point o + t (< n) holds an image of a stencil point within R.
__device__ unsigned reach_bits(const Line& L, int o, int n, int m, double h) {
  unsigned bits = 0;
  int a = L.a;
  for (int t = 0; t < kT && o + t < n; ++t) {
    for (int b = a; b < m; b += n)
      if (fabs(offset(L.i0 + b, h, L.x)) <= L.R) bits |= 1u << t;
    if (++a == n) a = 0;
  }
  return bits;
}

// The weights at the tile's points, summed over the stencil's images there (several when the
// stencil is wider than the box): w = norm exp(−d²/2σ²) and dw = −d/σ² w for |d| ≤ R, given
// c2 = 1/2σ² and c1 = 1/σ²; zero elsewhere and past the box.
__device__ void tile_weights(const Line& L, double norm, double c2, double c1, int o, int n, int m, double h,
                             double (&w)[kT], double (&dw)[kT]) {
  int a = L.a;
#pragma unroll
  for (int t = 0; t < kT; ++t) {
    w[t] = dw[t] = 0;
    if (o + t < n)
      for (int b = a; b < m; b += n) {
        const double d = offset(L.i0 + b, h, L.x);
        if (fabs(d) <= L.R) {
          const double v = norm * exp(-d * d * c2);
          w[t] += v;
          dw[t] += -d * c1 * v;
        }
      }
    if (++a == n) a = 0;
  }
}

// Whether particle s has a nonzero weight at some point of the tile at o.
__device__ bool reaches(const Sorted& P, int s, const int (&o)[3], int n, int m, double h, double cutoff) {
  const double R = cutoff * P(6, s);
#pragma unroll
  for (int d = 2; d >= 0; --d)
    if (!reach_bits(line(P(d, s), R, h, o[d], n), o[d], n, m, h)) return false;
  return true;
}

// Writes particle s's weights at the tile's points into slot `slot`: along x times α,
// (α_x dw, α_y w, α_z w) per point for the divergence, (α_x w, α_y w, α_z w) for ω; along y and z
// the (w, dw) pairs or w.  Returns the bits of the z-points with a nonzero weight.
template <bool Div>
__device__ unsigned stage(const Sorted& P, int s, int slot, const int (&o)[3], int n, int m, double h, double cutoff,
                          double2* xs, double2* ys, double2* zs) {
  const double sg = P(6, s), R = cutoff * sg, norm = 1.0 / sqrt(2.0 * 3.14159265358979323846 * sg * sg);
  const double c2 = 1.0 / (2.0 * sg * sg), c1 = 1.0 / (sg * sg);
  double w[kT], dw[kT];
  tile_weights(line(P(0, s), R, h, o[0], n), norm, c2, c1, o[0], n, m, h, w, dw);
  const double al[3] = {P(3, s), P(4, s), P(5, s)};
  double v[3 * kT];
#pragma unroll
  for (int t = 0; t < kT; ++t)
    for (int c = 0; c < 3; ++c) v[3 * t + c] = al[c] * (Div && c == 0 ? dw[t] : w[t]);
#pragma unroll
  for (int u = 0; u < 3 * kT / 2; ++u) xs[slot * (kXS / 2) + u] = make_double2(v[2 * u], v[2 * u + 1]);
  unsigned zbits = 0;
#pragma unroll
  for (int d = 1; d < 3; ++d) {
    tile_weights(line(P(d, s), R, h, o[d], n), norm, c2, c1, o[d], n, m, h, w, dw);
    double2* dst = (d == 1 ? ys : zs) + slot * (kYZS<Div> / 2);
#pragma unroll
    for (int t = 0; t < kT; ++t)
      if (Div)
        dst[t] = make_double2(w[t], dw[t]);
      else if (t % 2 == 0)
        dst[t / 2] = make_double2(w[t], w[t + 1]);
    if (d == 2)
#pragma unroll
      for (int t = 0; t < kT; ++t) zbits |= (w[t] != 0.0 ? 1u : 0u) << t;
  }
  return zbits;
}

// Adds staged particle `slot` to this thread's points (x 2 ig + ii, y j, z kZ warp + kk).
template <bool Div>
__device__ void accumulate(int slot, int ig, int j, int warp, const double2* xs, const double2* ys, const double2* zs,
                           double (&acc)[Div ? 1 : 3][2][kZ]) {
  const double2* X = xs + slot * (kXS / 2) + 3 * ig;
  const double2 p0 = X[0], p1 = X[1], p2 = X[2];
  const double a[2][3] = {{p0.x, p0.y, p1.x}, {p1.y, p2.x, p2.y}};
  const double2* Z = zs + slot * (kYZS<Div> / 2);
  if constexpr (Div) {
    // α·∇: w_z (α_x dw_x w_y + α_y w_x dw_y) + dw_z (α_z w_x w_y)
    const double2 y = ys[slot * (kYZS<Div> / 2) + j];
    double u[2], v[2];
#pragma unroll
    for (int ii = 0; ii < 2; ++ii) {
      u[ii] = fma(a[ii][1], y.y, a[ii][0] * y.x);
      v[ii] = a[ii][2] * y.x;
    }
#pragma unroll
    for (int kk = 0; kk < kZ; ++kk) {
      const double2 z = Z[kZ * warp + kk];
#pragma unroll
      for (int ii = 0; ii < 2; ++ii) acc[0][ii][kk] = fma(z.y, v[ii], fma(z.x, u[ii], acc[0][ii][kk]));
    }
  } else {
    const double wy = reinterpret_cast<const double*>(ys)[slot * kYZS<Div> + j];
    double t[2][3];
#pragma unroll
    for (int ii = 0; ii < 2; ++ii)
      for (int c = 0; c < 3; ++c) t[ii][c] = a[ii][c] * wy;
#pragma unroll
    for (int k2 = 0; k2 < kZ / 2; ++k2) {
      const double2 z = Z[kZ * warp / 2 + k2];
#pragma unroll
      for (int ii = 0; ii < 2; ++ii)
        for (int c = 0; c < 3; ++c) {
          acc[c][ii][2 * k2] = fma(z.x, t[ii][c], acc[c][ii][2 * k2]);
          acc[c][ii][2 * k2 + 1] = fma(z.y, t[ii][c], acc[c][ii][2 * k2 + 1]);
        }
    }
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
// a queue and stages 32 of them a round.  Then every thread adds the round's particles, warp 0's
// slots before warp 1's, skipping a warp's slots where their z weights miss its z-points: a fixed
// order, so the sums have the same bits on every run.
template <bool Div>
__global__ void __launch_bounds__(kThreads) gather_kernel(Sorted P, const int* __restrict__ start, int n, int m,
                                                          int reach, double h, double cutoff,
                                                          double* __restrict__ out) {
  __shared__ double2 xs[kThreads * kXS / 2];
  __shared__ double2 ys[kThreads * kYZS<Div> / 2];
  __shared__ double2 zs[kThreads * kYZS<Div> / 2];
  __shared__ int queue[kWarps][64];
  __shared__ int count[kWarps];
  __shared__ unsigned zmask[kWarps];

  const int tiles = (n + kT - 1) / kT;
  const int o[3] = {static_cast<int>(blockIdx.x % tiles) * kT, static_cast<int>(blockIdx.x / tiles % tiles) * kT,
                    static_cast<int>(blockIdx.x / (tiles * tiles)) * kT};
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

  const int ig = lane % 4, j = lane / 4;
  double acc[Div ? 1 : 3][2][kZ] = {};
  for (;;) {
    while (qlen < 32 && row < nrows) {
      const int s = pos + lane;
      const bool hit = s < end && reaches(P, s, o, n, m, h, cutoff);
      const unsigned ballot = __ballot_sync(~0u, hit);
      if (hit) queue[warp][qlen + __popc(ballot & ((1u << lane) - 1))] = s;
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
    if (lane < take) zbits = stage<Div>(P, queue[warp][lane], 32 * warp + lane, o, n, m, h, cutoff, xs, ys, zs);
    zbits = __reduce_or_sync(~0u, zbits);
    const int rest = lane + 32 < qlen ? queue[warp][lane + 32] : 0;
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
#pragma unroll 2
      for (int p = 0; p < c; ++p) accumulate<Div>(32 * w + p, ig, j, warp, xs, ys, zs, acc);
    }
    __syncthreads();
  }

  const long long npts = static_cast<long long>(n) * n * n;
  const int y = o[1] + j;
  for (int kk = 0; kk < kZ; ++kk)
    for (int ii = 0; ii < 2; ++ii) {
      const int x = o[0] + 2 * ig + ii, z = o[2] + kZ * warp + kk;
      if (x >= n || y >= n || z >= n) continue;
      const long long i = (static_cast<long long>(z) * n + y) * n + x;
      for (int c = 0; c < (Div ? 1 : 3); ++c) out[c * npts + i] = acc[c][ii][kk];
    }
}

unsigned blocks(long long count, int threads) { return static_cast<unsigned>((count + threads - 1) / threads); }

}  // namespace

double* pinned_doubles(std::size_t count) { return static_cast<double*>(fmm::pinned_staging(count * sizeof(double))); }

double last_gather_gpu_seconds() { return last_seconds; }

void gather_gpu(std::size_t np_, const Grid& g, double cutoff, int m, bool divergence, double* host) {
  const long long np = static_cast<long long>(np_), npts = static_cast<long long>(g.points());
  if (np >= (1LL << 31) || npts >= (1LL << 31))
    throw std::runtime_error("gather_gpu: particles and lattice points must number below 2^31");
  const int nq = static_cast<int>(np), ncells = static_cast<int>(npts), ncomp = divergence ? 1 : 3;
  int bits = 1;
  while ((1LL << bits) < npts) ++bits;

  // Everything allocated before the clock starts.
  Dev<double> packed(kPacked * np), sorted(kPacked * np), out(ncomp * npts);
  Dev<int> key(np), idx(np), skey(np), sidx(np), start(npts + 1);
  std::size_t temp_bytes = 0;
  VH_FMM_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, key.p, skey.p, idx.p, sidx.p, nq, 0, bits));
  Dev<char> temp(temp_bytes);
  Event t0, t1;

  VH_FMM_CUDA(cudaEventRecord(t0.e));
  const int threads = 256;
  if (np > 0) {
    VH_FMM_CUDA(cudaMemcpy(packed.p, host, kPacked * np * sizeof(double), cudaMemcpyHostToDevice));
    cell_keys<<<blocks(np, threads), threads>>>(nq, packed.p, g.n, g.h(), key.p, idx.p);
    VH_FMM_CUDA(cudaGetLastError());
    VH_FMM_CUDA(cub::DeviceRadixSort::SortPairs(temp.p, temp_bytes, key.p, skey.p, idx.p, sidx.p, nq, 0, bits));
    sort_fields<<<blocks(np, threads), threads>>>(nq, packed.p, sidx.p, sorted.p);
    VH_FMM_CUDA(cudaGetLastError());
  }
  cell_starts<<<blocks(np + 1, threads), threads>>>(nq, ncells, skey.p, start.p);
  VH_FMM_CUDA(cudaGetLastError());
  // A particle in cell c has its nonzero weights within ceil(cutoff σ_max/h) = m/2 − 1 lattice
  // points of c; one cell more covers the rounding of floor(x/h) and of the cut-off test.
  const int reach = m / 2;
  const long long tiles = (g.n + kT - 1) / kT;
  const Sorted P{sorted.p, nq};
  const unsigned nblocks = static_cast<unsigned>(tiles * tiles * tiles);
  if (divergence)
    gather_kernel<true><<<nblocks, kThreads>>>(P, start.p, g.n, m, reach, g.h(), cutoff, out.p);
  else
    gather_kernel<false><<<nblocks, kThreads>>>(P, start.p, g.n, m, reach, g.h(), cutoff, out.p);
  VH_FMM_CUDA(cudaGetLastError());
  VH_FMM_CUDA(cudaMemcpy(host, out.p, ncomp * npts * sizeof(double), cudaMemcpyDeviceToHost));
  VH_FMM_CUDA(cudaEventRecord(t1.e));
  VH_FMM_CUDA(cudaEventSynchronize(t1.e));
  float ms = 0;
  VH_FMM_CUDA(cudaEventElapsedTime(&ms, t0.e, t1.e));
  last_seconds = 1e-3 * ms;
}

}  // namespace vh::vortex::detail
