// GPU P2P over the CPU-built lists and the O(N^2) GPU direct sum; see p2p_gpu.h for the layout.
#include "base/cuda_check.h"
#include "fmm/p2p_gpu.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "base/device_buffer.h"
#include "fmm/p2p_gpu_device.h"
#include "fmm/p2p_kernel.h"
#include "fmm/particles_gpu.h"
#include "fmm/traverse_gpu.h"
#include "fmm/traverse_gpu_device.h"

namespace vh::fmm {

// ---------------------------------------------------------------------------------------------
// Single precision with the hardware's approximate division, reciprocal square root and exp
// (MUFU): the same pair_sums template, instantiated on a float wrapper whose operators use the
// intrinsics.  ~2 ulp per operation instead of 0.5; erf by kernel_gF_shared_exp.
struct fastf {
  float v = 0.0f;
  fastf() = default;
  __host__ __device__ constexpr explicit fastf(float x) : v(x) {}
  __host__ __device__ constexpr explicit fastf(double x) : v(static_cast<float>(x)) {}
  __host__ __device__ constexpr explicit fastf(int x) : v(static_cast<float>(x)) {}
};
#ifdef __CUDA_ARCH__
// The MUFU's approximations with subnormals flushed to zero (.ftz).  Without it (rsqrtf,
// __expf and __fdividef in a build without -ftz) each one carries a test and two rescalings for
// subnormal arguments: three instructions more around every one, for arguments (r^2, rho^2,
// 1 + 0.33 rho) that are never below 1e-38 here.
__device__ inline float mufu_rsqrt(float x) {
  float r;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ inline float mufu_rcp(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ inline float mufu_exp(float x) {  // e^x = 2^(x log2 e), as __expf
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.4426950408889634f));
  return r;
}
#define VH_FAST(dev, host) dev
#else
#define VH_FAST(dev, host) host
#endif
__host__ __device__ inline fastf operator+(fastf a, fastf b) { return fastf(a.v + b.v); }
__host__ __device__ inline fastf operator-(fastf a, fastf b) { return fastf(a.v - b.v); }
__host__ __device__ inline fastf operator*(fastf a, fastf b) { return fastf(a.v * b.v); }
__host__ __device__ inline fastf operator/(fastf a, fastf b) { return fastf(VH_FAST(a.v * mufu_rcp(b.v), a.v / b.v)); }
__host__ __device__ inline fastf operator-(fastf a) { return fastf(-a.v); }
__host__ __device__ inline fastf& operator+=(fastf& a, fastf b) { a.v += b.v; return a; }
__host__ __device__ inline fastf& operator-=(fastf& a, fastf b) { a.v -= b.v; return a; }
__host__ __device__ inline bool operator<(fastf a, fastf b) { return a.v < b.v; }
__host__ __device__ inline bool operator>(fastf a, fastf b) { return a.v > b.v; }
// x > 0 wherever kernel_radial takes a square root (rho^2 >= 0.25 there).
__host__ __device__ inline fastf vh_sqrt(fastf x) { return fastf(VH_FAST(x.v * mufu_rsqrt(x.v), sqrtf(x.v))); }
__host__ __device__ inline fastf vh_exp(fastf x) { return fastf(VH_FAST(mufu_exp(x.v), expf(x.v))); }
__host__ __device__ inline fastf vh_rsqrt(fastf x) { return fastf(VH_FAST(mufu_rsqrt(x.v), 1.0f / sqrtf(x.v))); }
#undef VH_FAST
// erf from the e^{-rho^2} that ce needs anyway (p2p_kernel.h): ~10 instructions instead of
// erff's ~20 on the pairs within rho < 4.5, which a warp takes whenever any of its lanes does.
__host__ __device__ inline void kernel_gF(fastf rho, fastf rho2, fastf& g, fastf& F) {
  kernel_gF_shared_exp(rho, rho2, g, F);
}
__host__ __device__ inline float vh_rsqrt(float x) { return 1.0f / sqrtf(x); }
__host__ __device__ inline double vh_rsqrt(double x) { return 1.0 / sqrt(x); }

namespace {

constexpr int kWarps = 4;  // tasks (warps) per thread block
constexpr int kTile = 32;  // sources per shared-memory tile (one per lane)

// Storage type (shared memory, strengths) of each working type.
template <class T> struct Store;
template <> struct Store<float> { using S = float; using S4 = float4; static constexpr int kMinBlocks = 6; };
template <> struct Store<fastf> { using S = float; using S4 = float4; static constexpr int kMinBlocks = 8; };
template <> struct Store<double> { using S = double; using S4 = double4_32a; static constexpr int kMinBlocks = 4; };

template <class S4, class S> __device__ inline S4 make4(S a, S b, S c, S d);
template <> __device__ inline float4 make4<float4, float>(float a, float b, float c, float d) {
  return make_float4(a, b, c, d);
}
template <> __device__ inline double4_32a make4<double4_32a, double>(double a, double b, double c, double d) {
  return make_double4_32a(a, b, c, d);
}

__device__ inline float val(float x) { return x; }
__device__ inline float val(fastf x) { return x.v; }
__device__ inline double val(double x) { return x; }

// p2p_pair (p2p_kernel.h) rearranged for the kernel's inner loop, the same sums in other
// terms: 4 pi taken out (G' = 4 pi G, F5' = 4 pi F5), one reciprocal square root for 1/r,
// 1/r^2 and 1/r^3, rho^2 from the source's 1/(2 sigma^2), and the antisymmetric part of grad
// summed as S = sum G' alpha (3 multiply-adds a pair instead of 6):
//   U += G' c,  S += G' alpha,  P[m][k] += F5' r_k c_m,   c = alpha x r;
//   u = U / (4 pi),  grad[m][k] = (eps_{mak} S_a - P[m][k]) / (4 pi),  P[2][2] = -P[0][0] - P[1][1].
// The branches and radial factors are kernel_radial's (p2p_kernel.h) with a = 1/r^3.  H200,
// 2^24 turbulent lattice, fp32: 333 -> 415 G pairs/s (adding G' eps alpha into P directly, 12
// accumulators instead of 15: 396); 415 -> 497 with erf from the shared exp, the MUFU's .ftz
// forms, g = 1 tested first and P[2][2] from the trace (71 -> 57 instructions a pair by ncu,
// issue slots 84-87 % busy: bench/RESULTS.md 2026-12-02).  g = 1 beyond rho^2 = singular_rho2
// (p2p_singular_rho2): a warp takes the erf branch whenever one of its lanes needs it.
template <class T>
__device__ inline void pair_sums(const T r[3], const T a[3], T sigma, T inv2s2, T singular_rho2, T U[3], T S[3],
                                 T P[3][3]) {
  const T r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
  const T rho2 = r2 * inv2s2;
  // The branches in the order of their frequency: g = 1 (rho^2 > singular_rho2), erf and exp,
  // then the series for the close pairs (rho < 0.5, r = 0 included, where ir is not used).
  const T ir = vh_rsqrt(r2), ir2 = ir * ir, ir3 = ir2 * ir;
  T G, F5;
  if (rho2 > singular_rho2) {
    kernel_scale(T(1), T(3), ir3, ir2, G, F5);
  } else if (!(rho2 < T(kSeriesRho2))) {
    T g, F;
    kernel_gF(rho2 * vh_rsqrt(rho2), rho2, g, F);
    kernel_scale(g, F, ir3, ir2, G, F5);
  } else {
    kernel_radial(r2, sigma, G, F5);
    G = G * T(kFourPi);
    F5 = F5 * T(kFourPi);
  }
  const T c[3] = {a[1] * r[2] - a[2] * r[1], a[2] * r[0] - a[0] * r[2], a[0] * r[1] - a[1] * r[0]};
  for (int m = 0; m < 3; ++m) {
    U[m] += G * c[m];
    S[m] += G * a[m];
    const T fc = F5 * c[m];
    for (int k = 0; k < (m == 2 ? 2 : 3); ++k) P[m][k] += fc * r[k];  // P[2][2]: see p2p_task
  }
}

// One warp's task {target begin, n targets <= 32, entry begin, entry end}; entries are
// {source begin, source end, shift index, skip self pair}.  out: 12 values per target (u, then
// grad row-major), overwritten.  sx, sa: the warp's tiles in shared memory.
template <class T>
__device__ __forceinline__ void p2p_task(int task, int lane, const int4* __restrict__ tasks,
                                         const int4* __restrict__ entries, const double4_32a* __restrict__ shifts,
                                         const double4_32a* __restrict__ xt, const double4_32a* __restrict__ xs,
                                         const typename Store<T>::S4* __restrict__ as,
                                         typename Store<T>::S* __restrict__ out, T singular_rho2,
                                         typename Store<T>::S4* sx, typename Store<T>::S4* sa) {
  using S = typename Store<T>::S;
  using S4 = typename Store<T>::S4;
  const int4 tk = tasks[task];
  const int n = tk.y;
  int np = 1;  // n rounded up to a power of two; 32 / np lane groups split the sources
  while (np < n) np <<= 1;
  const int grp = lane / np, ngrp = 32 / np, it = lane & (np - 1);
  const bool active = it < n;
  const int ti = tk.x + (active ? it : 0);  // idle lanes shadow the first target
  const double4_32a ref = xt[tk.x];
  const double4_32a xd = xt[ti];
  const T xl[3] = {T(xd.x - ref.x), T(xd.y - ref.y), T(xd.z - ref.z)};
  T U[3] = {T(0), T(0), T(0)}, Sa[3] = {T(0), T(0), T(0)};
  T P[3][3] = {{T(0), T(0), T(0)}, {T(0), T(0), T(0)}, {T(0), T(0), T(0)}};
  for (int e = tk.z; e < tk.w; ++e) {
    const int4 en = entries[e];
    const double4_32a s = shifts[en.z];
    const double ox = s.x - ref.x, oy = s.y - ref.y, oz = s.z - ref.z;
    for (int t0 = en.x; t0 < en.y; t0 += kTile) {
      const int j = t0 + lane;
      if (j < en.y) {
        const double4_32a p = xs[j];
        sx[lane] = make4<S4, S>(S(p.x + ox), S(p.y + oy), S(p.z + oz), S(p.w));
        S4 a = as[j];
        a.w = S(0.5 / (p.w * p.w));
        sa[lane] = a;
      }
      __syncwarp();
      const int m = min(kTile, en.y - t0);
      const int skip = en.w ? ti - t0 : -1;  // tile index of this target's own blob
      auto pair = [&](int k) {
        const S4 q = sx[k];
        const S4 a4 = sa[k];
        const T r[3] = {xl[0] - T(q.x), xl[1] - T(q.y), xl[2] - T(q.z)};
        const T a[3] = {T(a4.x), T(a4.y), T(a4.z)};
        pair_sums(r, a, T(q.w), T(a4.w), singular_rho2, U, Sa, P);
      };
      if (ngrp == 1 && m == kTile && (skip < 0 || skip >= kTile)) {
        // Common case (full tile, one lane group, no self pair): unrolled for overlap of pairs.
#pragma unroll 4
        for (int k = 0; k < kTile; ++k) pair(k);
      } else {
        for (int k = grp; k < m; k += ngrp)
          if (k != skip) pair(k);
      }
      __syncwarp();
    }
  }
  // u and grad (pair_sums), then the lane groups summed (lanes it, it + np, it + 2 np, ...).
  // Each pair's F5 c r^T has the trace F5 (alpha x r) . r = 0 (div u = 0 pair by pair), so
  // P[2][2] is not summed: one multiply-add a pair fewer.
  P[2][2] = T(0) - P[0][0] - P[1][1];
  const T inv4pi = T(0.079577471545947667884);
  const T E[3][3] = {{T(0), T(0) - Sa[2], Sa[1]}, {Sa[2], T(0), T(0) - Sa[0]}, {T(0) - Sa[1], Sa[0], T(0)}};
  S acc[12];
  for (int m = 0; m < 3; ++m) acc[m] = val(U[m] * inv4pi);
  for (int m = 0; m < 3; ++m)
    for (int k = 0; k < 3; ++k) acc[3 + 3 * m + k] = val((E[m][k] - P[m][k]) * inv4pi);
  for (int off = np; off < 32; off <<= 1)
    for (int c = 0; c < 12; ++c) acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], off);
  if (grp == 0 && active) {
    S* o = out + 12 * static_cast<long long>(ti);
    for (int c = 0; c < 12; ++c) o[c] = acc[c];
  }
}

