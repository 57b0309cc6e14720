// GPU construction of the initial field: the same per-mode function as the CPU
// (initial_field_kernel.h), compiled with -fmad=false so the coefficients are bit-identical.
#include <cuda_runtime.h>

#include "base/cuda_check.h"
#include "base/device_buffer.h"
#include "core/error.h"
#include "core/initial_field.h"
#include "core/initial_field_kernel.h"

namespace vh {
namespace {

/// Every mode of the half layout from the generator f.
__global__ void modes_kernel(init::ModeField f, int n, double2* u0, double2* u1, double2* u2) {
  const long long total = static_cast<long long>(n) * n * (n / 2 + 1);
  for (long long m = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; m < total;
       m += static_cast<long long>(blockDim.x) * gridDim.x) {
    int ix, iy, iz;
    modes::mode_of(m, n, ix, iy, iz);
    double re[3], im[3];
    f(n, ix, iy, iz, re, im);
    u0[m] = make_double2(re[0], im[0]);
    u1[m] = make_double2(re[1], im[1]);
    u2[m] = make_double2(re[2], im[2]);
  }
}

}  // namespace

InitialField make_initial_field_device(const InitialFieldSpec& spec, const Grid& g, void* d_u[3]) {
  const InitialScalars sc = initial_scalars(spec, g);
  const DeviceArray<double> A(sc.A);  // empty for the deterministic flows
  const int threads = 256, blocks = 1024;
  modes_kernel<<<blocks, threads>>>(init::mode_field(sc, A.data()), g.n, static_cast<double2*>(d_u[0]),
                                    static_cast<double2*>(d_u[1]), static_cast<double2*>(d_u[2]));
  VH_CHECK_LAUNCH();
  VH_CHECK_CUDA(cudaDeviceSynchronize());
  InitialField f;
  f.u.grid = g;
  f.K0 = sc.K0;
  f.u_prime = sc.u_prime;
  f.nu = sc.nu;
  return f;
}

}  // namespace vh
