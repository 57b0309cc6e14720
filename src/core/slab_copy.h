// Whole fields and the ranks' slabs of them (core/slab.h): for code that keeps a whole copy of
// a field on every rank (the GPU vortex solver on R ranks, vortex/solver_gpu.h) and for tests;
// and the difference of two slab-distributed fields over all the ranks.
#pragma once

#include "core/grid.h"
#include "core/slab.h"

namespace vh {

/// This rank's part (slab s) of the whole field u, which this rank holds.
SpectralSlab restrict_to(const SpectralVector& u, const Slab& s);

/// Collective over u.slab.comm: the whole field, on every rank, from the ranks' slabs (one
/// rank: a copy).
SpectralVector allgather(const SpectralSlab& u);

/// Collective over b.slab.comm: ‖a − b‖ / ‖b‖ over all the ranks' modes (each weighted for its
/// conjugate, modes::mode_weight), b the reference; a on the same slabs.
double relative_l2(const SpectralSlab& a, const SpectralSlab& b);

}  // namespace vh
