// A GPU fault injected into a running program from outside its code, for the tests of what a
// run does when its GPU fails (test_gpu_fault.cpp, tests/mpi/test_mpi_run.cpp). Preloaded into
// the program (LD_PRELOAD), it does nothing unless VH_FAULT_AFTER names a file. Then a thread
// waits until that file exists and launches, on the GPU the program uses, a kernel that traps.
// The trap is a real fault of the program's CUDA context (the device's primary context, which
// every CUDA runtime of a process shares): from then on each of the program's CUDA calls fails
// with the sticky cudaErrorLaunchFailure, as after a GPU's Xid.
//
//   VH_FAULT_AFTER=PATH   the file whose appearance sets the fault off (a run's checkpoint.h5)
//   VH_FAULT_RANK=R       in that rank of an mpirun job only (OMPI_COMM_WORLD_RANK; default 0)
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

namespace {

__global__ void trap() { __trap(); }

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

/// Waits for `file`, then traps on the program's GPU: its node-local rank modulo the GPUs it
/// sees (select_gpus, src/core/device.h).
void fault_after(const std::string& file) {
  while (!std::filesystem::exists(file)) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return;
  const int device = env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0) % count;
  cudaSetDevice(device);
  trap<<<1, 1>>>();
  const cudaError_t e = cudaDeviceSynchronize();
  std::fprintf(stderr, "gpu_fault: a kernel trapped on GPU %d (%s)\n", device, cudaGetErrorString(e));
}

struct Injector {
  Injector() {
    const char* file = std::getenv("VH_FAULT_AFTER");
    std::error_code ec;
    const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).filename().string();
    if (!file || exe != "vortexhit") return;  // not mpirun, its daemon or a shell
    if (env_int("OMPI_COMM_WORLD_RANK", 0) != env_int("VH_FAULT_RANK", 0)) return;
    std::thread(fault_after, std::string(file)).detach();
  }
} injector;

}  // namespace
