#include "fmm/particles_gpu.h"

#include <cstring>
#include <stdexcept>

#include "fmm/cuda_util.h"
#include "fmm/morton.h"
#include "fmm/profile.h"
#include "fmm/sort_gpu.h"

namespace vh::fmm {

namespace {

__global__ void keys_kernel(int n, const double* __restrict__ x, double lo0, double lo1, double lo2, double scale,
                            bool wrap, std::uint64_t* __restrict__ key) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double p[3];
  for (int d = 0; d < 3; ++d) p[d] = wrap ? morton::wrap(x[3 * i + d]) : x[3 * i + d];
  const double lo[3] = {lo0, lo1, lo2};
  key[i] = morton::key(p, lo, scale);
}

// Sorted order: xs4 = (x, y, z, sigma), a4d = (alpha, 0), a4f = float (alpha, 0).
__global__ void gather_kernel(int n, const int* __restrict__ perm, const double* __restrict__ x,
                              const double* __restrict__ sigma, const double* __restrict__ alpha, bool wrap,
                              double4_32a* __restrict__ xs4, double4_32a* __restrict__ a4d, float4* __restrict__ a4f) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const long long j = perm[i];
  double p[3];
  for (int d = 0; d < 3; ++d) p[d] = wrap ? morton::wrap(x[3 * j + d]) : x[3 * j + d];
  const double sg = sigma[j], a0 = alpha[3 * j], a1 = alpha[3 * j + 1], a2 = alpha[3 * j + 2];
  xs4[i] = make_double4_32a(p[0], p[1], p[2], sg);
  a4d[i] = make_double4_32a(a0, a1, a2, 0.0);
  a4f[i] = make_float4(float(a0), float(a1), float(a2), 0.0f);
}

// Cell extents (the device twin of fmm::cell_extents, tree.cpp): a warp per item, an item being
// up to kExtentChunk consecutive particles of one cell; the warp's min/max go into the cell by
// atomics on order-preserving integer images of the doubles (min and max are exact, so the
// result does not depend on the order).  Per cell 8 values: min x, y, z, then -max x, y, z (as
// minima), then max r^2 and max sigma.  r^2 is summed as on the CPU, without fused multiply-adds.
constexpr int kExtentChunk = 1024;

__device__ inline unsigned long long ordered(double v) {
  const unsigned long long u = static_cast<unsigned long long>(__double_as_longlong(v));
  return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
}
__host__ inline double from_ordered(unsigned long long k) {
  const unsigned long long u = (k >> 63) ? (k & 0x7fffffffffffffffull) : ~k;
  double v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
__host__ inline unsigned long long ordered_host(double v) {
  unsigned long long u;
  std::memcpy(&u, &v, sizeof u);
  return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
}

__global__ void extents_kernel(int nitems, const int4* __restrict__ items, const double4_32a* __restrict__ centre,
                               const double4_32a* __restrict__ xs4, unsigned long long* __restrict__ ext) {
  const int item = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (item >= nitems) return;
  const int4 it = items[item];  // (cell, begin, end, -)
  const double4_32a c = centre[it.x];
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300}, r2 = 0, smax = 0;
  for (int i = it.y + lane; i < it.z; i += 32) {
    const double4_32a p = xs4[i];
    const double q[3] = {p.x, p.y, p.z}, cc[3] = {c.x, c.y, c.z};
    double d2 = 0;
    for (int d = 0; d < 3; ++d) {
      lo[d] = fmin(lo[d], q[d]);
      hi[d] = fmax(hi[d], q[d]);
      const double t = __dsub_rn(q[d], cc[d]);
      d2 = __dadd_rn(d2, __dmul_rn(t, t));
    }
    r2 = fmax(r2, d2);
    smax = fmax(smax, p.w);
  }
  for (int off = 16; off > 0; off >>= 1) {
    for (int d = 0; d < 3; ++d) {
      lo[d] = fmin(lo[d], __shfl_down_sync(0xffffffffu, lo[d], off));
      hi[d] = fmax(hi[d], __shfl_down_sync(0xffffffffu, hi[d], off));
    }
    r2 = fmax(r2, __shfl_down_sync(0xffffffffu, r2, off));
    smax = fmax(smax, __shfl_down_sync(0xffffffffu, smax, off));
  }
  if (lane == 0) {
    unsigned long long* e = ext + 8 * static_cast<long long>(it.x);
    for (int d = 0; d < 3; ++d) {
      atomicMin(e + d, ordered(lo[d]));
      atomicMin(e + 3 + d, ordered(-hi[d]));
    }
    atomicMax(e + 6, ordered(r2));
    atomicMax(e + 7, ordered(smax));
  }
}

}  // namespace

struct SortedSourcesGpu::Impl {
  int n = 0;
  Vec3 center{};
  double half = 0;
  DevBuf xs4, a4d, a4f, keys, perm;
};

