#include "base/cuda_check.h"
#include "fmm/particles_gpu.h"

#include <cstring>
#include <limits>
#include <stdexcept>

#include "base/device_buffer.h"
#include "fmm/morton.h"
#include "fmm/profile.h"
#include "fmm/sort_gpu.h"
#include "fmm/tree_gpu.h"

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

// Sorted order: xs4 = (x, y, z, sigma), a4d = (alpha, 0), a4f = float (alpha, 0); sigma null:
// sigma 0; alpha null: no strengths (targets).
__global__ void gather_kernel(int n, const int* __restrict__ perm, const double* __restrict__ x,
                              const double* __restrict__ sigma, const double* __restrict__ alpha, bool wrap,
                              double4_32a* __restrict__ xs4, double4_32a* __restrict__ a4d, float4* __restrict__ a4f) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const long long j = perm[i];
  double p[3];
  for (int d = 0; d < 3; ++d) p[d] = wrap ? morton::wrap(x[3 * j + d]) : x[3 * j + d];
  xs4[i] = make_double4_32a(p[0], p[1], p[2], sigma ? sigma[j] : 0.0);
  if (alpha) {
    const double a0 = alpha[3 * j], a1 = alpha[3 * j + 1], a2 = alpha[3 * j + 2];
    a4d[i] = make_double4_32a(a0, a1, a2, 0.0);
    a4f[i] = make_float4(float(a0), float(a1), float(a2), 0.0f);
  }
}

// The strengths alone in sorted order (the positions kept).
__global__ void gather_alpha_kernel(int n, const int* __restrict__ perm, const double* __restrict__ alpha,
                                    double4_32a* __restrict__ a4d, float4* __restrict__ a4f) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const long long j = perm[i];
  const double a0 = alpha[3 * j], a1 = alpha[3 * j + 1], a2 = alpha[3 * j + 2];
  a4d[i] = make_double4_32a(a0, a1, a2, 0.0);
  a4f[i] = make_float4(float(a0), float(a1), float(a2), 0.0f);
}

// The smallest input index whose wrapped position or core radius differs (bit for bit) from
// the sorted copy; atomicMin, so the result does not depend on the order.
__global__ void changed_kernel(int n, const int* __restrict__ perm, const double* __restrict__ x,
                               const double* __restrict__ sigma, bool wrap, const double4_32a* __restrict__ xs4,
                               int* __restrict__ first) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int j = perm[i];
  const double4_32a q = xs4[i];
  const double s[4] = {q.x, q.y, q.z, q.w};
  bool same = true;
  for (int d = 0; d < 3; ++d) {
    const double v = wrap ? morton::wrap(x[3 * static_cast<long long>(j) + d]) : x[3 * static_cast<long long>(j) + d];
    same = same && __double_as_longlong(v) == __double_as_longlong(s[d]);
  }
  if (sigma) same = same && __double_as_longlong(sigma[j]) == __double_as_longlong(s[3]);
  if (!same) atomicMin(first, j);
}

}  // namespace

struct SortedSourcesGpu::Impl {
  int n = 0;
  Vec3 center{};
  double half = 0;
  bool wrap = false;
  DeviceArray<double4_32a> xs4, a4d;  // positions and sigma; strengths in double
  DeviceArray<float4> a4f;            // strengths in float
  DeviceArray<std::uint64_t> keys;
  DeviceArray<int> perm, flag;
};

SortedSourcesGpu::SortedSourcesGpu() : impl_(std::make_unique<Impl>()) {}

SortedSourcesGpu::SortedSourcesGpu(const std::vector<Vec3>& x, const std::vector<double>& sigma,
                                   const std::vector<Vec3>& alpha, const Vec3& center, double half, bool wrap)
    : impl_(std::make_unique<Impl>()) {
  if (sigma.size() != x.size() || alpha.size() != x.size())
    throw std::invalid_argument("SortedSourcesGpu: x, sigma and alpha differ in length");
  if (x.size() >= (std::size_t(1) << 31)) throw std::invalid_argument("SortedSourcesGpu: more than 2^31 sources");
  StepTimer st("gpu sort");
  static_assert(sizeof(Vec3) == 3 * sizeof(double), "Vec3 layout");
  DeviceArray<Vec3> dx, da;
  DeviceArray<double> ds;
  if (!x.empty()) {
    dx.upload(x);
    ds.upload(sigma);
    da.upload(alpha);
  }
  st.mark("upload");
  sort(dx.as<double>(), ds.data(), da.as<double>(), static_cast<int>(x.size()), center, half, wrap);
  st.mark("keys+sort+gather");
}