// One warp per task (Queue false: task = block * kWarps + warp, the grid covers the tasks), or
// (Queue true) warps taking tasks from a counter (*queue, zeroed before the first launch) until
// none is left, so that a grid of any size does all of them exactly once: a few blocks per SM
// beside the far field, then whole-GPU launches for what is left (GpuEvaluator).  Either way a
// task's sums are the same, in the same order.
template <class T, bool Queue>
__global__ void __launch_bounds__(kWarps * 32, Store<T>::kMinBlocks)
    p2p_kernel(const int4* __restrict__ tasks, int ntask, const int4* __restrict__ entries,
               const double4_32a* __restrict__ shifts, const double4_32a* __restrict__ xt,
               const double4_32a* __restrict__ xs, const typename Store<T>::S4* __restrict__ as,
               typename Store<T>::S* __restrict__ out, typename Store<T>::S singular_rho2, int* __restrict__ queue) {
  using S4 = typename Store<T>::S4;
  __shared__ S4 sx[kWarps][kTile];  // source position relative to the task reference, sigma
  __shared__ S4 sa[kWarps][kTile];  // source strength, 1 / (2 sigma^2)
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  if (!Queue) {
    const int task = blockIdx.x * kWarps + w;
    if (task >= ntask) return;  // whole warp; no block-wide barrier below
    p2p_task<T>(task, lane, tasks, entries, shifts, xt, xs, as, out, T(singular_rho2), sx[w], sa[w]);
  } else {
    for (;;) {
      int task = 0;
      if (lane == 0) task = atomicAdd(queue, 1);
      task = __shfl_sync(0xffffffffu, task, 0);
      if (task >= ntask) return;
      p2p_task<T>(task, lane, tasks, entries, shifts, xt, xs, as, out, T(singular_rho2), sx[w], sa[w]);
    }
  }
}

