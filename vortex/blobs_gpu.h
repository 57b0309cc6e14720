// GPU counterpart of the blob sums of vortex/blobs.cpp (CUDA builds, VH_HAVE_CUDA): the same
// gather, one thread per lattice point visiting the same cells and particles in the same
// order, with the particles' 1-D Gaussian stencils computed on the device.  Internal to
// vh_vortex; call through vorticity_on_lattice / divergence_on_lattice with gpu = true.
#pragma once

#include <cstddef>
#include <vector>

#include "core/grid.h"
#include "vortex/particles.h"

namespace vh::vortex::detail {

/// Sums at every lattice point of g: out[0..2] = ω_σ components (divergence = false) or
/// out[0] = ∇·ω_σ (divergence = true), each g.points() values.  m: stencil points per
/// direction; start/order: the cell list (particles by lattice cell, stable); offs: the cell
/// offsets to visit per direction.  Throws std::runtime_error on CUDA errors.
void gather_gpu(const Particles& p, const Grid& g, double cutoff, int m, const std::vector<std::size_t>& start,
                const std::vector<std::size_t>& order, const std::vector<int>& offs, bool divergence,
                std::vector<double>* out);

}  // namespace vh::vortex::detail
