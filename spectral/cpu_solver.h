// CPU back end of the spectral solver: FFTW (threads) in place, double, OpenMP loops over
// the per-mode and per-point math of rhs_kernel.h. Internal to spectral/.
#pragma once

#include <memory>

#include "core/slab.h"
#include "spectral/solver.h"

namespace vh::spectral {

/// The CPU solver on slab `s` (one rank: Slab::whole_grid).
std::unique_ptr<Solver> make_cpu_solver(const Params& p, const Slab& s);

}  // namespace vh::spectral