int n_targets_of(const P2PLists& l) {
  int n = 0;
  for (int e : l.leaf_end) n = std::max(n, e);
  return n;
}

}  // namespace

double p2p_singular_rho2(GpuPrecision prec, double tolerance) {
  if (prec == GpuPrecision::fp64) return far_rho2<double>();
  if (!(tolerance > 0)) return far_rho2<float>();
  // 1 - F/3 = (1 - g) + (2/3) rho^2 ce >= 1 - g, both decreasing in rho: bisection on rho^2.
  auto deviation = [](double rho2) {
    const double rho = std::sqrt(rho2), ce = kTwoOverSqrtPi * rho * std::exp(-rho2);
    return std::erfc(rho) + ce + 2.0 / 3.0 * rho2 * ce;
  };
  double lo = 0, hi = far_rho2<float>();
  if (deviation(hi) > tolerance / 10) return hi;
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (lo + hi);
    (deviation(mid) > tolerance / 10 ? lo : hi) = mid;
  }
  return hi;
}

int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // reset the runtime error state left by the failed query
    return 0;
  }
  return n;
}

std::string gpu_name() {
  if (gpu_count() == 0) return "";
  int dev = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) return "";
  return prop.name;
}

long long P2PLists::pairs() const {
  long long total = 0;
  for (std::size_t l = 0; l + 1 < offset.size(); ++l) {
    long long ns = 0;
    for (int e = offset[l]; e < offset[l + 1]; ++e) ns += src_end[e] - src_begin[e];
    total += static_cast<long long>(leaf_end[l] - leaf_begin[l]) * ns;
  }
  return total;
}

