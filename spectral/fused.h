// Fused, pruned 3-D transforms of the GPU spectral solver: one evaluation of the nonlinear
// term as five passes of 1-D line FFTs (cuFFTDx block FFTs on the GPU) that visit only the
// retained modes and never write a real 3-D array (passes and layouts: fused_kernel.h).
// Internal to spectral/; host-callable, no CUDA syntax.
//
// Each GPU pass has a CPU reference here (run_pass_cpu: the same layouts and per-element
// math, a plain DFT per line) and a test hook (run_pass_gpu) so tests compare them pass by
// pass. The solver (gpu_solver.cu) calls launch().
#pragma once

#include <complex>
#include <string>
#include <vector>

#include "spectral/fused_kernel.h"

namespace vh::spectral::fused {

/// The five passes (fused_kernel.h). z_forward_post with stage kRhsOnly writes n̂ to arr.a
/// and runs no inverse.
enum class Pass { z_inverse, y_inverse, x_cross, y_forward, z_forward_post };

/// True when this build has the fused GPU passes (CUDA and cuFFTDx found at configure time).
bool built();
/// Empty when the fused GPU passes support geometry g in this precision on the current
/// device; else the reason (shown when the solver falls back to cuFFT).
std::string unsupported_reason(const kernel::Geometry& g, bool single);

/// Host copies of everything a pass may touch (fp64): u0, acc, a as 3 N-layout arrays each
/// (a may be empty without explicit viscosity and outside kRhsOnly), zb and yb
/// (fused_kernel.h layouts).
struct HostArrays {
  std::vector<kernel::Cx<double>> u0, acc, a, zb, yb;
};

/// What a z_forward_post pass does: RK4 stage (kernel::Stage), viscosity, ν, Δt.
struct StageArgs {
  int stage = kernel::kRhsOnly;
  bool explicit_visc = false;
  double nu = 0, dt = 0;
};

/// CPU reference of pass p on h (in place, as the GPU pass).
void run_pass_cpu(Pass p, const kernel::Geometry& g, const StageArgs& s, HostArrays& h);
/// The GPU pass on copies of h (uploaded, run, downloaded back into h); fp64. For tests.
/// Throws vh::InputError when !unsupported_reason(g, false).empty().
void run_pass_gpu(Pass p, const kernel::Geometry& g, const StageArgs& s, HostArrays& h);

/// What of the y and x passes one launch does: fields f0 … f1 − 1 (y passes) and the rank's
/// planes z0 … z1 − 1 (y and x passes); −1: up to the last. The z passes always do all. A
/// pass done in parts gives the whole pass's bits, so that the exchanges of the other parts may
/// overlap it (gpu_slab.cuh).
struct Part {
  int f0 = 0, f1 = -1, z0 = 0, z1 = -1;
};

/// Launches pass p of the solver on `stream` (a cudaStream_t) for layout l (FusedLayout::make(g)
/// on one rank, the rank's part on R > 1): arr's u0/acc/a (the state, slab order), zb, zt and
/// yb (device, fused_kernel.h layouts; zt = zb on one rank). T = double or float.
template <class T>
void launch(Pass p, const kernel::FusedLayout& l, int stage, bool explicit_visc, T nu, T dt,
            const kernel::StageArrays<T>& arr, kernel::Cx<T>* zb, kernel::Cx<T>* zt, kernel::Cx<T>* yb, void* stream,
            Part part = {});

}  // namespace vh::spectral::fused
