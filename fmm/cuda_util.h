// Small CUDA helpers shared by the CUDA sources of fmm/ and vortex/blobs_gpu.cu; CUDA sources
// only.  CUDA calls are checked by VH_CHECK_CUDA (base/error.h: throws vh::LibraryError, a
// std::runtime_error, with file:line).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/cuda_check.h"

// The former spelling of VH_CHECK_CUDA, kept for vortex/blobs_gpu.cu until it moves over.
#define VH_FMM_CUDA(call) VH_CHECK_CUDA(call)

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
    if (buf) VH_CHECK_CUDA(cudaFreeHost(buf));
    buf = nullptr;
    cap = 0;
    VH_CHECK_CUDA(cudaMallocHost(&buf, bytes));
    cap = bytes;
  }
  return buf;
}

// Below this size an upload copies from the vector directly.
constexpr std::size_t kStagingFrom = std::size_t(1) << 20;

// The memory pool DevBuf allocations come from on this thread, or none (cudaMalloc): set by a
// ScopedPool for its lifetime.  A GpuEvaluator sets its own pool (cudaMemPoolCreate, release
// threshold unlimited) around each evaluation, so that its buffers are stream-ordered
// allocations on the legacy default stream that the pool keeps for reuse: the transient
// buffers of one stage (sorts, the traversal) and those of the next (expansions) share memory,
// and after the first call no allocation reaches the driver.
inline cudaMemPool_t& current_pool() {
  static thread_local cudaMemPool_t pool = nullptr;
  return pool;
}
struct ScopedPool {
  cudaMemPool_t saved;
  explicit ScopedPool(cudaMemPool_t p) : saved(current_pool()) { current_pool() = p; }
  ~ScopedPool() { current_pool() = saved; }
  ScopedPool(const ScopedPool&) = delete;
  ScopedPool& operator=(const ScopedPool&) = delete;
};

// Device buffer (bytes), freed on destruction: cudaMalloc, or from the current pool (freed
// then in stream order on the legacy default stream).
struct DevBuf {
  void* p = nullptr;
  std::size_t bytes = 0;
  bool pooled = false;  ///< from a pool: freed by cudaFreeAsync
  DevBuf() = default;
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf() {
    if (p) {
      if (pooled) cudaFreeAsync(p, 0);
      else cudaFree(p);
    }
  }
  /// Frees the memory (bytes = 0).
  void release() {
    void* q = p;
    const bool from_pool = pooled;
    p = nullptr;
    bytes = 0;
    pooled = false;
    if (q) {
      if (from_pool) VH_CHECK_CUDA(cudaFreeAsync(q, 0));
      else VH_CHECK_CUDA(cudaFree(q));
    }
  }
  /// Exactly b bytes (contents lost when the size changes).
  void resize(std::size_t b) {
    if (b == bytes) return;
    release();
    if (!b) return;
    if (cudaMemPool_t pool = current_pool()) {
      VH_CHECK_CUDA(cudaMallocFromPoolAsync(&p, b, pool, 0));
      pooled = true;
    } else {
      VH_CHECK_CUDA(cudaMalloc(&p, b));
    }
    bytes = b;
  }
  /// At least b bytes: grows (contents lost), never shrinks.
  void reserve(std::size_t b) {
    if (b > bytes) resize(b);
  }
  void swap(DevBuf& o) noexcept {
    std::swap(p, o.p);
    std::swap(bytes, o.bytes);
    std::swap(pooled, o.pooled);
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
    VH_CHECK_CUDA(cudaMemcpy(p, h, bytes, cudaMemcpyHostToDevice));
  }
  template <class V> void upload(const std::vector<V>& v) {
    if (v.size() * sizeof(V) < kStagingFrom) {
      resize(v.size() * sizeof(V));
      if (bytes) VH_CHECK_CUDA(cudaMemcpy(p, v.data(), bytes, cudaMemcpyHostToDevice));
      return;
    }
    upload_with<V>(v.size(), [&](std::ptrdiff_t i) { return v[i]; });
  }
  template <class V> V* as() const { return static_cast<V*>(p); }
};

}  // namespace vh::fmm
