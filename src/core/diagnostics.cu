// GPU counterpart of energy_spectrum() and gradient_norm2() (diagnostics.cpp): one pass over
// the device coefficients, per-block shell bins in shared memory, then atomics.
#include <cuda_runtime.h>

#include "core/diagnostics.h"
#include "core/diagnostics_kernel.h"
#include "core/error.h"

namespace vh {
namespace {

__global__ void spectrum_kernel(int n, int nshell, const double2* u0, const double2* u1,
                                const double2* u2, double* E, double* grad2) {
  extern __shared__ double bins[];  // nshell shell sums, then one Σ|k|²|û|²
  for (int s = threadIdx.x; s <= nshell; s += blockDim.x) bins[s] = 0.0;
  __syncthreads();
  const int nxh = n / 2 + 1;
  const std::size_t total = std::size_t(n) * n * nxh;
  double g2 = 0.0;
  for (std::size_t m = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; m < total;
       m += std::size_t(blockDim.x) * gridDim.x) {
    const int ix = int(m % nxh), iy = int((m / nxh) % n), iz = int(m / (std::size_t(nxh) * n));
    int k[3];
    diag::wavevector(n, ix, iy, iz, k);
    const double k2 = double(k[0]) * k[0] + double(k[1]) * k[1] + double(k[2]) * k[2];
    const double2 a = u0[m], b = u1[m], c = u2[m];
    const double w = diag::weight(n, ix) *
                     (a.x * a.x + a.y * a.y + b.x * b.x + b.y * b.y + c.x * c.x + c.y * c.y);
    atomicAdd(&bins[diag::shell(k2)], 0.5 * w);
    g2 += k2 * w;
  }
  atomicAdd(&bins[nshell], g2);
  __syncthreads();
  for (int s = threadIdx.x; s < nshell; s += blockDim.x) atomicAdd(&E[s], bins[s]);
  if (threadIdx.x == 0) atomicAdd(grad2, bins[nshell]);
}

}  // namespace

double energy_spectrum_device(const void* const d_u[3], const Grid& g, std::vector<double>& E) {
  const int nshell = g.max_shell() + 1;
  double* d_out = nullptr;
  VH_CHECK_CUDA(cudaMalloc(&d_out, (nshell + 1) * sizeof(double)));
  VH_CHECK_CUDA(cudaMemset(d_out, 0, (nshell + 1) * sizeof(double)));
  const int threads = 256, blocks = 264;
  spectrum_kernel<<<blocks, threads, (nshell + 1) * sizeof(double)>>>(
      g.n, nshell, static_cast<const double2*>(d_u[0]), static_cast<const double2*>(d_u[1]),
      static_cast<const double2*>(d_u[2]), d_out, d_out + nshell);
  VH_CHECK_CUDA(cudaGetLastError());
  std::vector<double> out(nshell + 1);
  VH_CHECK_CUDA(cudaMemcpy(out.data(), d_out, out.size() * sizeof(double), cudaMemcpyDeviceToHost));
  VH_CHECK_CUDA(cudaFree(d_out));
  E.assign(out.begin(), out.begin() + nshell);
  return out[nshell];
}

}  // namespace vh
