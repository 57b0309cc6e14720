// Checks of a vortex::State that comes from outside the solver (a checkpoint) before
// Solver::set_state() takes it: what the solver itself always produces, so anything else is a
// damaged or foreign file, not a state to continue from.
#pragma once

#include "core/grid.h"
#include "vortex/solver.h"

namespace vh::vortex {

/// Throws vh::InputError whose message starts with the offending field under its checkpoint
/// name (x, alpha, gamma, sigma, u_prev, …, or "attribute t", …) and says what is allowed:
///   - one particle per point of the particle lattice `lattice` (lattice_points_per_direction(
///     refine, N) per direction: set_velocity and the reinitialisations make lattice
///     particles) in x, alpha, gamma and sigma; the AB2 history (u_prev, dalpha_prev,
///     dgamma_prev) absent or all of that length;
///   - every value finite; σ in (0, 2π); positions in the box [0, 2π)³ (to 1e-12 relative:
///     wrap() can leave −1 ulp);
///   - t ≥ 0, steps ≥ 0, t = 0 exactly when steps = 0, 0 ≤ t_reinit ≤ t; 0 ≤ since_reinit ≤
///     steps, 0 ≤ reinits ≤ steps; with an AB2 history dt_prev > 0 (since_reinit may be 0:
///     the reinitialisation from the points remeshes the history); dt_prev, last_residual,
///     ratio_at_reinit, div_removed ≥ 0.
/// A field added to State gets its line here.
void validate(const State& s, const Grid& lattice);

}  // namespace vh::vortex
