// Back-end selection: --device cpu|gpu|auto (docs/design.md, "Precision and back ends").
#pragma once

#include <cstddef>
#include <string>

namespace vh {

enum class Backend { cpu, gpu };

/// True when this build has CUDA and a GPU is visible.
bool gpu_available();
/// "cpu" → cpu; "gpu" → gpu (throws vh::InputError if none); "auto" → gpu when available.
Backend resolve_backend(const std::string& device);
/// Name of the device the back end runs on (GPU model, or "CPU (n threads)").
std::string device_name(Backend b);
/// Free and total memory of the current GPU in bytes (cudaMemGetInfo); false when this build
/// has no CUDA or no GPU is visible.
bool gpu_memory(std::size_t& free, std::size_t& total);
/// Selects the GPU of this MPI rank on its node (local rank modulo the device count).
void select_gpu(int local_rank);

}  // namespace vh