SortedSourcesGpu::SortedSourcesGpu(const std::vector<Vec3>& x, const std::vector<double>& sigma,
                                   const std::vector<Vec3>& alpha, const Vec3& center, double half, bool wrap)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (sigma.size() != x.size() || alpha.size() != x.size())
    throw std::invalid_argument("SortedSourcesGpu: x, sigma and alpha differ in length");
  if (x.size() >= (std::size_t(1) << 31)) throw std::invalid_argument("SortedSourcesGpu: more than 2^31 sources");
  m.n = static_cast<int>(x.size());
  m.center = center;
  m.half = half;
  const int n = m.n;
  StepTimer st("gpu sort");
  if (n == 0) return;
  static_assert(sizeof(Vec3) == 3 * sizeof(double), "Vec3 layout");
  DevBuf dx, ds, da, k_in;
  dx.upload(x);
  ds.upload(sigma);
  da.upload(alpha);
  st.mark("upload");
  k_in.resize(n * sizeof(std::uint64_t));
  m.keys.resize(n * sizeof(std::uint64_t));
  m.perm.resize(n * sizeof(int));
  const double scale = double(1 << morton::kBits) / (2 * half);
  const int blocks = (n + 255) / 256;
  keys_kernel<<<blocks, 256>>>(n, dx.as<double>(), center[0] - half, center[1] - half, center[2] - half, scale, wrap,
                               k_in.as<std::uint64_t>());
  VH_FMM_CUDA(cudaGetLastError());
  // Stable sort over all 3 kBits key bits: the CPU radix sort's permutation.
  sort_keys_on_device(k_in.as<std::uint64_t>(), m.keys.as<std::uint64_t>(), m.perm.as<int>(), n, 0,
                      3 * morton::kBits);
  m.xs4.resize(n * sizeof(double4_32a));
  m.a4d.resize(n * sizeof(double4_32a));
  m.a4f.resize(n * sizeof(float4));
  gather_kernel<<<blocks, 256>>>(n, m.perm.as<int>(), dx.as<double>(), ds.as<double>(), da.as<double>(), wrap,
                                 m.xs4.as<double4_32a>(), m.a4d.as<double4_32a>(), m.a4f.as<float4>());
  VH_FMM_CUDA(cudaGetLastError());
  VH_FMM_CUDA(cudaDeviceSynchronize());
  st.mark("keys+sort+gather");
}

SortedSourcesGpu::~SortedSourcesGpu() = default;

Tree SortedSourcesGpu::tree(int ncrit) const {
  const Impl& m = *impl_;
  StepTimer st("gpu tree");
  Tree t;
  const int n = m.n;
  if (n == 0) {
    t = tree_from_sorted({}, {}, {}, {}, m.center, m.half, ncrit);
    return t;
  }
  // The host splits the cells by the keys (read in place from the pinned staging memory) ...
  const std::uint64_t* keys = static_cast<const std::uint64_t*>(pinned_staging(n * sizeof(std::uint64_t)));
  VH_FMM_CUDA(cudaMemcpy(const_cast<std::uint64_t*>(keys), m.keys.p, n * sizeof(std::uint64_t),
                         cudaMemcpyDeviceToHost));
  st.mark("keys down");
  t.cells = split_cells(keys, n, m.center, m.half, ncrit);
  st.mark("split");
  // ... and the device measures them, a warp per up to kExtentChunk particles of a cell.
  const int ncell = static_cast<int>(t.cells.size());
  std::vector<int4> items;
  std::vector<double4_32a> centre(ncell);
  std::vector<unsigned long long> ext(8 * static_cast<std::size_t>(ncell));
  for (int c = 0; c < ncell; ++c) {
    const Cell& cl = t.cells[c];
    centre[c] = make_double4_32a(cl.center[0], cl.center[1], cl.center[2], 0.0);
    for (int b = cl.begin; b < cl.end; b += kExtentChunk) items.push_back(make_int4(c, b, std::min(cl.end, b + kExtentChunk), 0));
    for (int d = 0; d < 6; ++d) ext[8 * c + d] = ordered_host(1e300);  // minima of x and of -x
    ext[8 * c + 6] = ext[8 * c + 7] = ordered_host(0.0);
  }
  DevBuf d_items, d_centre, d_ext;
  d_items.upload(items);
  d_centre.upload(centre);
  d_ext.upload(ext);
  const int nitems = static_cast<int>(items.size());
  if (nitems > 0) {
    extents_kernel<<<(nitems + 7) / 8, 256>>>(nitems, d_items.as<int4>(), d_centre.as<double4_32a>(),
                                               m.xs4.as<double4_32a>(), d_ext.as<unsigned long long>());
    VH_FMM_CUDA(cudaGetLastError());
  }
  VH_FMM_CUDA(cudaMemcpy(ext.data(), d_ext.p, ext.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  for (int c = 0; c < ncell; ++c) {
    Cell& cl = t.cells[c];
    const unsigned long long* e = &ext[8 * static_cast<std::size_t>(c)];
    for (int d = 0; d < 3; ++d) {
      cl.bmin[d] = from_ordered(e[d]);
      cl.bmax[d] = -from_ordered(e[3 + d]);
    }
    cl.radius = std::sqrt(from_ordered(e[6]));
    cl.sigma_max = from_ordered(e[7]);
  }
  index_levels(t);
  st.mark("extents");
  return t;
}

void SortedSourcesGpu::download_sorted(std::vector<int>& perm, std::vector<Vec3>& x, std::vector<double>& sigma) const {
  const Impl& m = *impl_;
  perm.resize(m.n);
  if (m.n) VH_FMM_CUDA(cudaMemcpy(perm.data(), m.perm.p, m.n * sizeof(int), cudaMemcpyDeviceToHost));
  std::vector<double4_32a> h(m.n);
  if (m.n) VH_FMM_CUDA(cudaMemcpy(h.data(), m.xs4.p, m.n * sizeof(double4_32a), cudaMemcpyDeviceToHost));
  x.resize(m.n);
  sigma.resize(m.n);
  for (int i = 0; i < m.n; ++i) {
    x[i] = {h[i].x, h[i].y, h[i].z};
    sigma[i] = h[i].w;
  }
}

int SortedSourcesGpu::size() const { return impl_->n; }
const void* SortedSourcesGpu::positions_sigma() const { return impl_->xs4.p; }
const void* SortedSourcesGpu::alpha_double() const { return impl_->a4d.p; }
const void* SortedSourcesGpu::alpha_float() const { return impl_->a4f.p; }
const int* SortedSourcesGpu::permutation() const { return impl_->perm.as<int>(); }

}  // namespace vh::fmm
