// GPU blob sums: see blobs_gpu.h; the loops mirror gather() and stencils() in blobs.cpp.
#include "vortex/blobs_gpu.h"

#include <cuda_runtime.h>

#include "fmm/cuda_util.h"

namespace vh::vortex::detail {
namespace {

template <class T>
struct Dev {
  T* p = nullptr;
  explicit Dev(std::size_t n) { VH_FMM_CUDA(cudaMalloc(&p, (n ? n : 1) * sizeof(T))); }
  Dev(const T* h, std::size_t n) : Dev(n) {
    if (n) VH_FMM_CUDA(cudaMemcpy(p, h, n * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
};

// stencils(): per particle and direction, w = (2 pi s^2)^{-1/2} exp(-d^2 / 2 s^2) and
// dw = -d / s^2 w on the lattice points i0 ... i0 + m - 1, zero outside |d| <= cutoff s.
__global__ void stencil_kernel(long long np, const double* __restrict__ x, const double* __restrict__ sigma, double h,
                               double cutoff, int m, int* __restrict__ i0, double* __restrict__ w,
                               double* __restrict__ dw) {
  const long long q = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (q >= np) return;
  const double sg = sigma[q], R = cutoff * sg, norm = 1.0 / sqrt(2.0 * 3.14159265358979323846 * sg * sg);
  for (int d = 0; d < 3; ++d) {
    const double xd = x[3 * q + d];
    const int i = static_cast<int>(ceil((xd - R) / h));
    i0[3 * q + d] = i;
    double* wq = w + (3 * q + d) * m;
    double* dwq = dw + (3 * q + d) * m;
    for (int a = 0; a < m; ++a) {
      const double dist = (i + a) * h - xd;
      double v = 0, dv = 0;
      if (fabs(dist) <= R) {
        v = norm * exp(-dist * dist / (2.0 * sg * sg));
        dv = -dist / (sg * sg) * v;
      }
      wq[a] = v;
      dwq[a] = dv;
    }
  }
}

// gather(): one thread per lattice point (i, j, k).
template <bool Divergence>
__global__ void gather_kernel(int n, int m, const int* __restrict__ offs, int noffs,
                              const unsigned long long* __restrict__ start, const unsigned long long* __restrict__ order,
                              const int* __restrict__ i0, const double* __restrict__ w, const double* __restrict__ dw,
                              const double* __restrict__ alpha, double* __restrict__ o0, double* __restrict__ o1,
                              double* __restrict__ o2) {
  const long long point = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const long long npts = static_cast<long long>(n) * n * n;
  if (point >= npts) return;
  const int i = static_cast<int>(point % n), j = static_cast<int>((point / n) % n), k = static_cast<int>(point / (static_cast<long long>(n) * n));
  double s0 = 0, s1 = 0, s2 = 0;
  for (int zi = 0; zi < noffs; ++zi)
    for (int yi = 0; yi < noffs; ++yi)
      for (int xi = 0; xi < noffs; ++xi) {
        const long long c = (static_cast<long long>((k + offs[zi] + n) % n) * n + (j + offs[yi] + n) % n) * n +
                            (i + offs[xi] + n) % n;
        for (unsigned long long t = start[c]; t < start[c + 1]; ++t) {
          const long long q = static_cast<long long>(order[t]);
          const int ax = (((i - i0[3 * q]) % n) + n) % n;
          const int ay = (((j - i0[3 * q + 1]) % n) + n) % n;
          const int az = (((k - i0[3 * q + 2]) % n) + n) % n;
          const double* wx = w + (3 * q) * m;
          const double* wy = w + (3 * q + 1) * m;
          const double* wz = w + (3 * q + 2) * m;
          for (int c2 = az; c2 < m; c2 += n)
            for (int b = ay; b < m; b += n)
              for (int a = ax; a < m; a += n) {
                if (Divergence) {
                  const double* dx = dw + (3 * q) * m;
                  const double* dy = dw + (3 * q + 1) * m;
                  const double* dz = dw + (3 * q + 2) * m;
                  s0 += alpha[3 * q] * dx[a] * wy[b] * wz[c2] + alpha[3 * q + 1] * wx[a] * dy[b] * wz[c2] +
                        alpha[3 * q + 2] * wx[a] * wy[b] * dz[c2];
                } else {
                  const double wt = wx[a] * wy[b] * wz[c2];
                  if (wt == 0.0) continue;
                  s0 += wt * alpha[3 * q];
                  s1 += wt * alpha[3 * q + 1];
                  s2 += wt * alpha[3 * q + 2];
                }
              }
        }
      }
  o0[point] = s0;
  if (!Divergence) {
    o1[point] = s1;
    o2[point] = s2;
  }
}

}  // namespace

void gather_gpu(const Particles& p, const Grid& g, double cutoff, int m, const std::vector<std::size_t>& start,
                const std::vector<std::size_t>& order, const std::vector<int>& offs, bool divergence,
                std::vector<double>* out) {
  const long long np = static_cast<long long>(p.size());
  const std::size_t npts = g.points();
  static_assert(sizeof(std::size_t) == sizeof(unsigned long long), "size_t is 64-bit");
  Dev<double> x(&p.x[0][0], 3 * np), alpha(&p.alpha[0][0], 3 * np), sigma(p.sigma.data(), np);
  Dev<unsigned long long> st(reinterpret_cast<const unsigned long long*>(start.data()), start.size());
  Dev<unsigned long long> ord(reinterpret_cast<const unsigned long long*>(order.data()), order.size());
  Dev<int> of(offs.data(), offs.size());
  Dev<int> i0(3 * np);
  Dev<double> w(3 * np * m), dw(3 * np * m);
  const int threads = 128;
  if (np > 0) {
    stencil_kernel<<<static_cast<unsigned>((np + threads - 1) / threads), threads>>>(np, x.p, sigma.p, g.h(), cutoff, m,
                                                                                    i0.p, w.p, dw.p);
    VH_FMM_CUDA(cudaGetLastError());
  }
  Dev<double> o0(npts), o1(divergence ? 1 : npts), o2(divergence ? 1 : npts);
  const unsigned blocks = static_cast<unsigned>((npts + threads - 1) / threads);
  if (divergence)
    gather_kernel<true><<<blocks, threads>>>(g.n, m, of.p, static_cast<int>(offs.size()), st.p, ord.p, i0.p, w.p, dw.p,
                                              alpha.p, o0.p, o1.p, o2.p);
  else
    gather_kernel<false><<<blocks, threads>>>(g.n, m, of.p, static_cast<int>(offs.size()), st.p, ord.p, i0.p, w.p,
                                               dw.p, alpha.p, o0.p, o1.p, o2.p);
  VH_FMM_CUDA(cudaGetLastError());
  double* o[3] = {o0.p, o1.p, o2.p};
  for (int c = 0; c < (divergence ? 1 : 3); ++c) {
    out[c].resize(npts);
    VH_FMM_CUDA(cudaMemcpy(out[c].data(), o[c], npts * sizeof(double), cudaMemcpyDeviceToHost));
  }
}

}  // namespace vh::vortex::detail
