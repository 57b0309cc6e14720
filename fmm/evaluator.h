// A GPU FMM evaluator that keeps its state across calls and works on device-resident arrays
// (CUDA builds, VH_FMM_HAVE_CUDA): the vortex solver's particles live on the GPU between steps
// and only a few scalars cross to the host per step.
//
// Layouts (device memory, double): positions, strengths, u and targets are n × 3, xyz
// interleaved (the layout of std::vector<Vec3>); sigma n; grad n × 9, row-major
// grad[9 i + 3 m + k] = ∂u_m/∂x_k (the layout of std::vector<Mat3>). Units and the kernel as
// fmm/fmm.h. Positions need not be wrapped (periodic mode wraps them, as evaluate_self does).
//
// The evaluator keeps, across calls: its device buffers (grown as needed, never shrunk), the
// M2L tables, the pinned staging, and — when the caller says the positions have not changed
// since the previous call (`same_positions`; e.g. particles back on the lattice after a
// reinitialisation) — the tree, its cell measures and the interaction lists. The results equal
// those of fmm::evaluate_self / evaluate_at with use_gpu = true on the same inputs.
#pragma once

#include <cstddef>
#include <memory>

#include "fmm/fmm.h"

namespace vh::fmm {

class GpuEvaluator {
 public:
  /// prm.use_gpu is implied. Throws std::invalid_argument on bad parameters (Params::validate)
  /// and std::runtime_error without a CUDA build or a visible device.
  explicit GpuEvaluator(const Params& prm);
  ~GpuEvaluator();
  GpuEvaluator(const GpuEvaluator&) = delete;
  GpuEvaluator& operator=(const GpuEvaluator&) = delete;

  /// u and ∇u at the n sources themselves (self pairs left out, as evaluate_self). All pointers
  /// are device pointers; the call returns when d_u and d_grad are written.
  Timings evaluate_self(const double* d_x, const double* d_alpha, const double* d_sigma, std::size_t n,
                        double* d_u, double* d_grad, bool same_positions = false);

  /// u and ∇u at m targets d_targets (device) induced by the n sources; same_positions refers to
  /// both the sources and the targets.
  Timings evaluate_at(const double* d_x, const double* d_alpha, const double* d_sigma, std::size_t n,
                      const double* d_targets, std::size_t m, double* d_u, double* d_grad,
                      bool same_positions = false);

  const Params& params() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vh::fmm
