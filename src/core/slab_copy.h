// Whole fields and the ranks' slabs of them (core/slab.h): for code that keeps a whole copy of
// a field on every rank (the GPU vortex solver on R ranks, vortex/solver_gpu.h) and for tests.
#pragma once

#include "core/grid.h"
#include "core/slab.h"

namespace vh {

/// This rank's part (slab s) of the whole field u, which this rank holds.
SpectralSlab restrict_to(const SpectralVector& u, const Slab& s);

/// Collective over u.slab.comm: the whole field, on every rank, from the ranks' slabs (one
/// rank: a copy).
SpectralVector allgather(const SpectralSlab& u);

}  // namespace vh
