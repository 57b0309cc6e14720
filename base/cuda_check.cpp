// The errors of base/cuda_check.h's checks (CUDA builds).
#include "base/cuda_check.h"

#include <cstddef>
#include <cstdio>

namespace vh {

namespace {
constexpr int kCufftAllocFailed = 2;    // CUFFT_ALLOC_FAILED
constexpr int kCufftInternalError = 5;  // CUFFT_INTERNAL_ERROR
}  // namespace

std::string gpu_memory_note() {
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

bool is_device_fault(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:         // a kernel's fault, or memory the GPU lost
    case cudaErrorLaunchFailure:          // "unspecified launch failure" (a trap, an Xid)
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorDevicesUnavailable:     // taken away (exclusive mode, a reset)
    case cudaErrorNoDevice:
    case cudaErrorContextIsDestroyed:
    case cudaErrorSystemNotReady:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  const std::string what = std::string("CUDA: ") + cudaGetErrorString(e) + " in " + call;
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw OutOfMemory(what + gpu_memory_note(), file, line);
  }
  if (is_device_fault(e)) throw DeviceFault(what, file, line);
  throw LibraryError(what, file, line);
}

void throw_if_device_fault(const std::string& what, const char* file, int line) {
  // A sticky error is every call's answer from then on: a query of the legacy stream returns it
  // (or cudaErrorNotReady / cudaSuccess where the context is sound).
  const cudaError_t e = cudaStreamQuery(nullptr);
  if (is_device_fault(e)) throw DeviceFault(what + " (the GPU's context: " + cudaGetErrorString(e) + ")", file, line);
}

void throw_cufft_error(int e, const char* call, const char* file, int line) {
  const std::string what = "cuFFT error " + std::to_string(e) + " in " + call;
  throw_if_device_fault(what, file, line);
  if (e == kCufftAllocFailed) throw OutOfMemory(what + " (CUFFT_ALLOC_FAILED)" + gpu_memory_note(), file, line);
  // A plan made on a GPU with no memory left (an H100 with 2.6 MiB free, cuFFT of CUDA 13)
  // returns CUFFT_INTERNAL_ERROR, not CUFFT_ALLOC_FAILED: below 2 % of the GPU's memory free,
  // that is the refusal.
  std::size_t free = 0, total = 0;
  if (e == kCufftInternalError && cudaMemGetInfo(&free, &total) == cudaSuccess && free < total / 50)
    throw OutOfMemory(what + " (CUFFT_INTERNAL_ERROR, with the GPU all but full)" + gpu_memory_note(), file, line);
  throw LibraryError(what, file, line);
}

}  // namespace vh
