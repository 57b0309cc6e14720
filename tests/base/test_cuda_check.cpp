// base/cuda_check.h sorts a failed CUDA call into what the run driver acts on: a refused
// allocation (vh::OutOfMemory), a sticky error after which the process's GPU context is
// unusable (vh::DeviceFault: exit 3 naming the last good checkpoint mid-run), or another
// library error. The sorting itself needs no GPU; a real fault is test_gpu_fault's.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>

#include "base/cuda_check.h"

namespace {

/// "fault", "memory" or "library": the class throw_cuda_error(e) throws; and its line.
std::string kind_of(cudaError_t e, std::string* what = nullptr) {
  try {
    vh::throw_cuda_error(e, "cudaCall(x)", "file.cu", 7);
  } catch (const vh::DeviceFault& x) {
    if (what) *what = x.what();
    return "fault";
  } catch (const vh::OutOfMemory& x) {
    if (what) *what = x.what();
    return "memory";
  } catch (const vh::LibraryError& x) {
    if (what) *what = x.what();
    return "library";
  }
  return "none";
}

TEST(CudaCheck, StickyErrorsAreDeviceFaults) {
  for (cudaError_t e : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorECCUncorrectable,
                        cudaErrorHardwareStackError, cudaErrorIllegalInstruction, cudaErrorMisalignedAddress,
                        cudaErrorAssert, cudaErrorDevicesUnavailable, cudaErrorNvlinkUncorrectable, cudaErrorUnknown})
    EXPECT_EQ(kind_of(e), "fault") << cudaGetErrorName(e);
  std::string what;
  kind_of(cudaErrorLaunchFailure, &what);
  EXPECT_EQ(what, "file.cu:7: CUDA: unspecified launch failure in cudaCall(x)");
}

TEST(CudaCheck, OtherErrorsAreNot) {
  EXPECT_EQ(kind_of(cudaErrorMemoryAllocation), "memory");
  for (cudaError_t e : {cudaErrorInvalidValue, cudaErrorInvalidConfiguration, cudaErrorNoKernelImageForDevice,
                        cudaErrorInvalidDevice, cudaErrorNotReady})
    EXPECT_EQ(kind_of(e), "library") << cudaGetErrorName(e);
}

}  // namespace
