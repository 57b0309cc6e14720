// Small CUDA helpers shared by the CUDA sources of fmm/ (p2p_gpu.cu, far_gpu.cu) and
// vortex/blobs_gpu.cu; CUDA sources only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

// Throws std::runtime_error with file:line and the CUDA error string.
#define VH_FMM_CUDA(call)                                                                                     \
  do {                                                                                                        \
    const cudaError_t vh_e_ = (call);                                                                         \
    if (vh_e_ != cudaSuccess)                                                                                 \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " #call ": " +     \
                               cudaGetErrorString(vh_e_));                                                    \
  } while (0)

namespace vh::fmm {

// Device buffer (bytes), freed on destruction.
struct DevBuf {
  void* p = nullptr;
  std::size_t bytes = 0;
  DevBuf() = default;
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf() {
    if (p) cudaFree(p);
  }
  void resize(std::size_t b) {
    if (b == bytes) return;
    if (p) VH_FMM_CUDA(cudaFree(p));
    p = nullptr;
    bytes = b;
    if (b) VH_FMM_CUDA(cudaMalloc(&p, b));
  }
  template <class V> void upload(const std::vector<V>& v) {
    resize(v.size() * sizeof(V));
    if (bytes) VH_FMM_CUDA(cudaMemcpy(p, v.data(), bytes, cudaMemcpyHostToDevice));
  }
  template <class V> V* as() const { return static_cast<V*>(p); }
};

}  // namespace vh::fmm
