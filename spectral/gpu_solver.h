// GPU back end of the spectral solver (gpu_solver.cu): cuFFT batched in-place R2C/C2R,
// fused per-mode and per-point kernels (rhs_kernel.h), state and buffers on the device.
// Internal to spectral/; host-callable, no CUDA syntax.
#pragma once

#include <memory>

#include "core/slab.h"
#include "spectral/solver.h"

namespace vh::spectral {

/// The GPU solver on slab `s`. Throws vh::InputError in builds without CUDA or without a
/// visible GPU.
std::unique_ptr<Solver> make_gpu_solver(const Params& p, const Slab& s);

}  // namespace vh::spectral
