// Back-end selection in a CUDA build.
#include <cuda_runtime.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/cuda_check.h"
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

int select_gpus(const Comm& comm, bool share_gpus) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    count = 0;
  }
  // The node-local rank picks among the GPUs this rank sees (all of the node's, or the one a
  // scheduler bound to it). Every rank then decides on the same facts (allgathered), so every
  // rank throws the same line.
  struct Facts {
    int gpus;
    char uuid[16];
    char name[256];
  } mine{count, {}, {}};
  if (count > 0) {
    VH_CHECK_CUDA(cudaSetDevice(comm.local_rank() % count));
    int dev = 0;
    cudaDeviceProp prop{};
    VH_CHECK_CUDA(cudaGetDevice(&dev));
    VH_CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
    std::memcpy(mine.uuid, prop.uuid.bytes, sizeof mine.uuid);
    std::snprintf(mine.name, sizeof mine.name, "%s", prop.name);
  }
  std::vector<Facts> all(std::size_t(comm.size()));
  comm.allgather(&mine, sizeof mine, all.data());
  for (int r = 0; r < comm.size(); ++r) {
    const Facts& f = all[std::size_t(r)];
    if (f.gpus == 0) throw InputError("device = gpu, but rank " + std::to_string(r) + " sees no GPU");
    if (std::strcmp(f.name, all[0].name) != 0)
      throw InputError(std::string("the ranks' GPUs differ (rank 0: ") + all[0].name + ", rank " + std::to_string(r) +
                       ": " + f.name + "): run on GPUs of one kind");
    for (int q = 0; q < r && !share_gpus; ++q)
      if (std::memcmp(all[std::size_t(q)].uuid, f.uuid, sizeof f.uuid) == 0)
        throw InputError("ranks " + std::to_string(q) + " and " + std::to_string(r) + " would share one GPU (" +
                         std::to_string(f.gpus) + " visible to a rank): one rank per GPU (mpirun -np <= GPUs per " +
                         "node), or parallel.share_gpus = true");
  }
  int sharing = 0;
  for (const Facts& f : all) sharing += std::memcmp(f.uuid, mine.uuid, sizeof f.uuid) == 0;
  return sharing;
}

}  // namespace vh
