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

// Page-locked host memory through which large uploads go: one buffer per process, grown as
// needed and kept (never freed: it lives as long as the CUDA context).  Filling it with all
// host threads and copying from it runs at the link's speed (~50 GB/s on the H200's host),
// where cudaMemcpy from pageable memory goes through the driver's one-thread staging copy
// (~5-10 GB/s).  Uploads are synchronous, so consecutive ones can share the buffer.
inline void* pinned_staging(std::size_t bytes) {
  static void* buf = nullptr;
  static std::size_t cap = 0;
  if (bytes > cap) {
    if (buf) VH_FMM_CUDA(cudaFreeHost(buf));
    buf = nullptr;
    cap = 0;
    VH_FMM_CUDA(cudaMallocHost(&buf, bytes));
    cap = bytes;
  }
  return buf;
}

// Below this size an upload copies from the vector directly.
constexpr std::size_t kStagingFrom = std::size_t(1) << 20;

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
  /// n elements, element i = f(i), packed by all host threads into pinned staging memory and
  /// copied up in one transfer.
  template <class V, class F> void upload_with(std::size_t n, F&& f) {
    resize(n * sizeof(V));
    if (!bytes) return;
    V* h = static_cast<V*>(pinned_staging(bytes));
    const std::ptrdiff_t nn = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t i = 0; i < nn; ++i) h[i] = f(i);
    VH_FMM_CUDA(cudaMemcpy(p, h, bytes, cudaMemcpyHostToDevice));
  }
  template <class V> void upload(const std::vector<V>& v) {
    if (v.size() * sizeof(V) < kStagingFrom) {
      resize(v.size() * sizeof(V));
      if (bytes) VH_FMM_CUDA(cudaMemcpy(p, v.data(), bytes, cudaMemcpyHostToDevice));
      return;
    }
    upload_with<V>(v.size(), [&](std::ptrdiff_t i) { return v[i]; });
  }
  template <class V> V* as() const { return static_cast<V*>(p); }
};

}  // namespace vh::fmm
