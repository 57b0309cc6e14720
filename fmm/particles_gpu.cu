#include "fmm/particles_gpu.h"

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

// Sorted order: xs4 = (x, y, z, sigma), a4d = (alpha, 0), a4f = float (alpha, 0), and the
// host's copies x3 (x, y, z) and s (sigma).
__global__ void gather_kernel(int n, const int* __restrict__ perm, const double* __restrict__ x,
                              const double* __restrict__ sigma, const double* __restrict__ alpha, bool wrap,
                              double4_32a* __restrict__ xs4, double4_32a* __restrict__ a4d, float4* __restrict__ a4f,
                              double* __restrict__ x3, double* __restrict__ s) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const long long j = perm[i];
  double p[3];
  for (int d = 0; d < 3; ++d) p[d] = wrap ? morton::wrap(x[3 * j + d]) : x[3 * j + d];
  const double sg = sigma[j], a0 = alpha[3 * j], a1 = alpha[3 * j + 1], a2 = alpha[3 * j + 2];
  xs4[i] = make_double4_32a(p[0], p[1], p[2], sg);
  a4d[i] = make_double4_32a(a0, a1, a2, 0.0);
  a4f[i] = make_float4(float(a0), float(a1), float(a2), 0.0f);
  for (int d = 0; d < 3; ++d) x3[3 * static_cast<long long>(i) + d] = p[d];
  s[i] = sg;
}

// Through the pinned staging memory, then copied out by all host threads (a pageable download
// runs at a few GB/s).
template <class T> void download(std::vector<T>& v, const DevBuf& d, std::size_t n) {
  v.resize(n);
  if (!n) return;
  T* h = static_cast<T*>(pinned_staging(n * sizeof(T)));
  VH_FMM_CUDA(cudaMemcpy(h, d.p, n * sizeof(T), cudaMemcpyDeviceToHost));
  const std::ptrdiff_t nn = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < nn; ++i) v[i] = h[i];
}

}  // namespace

struct SortedSourcesGpu::Impl {
  int n = 0;
  Vec3 center{};
  double half = 0;
  DevBuf xs4, a4d, a4f;
  std::vector<int> perm;
  std::vector<std::uint64_t> skey;
  std::vector<Vec3> x;
  std::vector<double> sigma;
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
  DevBuf dx, ds, da, k_in, k_out, v_out, x3, s1;
  dx.upload(x);
  ds.upload(sigma);
  da.upload(alpha);
  st.mark("upload");
  k_in.resize(n * sizeof(std::uint64_t));
  k_out.resize(n * sizeof(std::uint64_t));
  v_out.resize(n * sizeof(int));
  const double scale = double(1 << morton::kBits) / (2 * half);
  const int blocks = (n + 255) / 256;
  keys_kernel<<<blocks, 256>>>(n, dx.as<double>(), center[0] - half, center[1] - half, center[2] - half, scale, wrap,
                               k_in.as<std::uint64_t>());
  VH_FMM_CUDA(cudaGetLastError());
  // Stable sort over all 3 kBits key bits: the CPU radix sort's permutation.
  sort_keys_on_device(k_in.as<std::uint64_t>(), k_out.as<std::uint64_t>(), v_out.as<int>(), n, 0, 3 * morton::kBits);
  m.xs4.resize(n * sizeof(double4_32a));
  m.a4d.resize(n * sizeof(double4_32a));
  m.a4f.resize(n * sizeof(float4));
  x3.resize(3 * n * sizeof(double));
  s1.resize(n * sizeof(double));
  gather_kernel<<<blocks, 256>>>(n, v_out.as<int>(), dx.as<double>(), ds.as<double>(), da.as<double>(), wrap,
                                 m.xs4.as<double4_32a>(), m.a4d.as<double4_32a>(), m.a4f.as<float4>(), x3.as<double>(),
                                 s1.as<double>());
  VH_FMM_CUDA(cudaGetLastError());
  st.mark("keys+sort+gather");
  download(m.perm, v_out, n);
  download(m.skey, k_out, n);
  download(m.x, x3, n);
  download(m.sigma, s1, n);
  st.mark("download");
}

SortedSourcesGpu::~SortedSourcesGpu() = default;

Tree SortedSourcesGpu::tree(int ncrit) {
  Impl& m = *impl_;
  return tree_from_sorted(std::move(m.perm), m.skey, std::move(m.x), std::move(m.sigma), m.center, m.half, ncrit);
}

int SortedSourcesGpu::size() const { return impl_->n; }
const void* SortedSourcesGpu::positions_sigma() const { return impl_->xs4.p; }
const void* SortedSourcesGpu::alpha_double() const { return impl_->a4d.p; }
const void* SortedSourcesGpu::alpha_float() const { return impl_->a4f.p; }

}  // namespace vh::fmm
