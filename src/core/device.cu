// Back-end selection in a CUDA build.
#include <cuda_runtime.h>
#include <omp.h>

#include "core/device.h"
#include "core/error.h"

namespace vh {

bool gpu_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return false;
  }
  return count > 0;
}

Backend resolve_backend(const std::string& device) {
  if (device == "cpu") return Backend::cpu;
  if (device == "gpu") {
    if (!gpu_available()) throw InputError("device = gpu, but no GPU is visible (allowed: cpu, auto)");
    return Backend::gpu;
  }
  return gpu_available() ? Backend::gpu : Backend::cpu;
}

std::string device_name(Backend b) {
  if (b == Backend::gpu) {
    int dev = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess)
      return prop.name;
    return "GPU";
  }
  return "CPU (" + std::to_string(omp_get_max_threads()) + " threads)";
}

bool gpu_memory(std::size_t& free, std::size_t& total) {
  if (!gpu_available()) return false;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return true;
}

void select_gpu(int local_rank) {
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) cudaSetDevice(local_rank % count);
}

}  // namespace vh
