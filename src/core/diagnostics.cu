// GPU counterpart of energy_spectrum() and gradient_norm2() (diagnostics.cpp): one pass over
// the device coefficients, per-block shell bins in shared memory, then atomics.
#include <cuda_runtime.h>
#include <cufft.h>

#include <cmath>

#include "base/cuda_check.h"
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

/// Σ w |k·û|² and Σ w Re(û*·(i k × û)) (derivative wavenumbers: Nyquist → 0), by atomics.
__global__ void divergence_helicity_kernel(int n, const double2* u0, const double2* u1, const double2* u2,
                                           double* out) {
  const int nxh = n / 2 + 1;
  const std::size_t total = std::size_t(n) * n * nxh;
  double div2 = 0.0, hel = 0.0;
  for (std::size_t m = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; m < total;
       m += std::size_t(blockDim.x) * gridDim.x) {
    const int ix = int(m % nxh), iy = int((m / nxh) % n), iz = int(m / (std::size_t(nxh) * n));
    int k[3];
    diag::wavevector(n, ix, iy, iz, k);
    double kd[3];
    for (int d = 0; d < 3; ++d) kd[d] = k[d] == -n / 2 ? 0.0 : double(k[d]);
    const double2 u[3] = {u0[m], u1[m], u2[m]};
    // k·û (the divergence is i k·û; its modulus is what counts)
    const double dr = kd[0] * u[0].x + kd[1] * u[1].x + kd[2] * u[2].x;
    const double di = kd[0] * u[0].y + kd[1] * u[1].y + kd[2] * u[2].y;
    // ω̂ = i k × û
    double h = 0.0;
    for (int c = 0; c < 3; ++c) {
      const int a = (c + 1) % 3, b = (c + 2) % 3;
      const double cr = kd[a] * u[b].x - kd[b] * u[a].x, ci = kd[a] * u[b].y - kd[b] * u[a].y;
      // ω̂_c = i (cr + i ci) = −ci + i cr; Re(conj(û_c) ω̂_c) = u.x (−ci) + u.y cr
      h += u[c].x * (-ci) + u[c].y * cr;
    }
    const double w = diag::weight(n, ix);
    div2 += w * (dr * dr + di * di);
    hel += w * h;
  }
  atomicAdd(&out[0], div2);
  atomicAdd(&out[1], hel);
}

/// out = i k_c u_c (Nyquist → 0), the coefficients of ∂u_c/∂x_c.
__global__ void longitudinal_derivative_kernel(int n, int c, const double2* uc, double2* out) {
  const int nxh = n / 2 + 1;
  const std::size_t total = std::size_t(n) * n * nxh;
  for (std::size_t m = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; m < total;
       m += std::size_t(blockDim.x) * gridDim.x) {
    const int ix = int(m % nxh), iy = int((m / nxh) % n), iz = int(m / (std::size_t(nxh) * n));
    int k[3];
    diag::wavevector(n, ix, iy, iz, k);
    const double kc = k[c] == -n / 2 ? 0.0 : double(k[c]);
    out[m] = make_double2(-kc * uc[m].y, kc * uc[m].x);
  }
}

/// Σ v² and Σ v³ over a real field.
__global__ void moments_kernel(std::size_t np, const double* v, double* out) {
  double m2 = 0.0, m3 = 0.0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < np;
       i += std::size_t(blockDim.x) * gridDim.x) {
    const double x = v[i];
    m2 += x * x;
    m3 += x * x * x;
  }
  atomicAdd(&out[0], m2);
  atomicAdd(&out[1], m3);
}

}  // namespace

Statistics statistics_device(const void* const d_u[3], const Grid& g, double nu, std::vector<double>& E) {
  const double D = energy_spectrum_device(d_u, g, E);
  Statistics s = spectral_statistics(E, D, nu);
  const auto* u0 = static_cast<const double2*>(d_u[0]);
  const auto* u1 = static_cast<const double2*>(d_u[1]);
  const auto* u2 = static_cast<const double2*>(d_u[2]);
  const int threads = 256, blocks = 264;
  double* d_sums = nullptr;
  double2* d_hat = nullptr;
  double* d_real = nullptr;
  VH_CHECK_CUDA(cudaMalloc(&d_sums, 8 * sizeof(double)));
  VH_CHECK_CUDA(cudaMemset(d_sums, 0, 8 * sizeof(double)));
  VH_CHECK_CUDA(cudaMalloc(&d_hat, g.modes() * sizeof(double2)));
  VH_CHECK_CUDA(cudaMalloc(&d_real, g.points() * sizeof(double)));
  divergence_helicity_kernel<<<blocks, threads>>>(g.n, u0, u1, u2, d_sums);
  VH_CHECK_CUDA(cudaGetLastError());
  // S₃: the three longitudinal derivatives on the grid (cuFFT C2R, unnormalised as in fft.h).
  cufftHandle plan;
  VH_CHECK_CUFFT(cufftPlan3d(&plan, g.n, g.n, g.n, CUFFT_Z2D));
  const double2* comps[3] = {u0, u1, u2};
  for (int c = 0; c < 3; ++c) {
    longitudinal_derivative_kernel<<<blocks, threads>>>(g.n, c, comps[c], d_hat);
    VH_CHECK_CUDA(cudaGetLastError());
    VH_CHECK_CUFFT(cufftExecZ2D(plan, reinterpret_cast<cufftDoubleComplex*>(d_hat), d_real));
    moments_kernel<<<blocks, threads>>>(g.points(), d_real, d_sums + 2 + 2 * c);
    VH_CHECK_CUDA(cudaGetLastError());
  }
  double sums[8];
  VH_CHECK_CUDA(cudaMemcpy(sums, d_sums, sizeof sums, cudaMemcpyDeviceToHost));
  cufftDestroy(plan);
  cudaFree(d_sums);
  cudaFree(d_hat);
  cudaFree(d_real);
  s.divergence_rel = D > 0 ? std::sqrt(sums[0] / D) : 0.0;
  s.helicity = sums[1];
  double s3 = 0.0;
  for (int c = 0; c < 3; ++c) {
    const double m2 = sums[2 + 2 * c] / double(g.points()), m3 = sums[3 + 2 * c] / double(g.points());
    s3 += m2 > 0 ? m3 / std::pow(m2, 1.5) : 0.0;
  }
  s.S3 = s3 / 3.0;
  return s;
}

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
