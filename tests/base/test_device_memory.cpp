// An allocation the GPU refuses is a vh::OutOfMemory (base/cuda_check.h), whichever way it was
// asked for: DeviceArray's cudaMalloc, its stream-ordered allocation from a memory pool (the FMM
// evaluator's), a cuFFT plan on a full GPU. The run driver tells it from other library errors
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

/// What `f` threw: the line of a vh::OutOfMemory, else what it was.
template <class F>
std::string refusal_of(F f) {
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
  const std::string what = refusal_of([pool] {
    const vh::ScopedPool use(pool);
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

/// Holds every byte that cudaMalloc still gives, until it goes.
struct HoldAll {
  std::vector<void*> held;
  HoldAll() {
    for (std::size_t chunk = std::size_t(1) << 30; chunk >= (std::size_t(1) << 20);) {
      void* p = nullptr;
      if (cudaMalloc(&p, chunk) == cudaSuccess) {
        held.push_back(p);
      } else {
        (void)cudaGetLastError();
        chunk /= 2;
      }
    }
  }
  ~HoldAll() {
    for (void* p : held) (void)cudaFree(p);
  }
  HoldAll(const HoldAll&) = delete;
  HoldAll& operator=(const HoldAll&) = delete;
};

/// A 64^3 real-to-complex plan with its work area, or the error of making it.
void make_plan() {
  cufftHandle h = 0;
  VH_CHECK_CUFFT(cufftCreate(&h));
  std::size_t work = 0;
  const int e = int(cufftMakePlan3d(h, 64, 64, 64, CUFFT_D2Z, &work));
  (void)cufftDestroy(h);
  VH_CHECK_CUFFT(e);
}

// cuFFT answers a plan on a full GPU with CUFFT_INTERNAL_ERROR (seen on an H100, CUDA 13), not
// only with CUFFT_ALLOC_FAILED; both are the refusal there.
TEST(DeviceMemory, ACufftPlanOnAFullGpuIsOutOfMemory) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  make_plan();  // cuFFT loaded while there is room
  const std::string what = refusal_of([] {
    const HoldAll full;
    make_plan();
  });
  EXPECT_NE(what.find("cuFFT error"), std::string::npos) << what;
  EXPECT_NE(what.find(" GiB free of "), std::string::npos) << what;
  expect_device_usable();
  EXPECT_NO_THROW(make_plan()) << "a plan once the memory is back";
}

}  // namespace
