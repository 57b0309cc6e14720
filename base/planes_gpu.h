// The planes (base/planes.h) that device points occupy. CUDA sources only.
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "base/cuda_check.h"
#include "base/device_buffer.h"
#include "base/launch.h"
#include "base/planes.h"

namespace vh {
namespace planes_detail {

// occupied[plane_of(z)] = 1 for each of the n points x (Stride doubles a point, z the third).
template <int Stride>
__global__ void occupied_kernel(long long n, const double* __restrict__ x, double side, int planes,
                                int* __restrict__ occupied) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) occupied[plane_of(x[Stride * i + 2], side, planes)] = 1;
}

}  // namespace planes_detail

/// Which of the `planes` planes of side `side` the n points x (device, 3 doubles a point)
/// occupy: occupied[p] = 1 or 0, on the host. `scratch`: the caller's, kept across calls.
inline std::vector<int> occupied_planes(const double* x, long long n, double side, int planes,
                                        DeviceArray<int>& scratch) {
  scratch.reserve(static_cast<std::size_t>(planes));
  VH_CHECK_CUDA(cudaMemset(scratch.data(), 0, sizeof(int) * static_cast<std::size_t>(planes)));
  if (n > 0) {
    planes_detail::occupied_kernel<3><<<blocks_for(n, 256), 256>>>(n, x, side, planes, scratch.data());
    VH_CHECK_LAUNCH();
  }
  std::vector<int> occupied(static_cast<std::size_t>(planes));
  scratch.download(occupied.data(), occupied.size());
  return occupied;
}

}  // namespace vh
