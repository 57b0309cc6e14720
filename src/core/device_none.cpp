// Back-end selection in a build without CUDA.
#include <omp.h>

#include "core/device.h"
#include "core/error.h"

namespace vh {

bool gpu_available() { return false; }

Backend resolve_backend(const std::string& device) {
  if (device == "gpu")
    throw InputError("device = gpu, but this build has no CUDA (allowed here: cpu, auto)");
  return Backend::cpu;
}

std::string device_name(Backend) {
  return "CPU (" + std::to_string(omp_get_max_threads()) + " threads)";
}

bool gpu_memory(std::size_t&, std::size_t&) { return false; }

int select_gpus(const Comm&, bool) { return 1; }

}  // namespace vh