P2PLists flatten_p2p_lists(const Tree& tgt, const Tree& src, const Lists& lists, const std::vector<Vec3>& shifts,
                           bool self, bool merge) {
  P2PLists f;
  f.shifts = shifts;
  f.self = self;
  std::vector<int> leaves;
  for (std::size_t c = 0; c < tgt.cells.size(); ++c)
    if (tgt.cells[c].leaf() && tgt.cells[c].end > tgt.cells[c].begin) leaves.push_back(static_cast<int>(c));
  const int nl = static_cast<int>(leaves.size());
  // Entries of one leaf; with merge, an entry continuing the previous one (same shift, source
  // range adjacent: sibling leaves in Morton order) extends it: the same pairs in fewer tiles.
  auto walk = [&](int l, auto&& emit) {
    const int c = leaves[l];
    int last_shift = -1, last_end = -1;
    if (c < static_cast<int>(lists.p2p.size()))
      for (const Interaction& in : lists.p2p[c]) {
        const Cell& B = src.cells[in.source];
        if (B.end <= B.begin) continue;
        const bool extend = merge && last_shift == in.shift && last_end == B.begin;
        emit(extend, B.begin, B.end, in.shift);
        last_shift = in.shift;
        last_end = B.end;
      }
  };
  std::vector<int> count(nl + 1, 0);
#pragma omp parallel for schedule(dynamic, 64)
  for (int l = 0; l < nl; ++l) walk(l, [&](bool extend, int, int, int) { count[l + 1] += extend ? 0 : 1; });
  f.offset.assign(nl + 1, 0);
  for (int l = 0; l < nl; ++l) f.offset[l + 1] = f.offset[l] + count[l + 1];
  f.leaf_begin.resize(nl);
  f.leaf_end.resize(nl);
  f.src_begin.resize(f.offset[nl]);
  f.src_end.resize(f.offset[nl]);
  f.src_shift.resize(f.offset[nl]);
#pragma omp parallel for schedule(dynamic, 64)
  for (int l = 0; l < nl; ++l) {
    f.leaf_begin[l] = tgt.cells[leaves[l]].begin;
    f.leaf_end[l] = tgt.cells[leaves[l]].end;
    int e = f.offset[l] - 1;
    walk(l, [&](bool extend, int b, int end, int shift) {
      if (!extend) {
        ++e;
        f.src_begin[e] = b;
        f.src_shift[e] = shift;
      }
      f.src_end[e] = end;
    });
  }
  return f;
}

