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

#include <string>

#include "base/error.h"

namespace vh {

/// " (GPU memory: F GiB free of T GiB)" of the current device, or "" where it cannot be read.
std::string gpu_memory_note();

/// Whether `e` is a sticky error, after which the process's CUDA context is unusable (CUDA
/// Runtime API, cudaError: a kernel's fault, an uncorrectable ECC or NVLink error, a device
/// lost or unavailable, an unknown error).
bool is_device_fault(cudaError_t e);

/// The error of a failed CUDA runtime call: vh::OutOfMemory for an allocation the device
/// refused (cudaErrorMemoryAllocation; not sticky: it is cleared, so that the next check sees
/// the next error), vh::DeviceFault for a sticky error (is_device_fault), else
/// vh::LibraryError.
[[noreturn]] void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line);

/// The error of a failed cuFFT call: vh::OutOfMemory for CUFFT_ALLOC_FAILED, and for
/// CUFFT_INTERNAL_ERROR where the GPU is all but full (cuFFT's plans answer so when the memory
/// they need is refused: cuda_check.cpp), vh::DeviceFault where the context has a sticky error
/// (a fault of earlier work shows in the next library call), else vh::LibraryError.
[[noreturn]] void throw_cufft_error(int e, const char* call, const char* file, int line);

/// Throws vh::DeviceFault, with `what` and the context's sticky error, when the current
/// device's context has one; the checks of other libraries (cuFFT, NCCL) call it before
/// throwing their own error.
void throw_if_device_fault(const std::string& what, const char* file, int line);

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
