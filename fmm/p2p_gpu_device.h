// The GPU P2P's launches on device arrays (CUDA sources only): P2PGpu (p2p_gpu.cu) and
// GpuEvaluator (evaluator.cu) run the same kernel through them.  Layout of the arrays:
// P2PArrays (p2p_gpu.h); positions double4 (x, y, z, sigma for sources); strengths float4 or
// double4 by precision; out 12 values per sorted target (float, or double for fp64).
#pragma once

#include <cuda_runtime.h>

#include "fmm/p2p_gpu.h"

namespace vh::fmm {

struct P2PLaunch {
  GpuPrecision prec = GpuPrecision::fp32;
  const int4* tasks = nullptr;
  int ntask = 0;
  const int4* entries = nullptr;
  const double4_32a* shifts = nullptr;
  const double4_32a* xt = nullptr;
  const double4_32a* xs = nullptr;
  const void* as = nullptr;
  void* out = nullptr;
  /// The evaluation's tolerance: g = 1 beyond p2p_singular_rho2(prec, tolerance) (0: where g is 1
  /// to the working type's round-off).
  double tolerance = 0;
};

/// One warp per task, the grid covering the tasks.
void p2p_launch(const P2PLaunch& a, cudaStream_t s);
/// `blocks` blocks whose warps take tasks from the counter *queue (device; zero it before the
/// first of the launches that share it) until none is left: launches sharing a counter do every
/// task once between them, with the sums of p2p_launch.
void p2p_launch_queue(const P2PLaunch& a, int* queue, int blocks, cudaStream_t s);
/// Blocks of the P2P kernel one SM holds (its launch bound) in precision `prec`.
int p2p_blocks_per_sm(GpuPrecision prec);

}  // namespace vh::fmm