P2PLists direct_lists(int n_targets, int n_sources, bool self) {
  P2PLists f;
  f.leaf_begin = {0};
  f.leaf_end = {n_targets};
  f.offset = {0, 1};
  f.src_begin = {0};
  f.src_end = {n_sources};
  f.src_shift = {0};
  f.shifts = {Vec3{0, 0, 0}};
  f.self = self;
  return f;
}

struct P2PGpu::Impl {
  GpuPrecision prec;
  double tolerance = 0;  // the evaluation's (p2p_singular_rho2)
  bool self;
  int nt = 0, ns = 0, ntask = 0, max_src = 0;
  // The sources the kernel reads: xs and as, or a SortedSourcesGpu's arrays.
  const double4_32a* src_x = nullptr;
  const void* src_a = nullptr;
  long long pairs = 0;
  DeviceArray<int4> tasks, entries;
  DeviceArray<double4_32a> shifts, xt, xs, as_d;  // as_d: the strengths in fp64
  DeviceArray<float4> as_f;                         // the strengths in fp32
  DeviceBytes out;                                  // 12 values per sorted target, real_size() each
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  // The kernel runs on its own non-blocking stream, so that uploads and host work of the far
  // field (default stream) proceed while it runs; make_default_stream_wait() orders them.
  cudaStream_t stream = nullptr;
  ~Impl() {
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (stream) cudaStreamDestroy(stream);
  }
  // The constructors' common part after the lists: shifts up, results and events allocated.
  void finish(const std::vector<Vec3>& shift_list);
  std::size_t real_size() const { return prec == GpuPrecision::fp64 ? sizeof(double) : sizeof(float); }
};

