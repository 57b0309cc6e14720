// Checks of a vortex::State that comes from outside the solver (a checkpoint) before
// Solver::set_state() takes it: what the solver itself always produces, so anything else is a
// damaged or foreign file, not a state to continue from.
#pragma once

#include "core/grid.h"
#include "vortex/solver.h"

namespace vh::vortex {

/// Throws vh::InputError whose message starts with the offending field under its checkpoint
/// name (x, alpha, sigma, u_prev, dalpha_prev, or "attribute t", …) and says what is allowed:
///   - one particle per point of `g` (set_velocity and reinitialise make lattice particles);
///     u_prev and dalpha_prev both absent or both of that length;
///   - every value finite; σ in (0, 2π); positions in the box [0, 2π)³ (to 1e-12 relative:
///     wrap() can leave −1 ulp);
///   - t ≥ 0, steps ≥ 0, t = 0 exactly when steps = 0; 0 ≤ since_reinit ≤ steps,
///     0 ≤ reinits ≤ steps; with an AB2 history dt_prev > 0 and since_reinit ≥ 1;
///     dt_prev, last_residual, ratio_at_reinit ≥ 0.
/// A field added to State gets its line here.
void validate(const State& s, const Grid& g);

}  // namespace vh::vortex
