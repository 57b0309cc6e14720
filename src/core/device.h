// Back-end selection: --device cpu|gpu|auto (docs/design.md, "Precision and back ends").
#pragma once

#include <cstddef>
#include <string>

#include "base/comm.h"

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
/// Collective over `comm` (R > 1 ranks of a GPU run): gives each rank the GPU of index
/// local_rank modulo the GPUs it sees (all of its node's, or the one a scheduler bound to it).
/// Throws InputError, the same one line on every rank, when two ranks would share a GPU and
/// `share_gpus` is false, or when the ranks' GPUs are not all of one kind (a run goes at the
/// pace of its slowest GPU, and its memory check assumes one size). Returns the ranks on this
/// rank's GPU, itself included (1 without share_gpus; 1 in a build without CUDA).
int select_gpus(const Comm& comm, bool share_gpus);

}  // namespace vh