namespace {

void check_sizes(const P2PLists& l) {
  const std::size_t nleaf = l.leaf_begin.size();
  if (l.leaf_end.size() != nleaf || l.offset.size() != nleaf + 1 || l.src_end.size() != l.src_begin.size() ||
      l.src_shift.size() != l.src_begin.size() || l.offset.back() != static_cast<int>(l.src_begin.size()))
    throw std::invalid_argument("P2PGpu: inconsistent list sizes");
}

// Tasks: full chunks of 32 targets, then the rest of the leaf.
std::vector<int4> tasks_of(const P2PLists& l) {
  std::vector<int4> tasks;
  for (std::size_t i = 0; i < l.leaf_begin.size(); ++i)
    for (int c = l.leaf_begin[i]; c < l.leaf_end[i]; c += 32)
      tasks.push_back(make_int4(c, std::min(32, l.leaf_end[i] - c), l.offset[i], l.offset[i + 1]));
  return tasks;
}

// Checks every entry before anything is uploaded; returns the largest source end.
int check_entries(const P2PLists& l) {
  const std::ptrdiff_t n_entries = static_cast<std::ptrdiff_t>(l.src_begin.size());
  std::ptrdiff_t bad = n_entries;  // first bad entry
  int max_src = 0;
#pragma omp parallel for schedule(static) reduction(min : bad) reduction(max : max_src)
  for (std::ptrdiff_t e = 0; e < n_entries; ++e) {
    const int sh = l.src_shift[e];
    if (sh < 0 || sh >= static_cast<int>(l.shifts.size()) || l.src_begin[e] < 0 || l.src_end[e] < l.src_begin[e])
      bad = std::min(bad, e);
    max_src = std::max(max_src, l.src_end[e]);
  }
  if (bad < n_entries) throw std::invalid_argument("P2PGpu: bad list entry " + std::to_string(bad));
  return max_src;
}

// Entry e as the kernel reads it: (src_begin, src_end, shift, skip the pair of equal indices).
int4 entry_of(const P2PLists& l, std::ptrdiff_t e) {
  const Vec3& s = l.shifts[l.src_shift[e]];
  const bool skip = l.self && s[0] == 0 && s[1] == 0 && s[2] == 0;
  return make_int4(l.src_begin[e], l.src_end[e], l.src_shift[e], skip ? 1 : 0);
}

}  // namespace

void P2PGpu::Impl::finish(const std::vector<Vec3>& shift_list) {
  std::vector<double4_32a> sh(shift_list.size());
  for (std::size_t s = 0; s < sh.size(); ++s)
    sh[s] = make_double4_32a(shift_list[s][0], shift_list[s][1], shift_list[s][2], 0.0);
  if (sh.empty()) sh.push_back(make_double4_32a(0, 0, 0, 0));
  shifts.upload(sh);
  out.resize(static_cast<std::size_t>(nt) * 12 * real_size());
  VH_CHECK_CUDA(cudaEventCreate(&e0));
  VH_CHECK_CUDA(cudaEventCreate(&e1));
  VH_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
}

P2PGpu::P2PGpu(const P2PLists& l, GpuPrecision prec, double tolerance) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.prec = prec;
  m.tolerance = tolerance;
  m.self = l.self;
  check_sizes(l);
  m.nt = n_targets_of(l);
  const std::vector<int4> tasks = tasks_of(l);
  m.max_src = check_entries(l);
  m.entries.upload_with(l.src_begin.size(), [&](std::ptrdiff_t e) { return entry_of(l, e); });
  m.ntask = static_cast<int>(tasks.size());
  m.pairs = l.pairs();
  m.tasks.upload(tasks);
  m.finish(l.shifts);
}

P2PGpu::P2PGpu(GpuLists& l, GpuPrecision prec, double tolerance) : impl_(std::make_unique<Impl>()) {
  if (!l.dev || l.dev->p2p_taken) throw std::invalid_argument("P2PGpu: the GpuLists' P2P arrays were taken");
  Impl& m = *impl_;
  m.prec = prec;
  m.tolerance = tolerance;
  m.self = l.self;
  m.nt = l.p2p_targets;
  m.max_src = l.p2p_max_source;
  m.ntask = l.n_p2p_tasks;
  m.pairs = l.p2p_pairs;
  m.tasks = std::move(l.dev->p2p_tasks);
  m.entries = std::move(l.dev->p2p_entries);
  l.dev->p2p_taken = true;
  m.finish(l.shifts);
}

P2PArrays p2p_arrays(const P2PLists& l) {
  check_sizes(l);
  check_entries(l);
  P2PArrays a;
  for (const int4& t : tasks_of(l)) a.tasks.push_back({t.x, t.y, t.z, t.w});
  a.entries.resize(l.src_begin.size());
  for (std::size_t e = 0; e < a.entries.size(); ++e) {
    const int4 v = entry_of(l, static_cast<std::ptrdiff_t>(e));
    a.entries[e] = {v.x, v.y, v.z, v.w};
  }
  return a;
}

P2PGpu::~P2PGpu() = default;

