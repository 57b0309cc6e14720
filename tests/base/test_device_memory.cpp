// An allocation the GPU refuses is a vh::OutOfMemory (base/cuda_check.h), whichever way it was
// asked for: DeviceArray's cudaMalloc, its stream-ordered allocation from a memory pool (the FMM
// evaluator's), a cuFFT plan's work area. The run driver tells it from other library errors
// (exit 2 before the first step, 3 after it: src/app/run.cpp). The refusal is not sticky: the
// device takes the next allocation and kernel as before. Skipped without a GPU.
#include <cuda_runtime_api.h>
#include <cufft.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "base/cuda_check.h"
#include "base/device_buffer.h"

namespace {

bool have_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n > 0;
}

/// More than any GPU holds: 2^47 doubles, 1 PiB.
constexpr std::size_t kTooMany = std::size_t(1) << 47;

/// The device still works after a refusal: an allocation, a copy there and back.
void expect_device_usable() {
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  const std::vector<double> v{1.5, -2.0, 3.25};
  vh::DeviceArray<double> d(v);
  EXPECT_EQ(d.download(), v);
}

std::string refusal_of(void (*f)()) {
  try {
    f();
  } catch (const vh::OutOfMemory& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("another error: ") + e.what();
  }
  return "no error";
}

TEST(DeviceMemory, ARefusedCudaMallocIsOutOfMemoryWithTheFreeMemory) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const std::string what = refusal_of([] { vh::DeviceArray<double> a(kTooMany); });
  EXPECT_NE(what.find("CUDA: out of memory in cudaMalloc"), std::string::npos) << what;
  EXPECT_NE(what.find(" GiB free of "), std::string::npos) << what;
  EXPECT_NE(what.find("device_buffer.h:"), std::string::npos) << what;  // where it was seen
  expect_device_usable();
}

TEST(DeviceMemory, ARefusedPoolAllocationIsOutOfMemory) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  int dev = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = dev;
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaMemPoolCreate(&pool, &props), cudaSuccess);
  static cudaMemPool_t the_pool;
  the_pool = pool;
  const std::string what = refusal_of([] {
    const vh::ScopedPool use(the_pool);
    vh::DeviceArray<double> a(kTooMany);
  });
  EXPECT_NE(what.find("CUDA: out of memory in cudaMallocFromPoolAsync"), std::string::npos) << what;
  expect_device_usable();
  {
    const vh::ScopedPool use(pool);  // and the pool still gives what fits
    vh::DeviceArray<double> a(1024);
    a.zero();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  EXPECT_EQ(cudaMemPoolDestroy(pool), cudaSuccess);
}

TEST(DeviceMemory, ACufftPlanWhoseWorkAreaDoesNotFitIsOutOfMemory) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  std::size_t free = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  // A batch of 3-D transforms whose work area is about twice the GPU's memory.
  static long long the_batch;
  the_batch = static_cast<long long>(2 * total / (std::size_t(512) * 512 * 512 * 16)) + 1;
  const std::string what = refusal_of([] {
    cufftHandle h = 0;
    VH_CHECK_CUFFT(cufftCreate(&h));
    long long dims[3] = {512, 512, 512};
    std::size_t work = 0;
    const int e =
        int(cufftMakePlanMany64(h, 3, dims, nullptr, 1, 0, nullptr, 1, 0, CUFFT_Z2Z, the_batch, &work));
    cufftDestroy(h);
    VH_CHECK_CUFFT(e);
  });
  EXPECT_NE(what.find("CUFFT_ALLOC_FAILED"), std::string::npos) << what;
  expect_device_usable();
}

}  // namespace
