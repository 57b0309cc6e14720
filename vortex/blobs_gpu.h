// GPU counterpart of the blob sums of vortex/blobs.cpp (CUDA builds, VH_HAVE_CUDA): a tiled
// gather.  The particles are sorted into lattice cells on the device; a thread block owns a tile
// of lattice points, stages the particles whose stencils reach it (their 1-D weights at the
// tile's points, computed there) in shared memory, and each thread sums its own points in a
// fixed order: no atomics, the same bits on every run.  Internal to vh_vortex; call through
// vorticity_on_lattice / divergence_on_lattice with gpu = true.
#pragma once

#include <cstddef>

#include "core/grid.h"

namespace vh::vortex::detail {

/// Doubles per particle in gather_gpu's input: x, y, z, α_x, α_y, α_z, σ.
constexpr int kPacked = 7;

/// Page-locked host memory of at least `count` doubles (fmm::pinned_staging: one buffer per
/// process, kept).  The caller packs gather_gpu's input into it and copies the sums out of it with
/// all host threads: cudaMemcpy from pageable memory runs at the driver's one-thread speed.
double* pinned_doubles(std::size_t count);

/// Sums at every lattice point of g from the np particles packed in `host` (page-locked,
/// kPacked doubles each), written over host[0 ...): the three components of ω_σ one after the
/// other (divergence = false) or ∇·ω_σ (divergence = true), g.points() values each.  m: stencil
/// points per direction (stencil_points in blobs.cpp); cutoff in σ.  Needs np and g.points()
/// below 2^31.  Throws std::runtime_error on CUDA errors.
void gather_gpu(std::size_t np, const Grid& g, double cutoff, int m, bool divergence, double* host);

/// Seconds the last gather_gpu call spent from its first transfer to the end of its last one
/// (uploads, cell sort, gather, download; CUDA events): what blobs_bench reports.
double last_gather_gpu_seconds();

}  // namespace vh::vortex::detail