int P2PGpu::n_targets() const { return impl_->nt; }
long long P2PGpu::pairs() const { return impl_->pairs; }
const void* P2PGpu::device_result() const { return impl_->out.data(); }
bool P2PGpu::device_result_is_double() const { return impl_->prec == GpuPrecision::fp64; }
const void* P2PGpu::device_sources() const { return impl_->src_x; }
const void* P2PGpu::device_targets() const { return impl_->self ? impl_->src_x : impl_->xt.data(); }

void P2PGpu::set_sources(const std::vector<Vec3>& x, const std::vector<Vec3>& alpha, const std::vector<double>& sigma) {
  Impl& m = *impl_;
  const std::size_t n = x.size();
  if (alpha.size() != n || sigma.size() != n) throw std::invalid_argument("P2PGpu: x, alpha, sigma sizes differ");
  if (static_cast<int>(n) < m.max_src) throw std::invalid_argument("P2PGpu: fewer sources than the lists use");
  if (m.self && static_cast<int>(n) < m.nt) throw std::invalid_argument("P2PGpu: self lists need every target");
  m.ns = static_cast<int>(n);
  m.xs.upload_with(n, [&](std::ptrdiff_t i) { return make_double4_32a(x[i][0], x[i][1], x[i][2], sigma[i]); });
  if (m.prec == GpuPrecision::fp64) {
    m.as_d.upload_with(n, [&](std::ptrdiff_t i) {
      return make_double4_32a(alpha[i][0], alpha[i][1], alpha[i][2], 0.0);
    });
    m.src_a = m.as_d.data();
  } else {
    m.as_f.upload_with(n, [&](std::ptrdiff_t i) {
      return make_float4(float(alpha[i][0]), float(alpha[i][1]), float(alpha[i][2]), 0.0f);
    });
    m.src_a = m.as_f.data();
  }
  m.src_x = m.xs.data();
}

void P2PGpu::set_sources(const SortedSourcesGpu& s) {
  Impl& m = *impl_;
  if (s.size() < m.max_src) throw std::invalid_argument("P2PGpu: fewer sources than the lists use");
  if (m.self && s.size() < m.nt) throw std::invalid_argument("P2PGpu: self lists need every target");
  m.ns = s.size();
  m.src_x = static_cast<const double4_32a*>(s.positions_sigma());
  m.src_a = m.prec == GpuPrecision::fp64 ? s.alpha_double() : s.alpha_float();
}

void P2PGpu::set_targets(const std::vector<Vec3>& x) {
  Impl& m = *impl_;
  if (m.self) return;
  if (static_cast<int>(x.size()) < m.nt) throw std::invalid_argument("P2PGpu: fewer targets than the lists use");
  m.xt.upload_with(x.size(), [&](std::ptrdiff_t i) { return make_double4_32a(x[i][0], x[i][1], x[i][2], 0.0); });
}

double P2PGpu::run() {
  launch();
  return wait();
}

namespace {

template <bool Queue>
void launch_kernel(const P2PLaunch& a, int* queue, int blocks, cudaStream_t s) {
  const double singular = p2p_singular_rho2(a.prec, a.tolerance);
  switch (a.prec) {
    case GpuPrecision::fp32:
      p2p_kernel<fastf, Queue><<<blocks, kWarps * 32, 0, s>>>(a.tasks, a.ntask, a.entries, a.shifts, a.xt, a.xs,
                                                              static_cast<const float4*>(a.as),
                                                              static_cast<float*>(a.out), float(singular), queue);
      break;
    case GpuPrecision::fp32_ieee:
      p2p_kernel<float, Queue><<<blocks, kWarps * 32, 0, s>>>(a.tasks, a.ntask, a.entries, a.shifts, a.xt, a.xs,
                                                              static_cast<const float4*>(a.as),
                                                              static_cast<float*>(a.out), float(singular), queue);
      break;
    case GpuPrecision::fp64:
      p2p_kernel<double, Queue><<<blocks, kWarps * 32, 0, s>>>(a.tasks, a.ntask, a.entries, a.shifts, a.xt, a.xs,
                                                               static_cast<const double4_32a*>(a.as),
                                                               static_cast<double*>(a.out), singular, queue);
      break;
  }
  VH_CHECK_LAUNCH();
}

}  // namespace

void p2p_launch(const P2PLaunch& a, cudaStream_t s) {
  const int blocks = (a.ntask + kWarps - 1) / kWarps;
  if (blocks > 0) launch_kernel<false>(a, nullptr, blocks, s);
}

