// The checks of CUDA runtime and cuFFT calls and of kernel launches, for every module's CUDA
// sources: each throws vh::LibraryError (base/error.h) with the call and its file:line, or
// vh::OutOfMemory where the call failed for want of memory.
//
//   VH_CHECK_CUDA(cudaMemcpy(...));        a runtime call
//   VH_CHECK_CUFFT(cufftExecZ2Z(...));     a cuFFT call (the header of cufft.h need not be seen)
//   kernel<<<grid, block, 0, st>>>(...);
//   VH_CHECK_LAUNCH();                      the launch itself (bad configuration, no image for
//                                           this GPU); errors of the running kernel show at the
//                                           next synchronising call
//
// With VH_SYNC_LAUNCHES defined (a debugging build: -DVH_SYNC_LAUNCHES), VH_CHECK_LAUNCH also
// waits for the kernel, so a fault is reported at the launch that made it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <string>

#include "base/error.h"

namespace vh {

/// " (GPU memory: F GiB free of T GiB)" of the current device, or "" where it cannot be read.
inline std::string gpu_memory_note() {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, " (GPU memory: %.2f GiB free of %.2f GiB)", double(free) / (1u << 30),
                double(total) / (1u << 30));
  return buf;
}

/// The error of a failed CUDA runtime call: vh::OutOfMemory for an allocation the device
/// refused (not sticky: it is cleared, so that the next check sees the next error), else
/// vh::LibraryError.
[[noreturn]] inline void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  const std::string what = std::string("CUDA: ") + cudaGetErrorString(e) + " in " + call;
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw OutOfMemory(what + gpu_memory_note(), file, line);
  }
  throw LibraryError(what, file, line);
}

/// The error of a failed cuFFT call: vh::OutOfMemory for CUFFT_ALLOC_FAILED (2: a plan's work
/// area), else vh::LibraryError.
[[noreturn]] inline void throw_cufft_error(int e, const char* call, const char* file, int line) {
  const std::string what = "cuFFT error " + std::to_string(e) + " in " + call;
  if (e == 2) throw OutOfMemory(what + " (CUFFT_ALLOC_FAILED)" + gpu_memory_note(), file, line);
  throw LibraryError(what, file, line);
}

}  // namespace vh

/// Throws (throw_cuda_error) when a CUDA runtime call fails.
#define VH_CHECK_CUDA(call)                                                        \
  do {                                                                             \
    const cudaError_t e_ = (call);                                                 \
    if (e_ != cudaSuccess) ::vh::throw_cuda_error(e_, #call, __FILE__, __LINE__);  \
  } while (0)

/// Throws (throw_cufft_error) when a cuFFT call returns anything but CUFFT_SUCCESS (0).
#define VH_CHECK_CUFFT(call)                                                 \
  do {                                                                       \
    const int e_ = int(call);                                                \
    if (e_ != 0) ::vh::throw_cufft_error(e_, #call, __FILE__, __LINE__);     \
  } while (0)

#ifdef VH_SYNC_LAUNCHES
#define VH_CHECK_LAUNCH()                                  \
  do {                                                     \
    VH_CHECK_CUDA(cudaGetLastError());                     \
    VH_CHECK_CUDA(cudaDeviceSynchronize());                \
  } while (0)
#else
/// Throws vh::LibraryError when the last kernel launch failed (call right after it).
#define VH_CHECK_LAUNCH() VH_CHECK_CUDA(cudaGetLastError())
#endif
