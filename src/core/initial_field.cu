// GPU construction of the initial field: the same per-mode function as the CPU
// (initial_field_kernel.h), compiled with -fmad=false so the coefficients are bit-identical.
#include <cuda_runtime.h>

#include <cmath>

#include "base/cuda_check.h"
#include "core/error.h"
#include "core/initial_field.h"
#include "core/initial_field_kernel.h"

namespace vh {
namespace {

__global__ void random_field_kernel(std::uint64_t seed, int n, const double* A, double2* u0,
                                    double2* u1, double2* u2) {
  const int nxh = n / 2 + 1;
  const std::size_t total = std::size_t(n) * n * nxh;
  for (std::size_t m = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; m < total;
       m += std::size_t(blockDim.x) * gridDim.x) {
    const int ix = int(m % nxh), iy = int((m / nxh) % n), iz = int(m / (std::size_t(nxh) * n));
    double re[3], im[3];
    init::random_mode(seed, n, ix, iy, iz, A, re, im);
    u0[m] = make_double2(re[0], im[0]);
    u1[m] = make_double2(re[1], im[1]);
    u2[m] = make_double2(re[2], im[2]);
  }
}

__global__ void deterministic_kernel(bool tg, double V0, int n, double2* u0, double2* u1, double2* u2) {
  const int nxh = n / 2 + 1;
  const std::size_t total = std::size_t(n) * n * nxh;
  for (std::size_t m = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; m < total;
       m += std::size_t(blockDim.x) * gridDim.x) {
    const int ix = int(m % nxh), iy = int((m / nxh) % n), iz = int(m / (std::size_t(nxh) * n));
    double re[3], im[3];
    if (tg)
      init::taylor_green_mode(V0, n, ix, iy, iz, re, im);
    else
      init::abc_mode(V0, n, ix, iy, iz, re, im);
    u0[m] = make_double2(re[0], im[0]);
    u1[m] = make_double2(re[1], im[1]);
    u2[m] = make_double2(re[2], im[2]);
  }
}

}  // namespace

InitialField make_initial_field_device(const InitialFieldSpec& spec, const Grid& g, void* d_u[3]) {
  validate(spec);
  InitialField f;
  f.u.grid = g;
  auto* u0 = static_cast<double2*>(d_u[0]);
  auto* u1 = static_cast<double2*>(d_u[1]);
  auto* u2 = static_cast<double2*>(d_u[2]);
  const int threads = 256, blocks = 1024;
  if (spec.shape == SpectrumShape::taylor_green || spec.shape == SpectrumShape::abc) {
    const bool tg = spec.shape == SpectrumShape::taylor_green;
    const double K_unit = tg ? 0.125 : 1.5, k2 = tg ? 3.0 : 1.0;
    f.K0 = !std::isnan(spec.K0) ? spec.K0
           : !std::isnan(spec.u_prime) ? 1.5 * spec.u_prime * spec.u_prime : K_unit;
    deterministic_kernel<<<blocks, threads>>>(tg, std::sqrt(f.K0 / K_unit), g.n, u0, u1, u2);
    VH_CHECK_CUDA(cudaGetLastError());
    VH_CHECK_CUDA(cudaDeviceSynchronize());
    f.u_prime = std::sqrt(2.0 * f.K0 / 3.0);
    f.nu = viscosity(spec, f.u_prime, 2.0 * k2 * f.K0);
    return f;
  }
  const ModeAmplitudes a = mode_amplitudes(spec, g);
  double* dA = nullptr;
  VH_CHECK_CUDA(cudaMalloc(&dA, a.A.size() * sizeof(double)));
  VH_CHECK_CUDA(cudaMemcpy(dA, a.A.data(), a.A.size() * sizeof(double), cudaMemcpyHostToDevice));
  random_field_kernel<<<blocks, threads>>>(spec.seed, g.n, dA, u0, u1, u2);
  VH_CHECK_CUDA(cudaGetLastError());
  VH_CHECK_CUDA(cudaDeviceSynchronize());
  VH_CHECK_CUDA(cudaFree(dA));
  f.K0 = a.K0;
  f.u_prime = std::sqrt(2.0 * f.K0 / 3.0);
  f.nu = viscosity(spec, f.u_prime, a.dissipation_over_nu);
  return f;
}

}  // namespace vh
