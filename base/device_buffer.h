// The one owner of device memory: vh::DeviceArray<T>, an array of T on the current GPU, freed
// when it goes (RAII, so a check that throws between allocation and use leaks nothing), and the
// pinned staging through which large uploads go. For the CUDA sources of every module and for
// host code of CUDA builds (no CUDA syntax here: the runtime API only).
//
// Allocation: cudaMalloc, or from the memory pool current on this thread (ScopedPool) as a
// stream-ordered allocation on the legacy default stream, freed there in stream order; the FMM
// evaluator sets its own pool so that after its first call no allocation reaches the driver.
// A size of 0 holds no memory (data() is null). resize() gives exactly n elements and loses the
// contents when n changes; reserve() grows only. Copies are synchronous: an upload has landed
// when it returns (copy_to_device), whatever stream the next kernel runs on.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "base/cuda_check.h"

namespace vh {

/// Page-locked host memory through which large uploads go: one buffer per process, grown as
/// needed and kept for the life of the CUDA context. Filling it with all host threads and
/// copying from it runs at the link's speed (~50 GB/s on an H200 host), where cudaMemcpy from
/// pageable memory goes through the driver's one-thread staging copy (~5-10 GB/s). Uploads are
/// synchronous, so consecutive ones can share the buffer.
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

/// cudaMemcpy from host memory to the device that returns only once the bytes are there. From
/// pageable memory cudaMemcpy may return while its last transfer is still in flight (the CUDA
/// runtime's "API synchronization behavior"): work on the legacy default stream is ordered after
/// the copy, work on a non-blocking stream (the FMM evaluator's, DeviceComm's) is not. Waiting
/// for the legacy stream, which holds the copy, makes every upload synchronous as this file
/// promises.
inline void copy_to_device(void* dst, const void* src, std::size_t bytes) {
  if (!bytes) return;
  VH_CHECK_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  VH_CHECK_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
}

/// Below this size an upload copies from the host array directly.
constexpr std::size_t kStagingFrom = std::size_t(1) << 20;

/// The memory pool DeviceArray allocations come from on this thread, or none (cudaMalloc).
inline cudaMemPool_t& current_pool() {
  static thread_local cudaMemPool_t pool = nullptr;
  return pool;
}
/// Makes `p` the current pool for its lifetime.
struct ScopedPool {
  cudaMemPool_t saved;
  explicit ScopedPool(cudaMemPool_t p) : saved(current_pool()) { current_pool() = p; }
  ~ScopedPool() { current_pool() = saved; }
  ScopedPool(const ScopedPool&) = delete;
  ScopedPool& operator=(const ScopedPool&) = delete;
};

/// n elements of T in device memory (see the header comment).
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t n) { resize(n); }
  /// A device copy of `v`.
  explicit DeviceArray(const std::vector<T>& v) { upload(v); }
  ~DeviceArray() { free_noexcept(); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept { swap(o); }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    if (this != &o) {
      free_noexcept();
      swap(o);
    }
    return *this;
  }

  T* data() const { return p_; }
  std::size_t size() const { return n_; }
  std::size_t bytes() const { return n_ * sizeof(T); }
  bool empty() const { return n_ == 0; }
  /// The memory as an array of V (byte buffers that hold several kinds of data).
  template <class V> V* as() const { return reinterpret_cast<V*>(p_); }

  /// Exactly n elements (contents lost when n changes).
  void resize(std::size_t n) {
    if (n == n_) return;
    release();
    if (!n) return;
    void* q = nullptr;
    if (cudaMemPool_t pool = current_pool()) {
      VH_CHECK_CUDA(cudaMallocFromPoolAsync(&q, n * sizeof(T), pool, 0));
      pooled_ = true;
    } else {
      VH_CHECK_CUDA(cudaMalloc(&q, n * sizeof(T)));
    }
    p_ = static_cast<T*>(q);
    n_ = n;
  }
  /// At least n elements: grows (contents lost), never shrinks.
  void reserve(std::size_t n) {
    if (n > n_) resize(n);
  }
  /// Frees the memory (size 0).
  void release() {
    T* q = p_;
    const bool from_pool = pooled_;
    p_ = nullptr;
    n_ = 0;
    pooled_ = false;
    if (q) {
      if (from_pool) VH_CHECK_CUDA(cudaFreeAsync(q, 0));
      else VH_CHECK_CUDA(cudaFree(q));
    }
  }
  void swap(DeviceArray& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(pooled_, o.pooled_);
  }
  /// All bytes zero, in order on stream `st`.
  void zero(cudaStream_t st = 0) {
    if (n_) VH_CHECK_CUDA(cudaMemsetAsync(p_, 0, bytes(), st));
  }

  /// n elements copied from host memory (size becomes n).
  void upload(const T* h, std::size_t n) {
    resize(n);
    copy_to_device(p_, h, bytes());
  }
  /// A copy of `v`; large arrays go through the pinned staging buffer, filled by all threads.
  void upload(const std::vector<T>& v) {
    if (v.size() * sizeof(T) < kStagingFrom) return upload(v.data(), v.size());
    upload_with(v.size(), [&](std::ptrdiff_t i) { return v[i]; });
  }
  /// n elements, element i = f(i), packed by all host threads into pinned staging memory and
  /// copied up in one transfer.
  template <class F> void upload_with(std::size_t n, F&& f) {
    resize(n);
    if (!n) return;
    T* h = static_cast<T*>(pinned_staging(bytes()));
    const std::ptrdiff_t nn = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t i = 0; i < nn; ++i) h[i] = f(i);
    copy_to_device(p_, h, bytes());
  }
  /// The first n elements (all by default) copied to host memory.
  void download(T* h, std::size_t n) const {
    if (n) VH_CHECK_CUDA(cudaMemcpy(h, p_, n * sizeof(T), cudaMemcpyDeviceToHost));
  }
  std::vector<T> download() const {
    std::vector<T> v(n_);
    download(v.data(), n_);
    return v;
  }

 private:
  void free_noexcept() noexcept {
    if (!p_) return;
    if (pooled_) cudaFreeAsync(p_, 0);
    else cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
    pooled_ = false;
  }
  T* p_ = nullptr;
  std::size_t n_ = 0;
  bool pooled_ = false;  // from a pool: freed by cudaFreeAsync on the legacy default stream
};

/// A buffer of bytes that holds several kinds of data (as<V>()).
using DeviceBytes = DeviceArray<unsigned char>;

}  // namespace vh