void p2p_launch_queue(const P2PLaunch& a, int* queue, int blocks, cudaStream_t s) {
  if (a.ntask > 0 && blocks > 0) launch_kernel<true>(a, queue, blocks, s);
}

int p2p_blocks_per_sm(GpuPrecision prec) {
  switch (prec) {
    case GpuPrecision::fp32: return Store<fastf>::kMinBlocks;
    case GpuPrecision::fp32_ieee: return Store<float>::kMinBlocks;
    default: return Store<double>::kMinBlocks;
  }
}

void P2PGpu::launch() {
  Impl& m = *impl_;
  if (!m.src_x && m.max_src > 0) throw std::runtime_error("P2PGpu::run: set_sources first");
  const double4_32a* xt = m.self ? m.src_x : m.xt.data();
  if (!xt && m.nt > 0) throw std::runtime_error("P2PGpu::run: set_targets first");
  VH_CHECK_CUDA(cudaEventRecord(m.e0, m.stream));
  P2PLaunch a;
  a.prec = m.prec;
  a.tasks = m.tasks.data();
  a.ntask = m.ntask;
  a.entries = m.entries.data();
  a.shifts = m.shifts.data();
  a.xt = xt;
  a.xs = m.src_x;
  a.as = m.src_a;
  a.out = m.out.data();
  a.tolerance = m.tolerance;
  p2p_launch(a, m.stream);
  VH_CHECK_CUDA(cudaEventRecord(m.e1, m.stream));
}

void P2PGpu::make_default_stream_wait() const { VH_CHECK_CUDA(cudaStreamWaitEvent(cudaStreamLegacy, impl_->e1, 0)); }

double P2PGpu::wait() {
  Impl& m = *impl_;
  VH_CHECK_CUDA(cudaEventSynchronize(m.e1));
  float ms = 0;
  VH_CHECK_CUDA(cudaEventElapsedTime(&ms, m.e0, m.e1));
  return ms;
}

void P2PGpu::get(std::vector<Vec3>& u, std::vector<Mat3>& grad) const {
  const Impl& m = *impl_;
  VH_CHECK_CUDA(cudaEventSynchronize(m.e1));
  u.assign(m.nt, Vec3{});
  grad.assign(m.nt, Mat3{});
  auto unpack = [&](const auto* h) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < m.nt; ++i) {
      const auto* o = h + 12 * static_cast<std::size_t>(i);
      for (int a = 0; a < 3; ++a) u[i][a] = o[a];
      for (int a = 0; a < 3; ++a)
        for (int k = 0; k < 3; ++k) grad[i][a][k] = o[3 + 3 * a + k];
    }
  };
  if (m.prec == GpuPrecision::fp64) {
    std::vector<double> h(static_cast<std::size_t>(m.nt) * 12);
    VH_CHECK_CUDA(cudaMemcpy(h.data(), m.out.data(), h.size() * sizeof(double), cudaMemcpyDeviceToHost));
    unpack(h.data());
  } else {
    std::vector<float> h(static_cast<std::size_t>(m.nt) * 12);
    VH_CHECK_CUDA(cudaMemcpy(h.data(), m.out.data(), h.size() * sizeof(float), cudaMemcpyDeviceToHost));
    unpack(h.data());
  }
}

void p2p_gpu(const P2PLists& lists, const std::vector<Vec3>& xt, const std::vector<Vec3>& xs,
             const std::vector<Vec3>& alpha, const std::vector<double>& sigma, std::vector<Vec3>& u,
             std::vector<Mat3>& grad, GpuPrecision prec) {
  P2PGpu g(lists, prec);
  g.set_sources(xs, alpha, sigma);
  if (!lists.self) g.set_targets(xt);
  g.run();
  g.get(u, grad);
}

double direct_sum_gpu(const std::vector<Vec3>& x, const std::vector<Vec3>& alpha, const std::vector<double>& sigma,
                      std::vector<Vec3>& u, std::vector<Mat3>& grad, GpuPrecision prec) {
  const int n = static_cast<int>(x.size());
  P2PGpu g(direct_lists(n, n, true), prec);
  g.set_sources(x, alpha, sigma);
  const double ms = g.run();
  g.get(u, grad);
  return ms;
}

}  // namespace vh::fmm