void SortedSourcesGpu::sort(const double* d_x, const double* d_sigma, const double* d_alpha, int n,
                            const Vec3& center, double half, bool wrap) {
  Impl& m = *impl_;
  if (n < 0) throw std::invalid_argument("SortedSourcesGpu: negative size");
  m.n = n;
  m.center = center;
  m.half = half;
  m.wrap = wrap;
  if (n == 0) return;
  DeviceArray<std::uint64_t> k_in(n);
  m.keys.reserve(n);
  m.perm.reserve(n);
  const double scale = double(1 << morton::kBits) / (2 * half);
  const int blocks = (n + 255) / 256;
  keys_kernel<<<blocks, 256>>>(n, d_x, center[0] - half, center[1] - half, center[2] - half, scale, wrap,
                               k_in.data());
  VH_CHECK_LAUNCH();
  // Stable sort over all 3 kBits key bits: the CPU radix sort's permutation.
  sort_keys_on_device(k_in.data(), m.keys.data(), m.perm.data(), n, 0, 3 * morton::kBits);
  m.xs4.reserve(n);
  if (d_alpha) {
    m.a4d.reserve(n);
    m.a4f.reserve(n);
  }
  gather_kernel<<<blocks, 256>>>(n, m.perm.data(), d_x, d_sigma, d_alpha, wrap, m.xs4.data(), m.a4d.data(),
                                 m.a4f.data());
  VH_CHECK_LAUNCH();
  VH_CHECK_CUDA(cudaDeviceSynchronize());
}

void SortedSourcesGpu::set_strengths(const double* d_alpha) {
  Impl& m = *impl_;
  if (m.n == 0) return;
  m.a4d.reserve(m.n);
  m.a4f.reserve(m.n);
  gather_alpha_kernel<<<(m.n + 255) / 256, 256>>>(m.n, m.perm.data(), d_alpha, m.a4d.data(), m.a4f.data());
  VH_CHECK_LAUNCH();
}

long long SortedSourcesGpu::first_change(const double* d_x, const double* d_sigma, bool wrap) const {
  const Impl& m = *impl_;
  if (m.n == 0) return -1;
  Impl& mm = const_cast<Impl&>(m);
  const int none = std::numeric_limits<int>::max();
  mm.flag.upload(&none, 1);
  changed_kernel<<<(m.n + 255) / 256, 256>>>(m.n, m.perm.data(), d_x, d_sigma, wrap, m.xs4.data(), mm.flag.data());
  VH_CHECK_LAUNCH();
  int first = none;
  mm.flag.download(&first, 1);
  return first == none ? -1 : first;
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
  m.keys.download(const_cast<std::uint64_t*>(keys), n);
  st.mark("keys down");
  t.cells = split_cells(keys, n, m.center, m.half, ncrit);
  st.mark("split");
  // ... and the device measures them (fmm/tree_gpu.h).
  measure_cells_gpu(t.cells, *this);
  index_levels(t);
  st.mark("extents");
  return t;
}

void SortedSourcesGpu::download_sorted(std::vector<int>& perm, std::vector<Vec3>& x, std::vector<double>& sigma) const {
  const Impl& m = *impl_;
  perm.resize(m.n);
  m.perm.download(perm.data(), m.n);
  std::vector<double4_32a> h(m.n);
  m.xs4.download(h.data(), m.n);
  x.resize(m.n);
  sigma.resize(m.n);
  for (int i = 0; i < m.n; ++i) {
    x[i] = {h[i].x, h[i].y, h[i].z};
    sigma[i] = h[i].w;
  }
}

int SortedSourcesGpu::size() const { return impl_->n; }
const Vec3& SortedSourcesGpu::center() const { return impl_->center; }
double SortedSourcesGpu::half() const { return impl_->half; }
const void* SortedSourcesGpu::keys() const { return impl_->keys.data(); }
const void* SortedSourcesGpu::positions_sigma() const { return impl_->xs4.data(); }
const void* SortedSourcesGpu::alpha_double() const { return impl_->a4d.data(); }
const void* SortedSourcesGpu::alpha_float() const { return impl_->a4f.data(); }
const int* SortedSourcesGpu::permutation() const { return impl_->perm.data(); }

}  // namespace vh::fmm
