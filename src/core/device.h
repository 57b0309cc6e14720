// Back-end selection: --device cpu|gpu|auto (DESIGN.md, "Precision and back ends").
#pragma once

#include <string>

namespace vh {

enum class Backend { cpu, gpu };

/// True when this build has CUDA and a GPU is visible.
bool gpu_available();
/// "cpu" → cpu; "gpu" → gpu (throws vh::InputError if none); "auto" → gpu when available.
Backend resolve_backend(const std::string& device);
/// Name of the device the back end runs on (GPU model, or "CPU (n threads)").
std::string device_name(Backend b);
/// Selects the GPU of this MPI rank on its node (local rank modulo the device count).
void select_gpu(int local_rank);

}  // namespace vh
