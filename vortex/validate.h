// Checks of a vortex::State that comes from outside the solver (a checkpoint) before
// Solver::set_state() takes it: what the solver itself always produces, so anything else is a
// damaged or foreign file, not a state to continue from.
#pragma once

#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

#include "core/grid.h"
#include "vortex/solver.h"

namespace vh::vortex {

/// The largest values a state can hold whose velocity never exceeds `speed` at the particles
/// (the run's guards bound it: src/app/checkpoint.h, speed_cap). The particles represent a field
/// on the lattice of N_p points per direction (modes |k_i| ≤ N_p/2, so |k| ≤ k_max = √3 N_p/2);
/// for such a field f, at any point, |f(x)| ≤ Σ_k |f̂_k| ≤ √(N_p³) ‖f‖ (Cauchy–Schwarz over its
/// N_p³ modes; Parseval in grid.h's normalisation, ‖f‖² = ⟨|f|²⟩ = Σ_k |f̂_k|²): no point holds
/// more than the whole field. With ‖u‖ ≤ speed and ‖∇u‖, ‖ω‖ ≤ k_max ‖u‖ (Σ|k|²|û|²):
///   |u| ≤ speed,   |ω|, |∇u| ≤ ω_max = √(N_p³) k_max speed,   |γ| = |ω| V ≤ V ω_max,
///   |α| ≤ V ω_max / s_min³   (α̂ = ω̂ V / s(k_x)s(k_y)s(k_z), rbf.h's symbol at σ₀, each factor
///                            ≥ s_min, its smallest over the lattice; the floored fft solve
///                            divides by more),
///   |dγ/dt| ≤ γ_max ω_max, |dα/dt| ≤ α_max ω_max   (stretching (α·∇)u or (∇u)ᵀα).
/// Moved particles carry the same field at their own points, where the bound holds as well; the
/// remeshed AB2 history (u_prev, the rates) is the lattice interpolant of such values, whose
/// overshoot between the points stays within the slack of `speed` (speed_cap's kStepGrowth).
/// Loose by design (√(N_p³) and 1/s_min³ over a turbulent field's values): it tells an
/// impossible state, such as a strength of 1e300, from one the run could have written.
struct Bounds {
  static constexpr double kNone = std::numeric_limits<double>::infinity();
  double velocity = kNone;   ///< |u_prev|
  double vorticity = kNone;  ///< |ω| and |∇u| at a point: ω_max
  double gamma = kNone;      ///< |γ_p|
  double alpha = kNone;      ///< |α_p|
};

/// The bounds above for the lattice `lattice`, lattice particles of core `sigma0` and the
/// velocity bound `speed` (infinite: no magnitude bounds).
Bounds bounds(const Grid& lattice, double sigma0, double speed);

/// Checks of a state read in parts (a checkpoint's arrays a chunk at a time, each rank keeping
/// its own particles: src/app/vortex_checkpoint.h). Each throws vh::InputError whose message
/// starts with the offending field under its checkpoint name (x, alpha, …, or "attribute t")
/// and says what is allowed. The arrays' lengths — one particle per point of the particle
/// lattice (lattice_points_per_direction(refine, N) per direction, as set_velocity and the
/// reinitialisations make them) in x, alpha, gamma and sigma, the AB2 history absent or all of
/// that length — are the reader's to check, from the datasets' shapes. A field added to State
/// gets its line in one of the two.

/// Particles [first, first + n) of the state, held in s (each of its arrays empty or of n
/// elements: a reader may check some arrays before it reads the others; messages name the
/// state's index first + i): every value finite; σ in (0, 2π); positions in the box [0, 2π)³
/// (to 1e-12 relative: wrap() can leave −1 ulp); the magnitudes of alpha, gamma and the AB2
/// history within `b`.
void validate_particles(const State& s, std::size_t first, const Bounds& b);

/// The interval of one component of positions in the periodic box [0, 2π), as a checkpoint keeps
/// it beside its positions (src/app/vortex_checkpoint.h "x_boxes"): [lo, hi] holds x where x or
/// x − 2π lies in it, so that the positions of a lattice plane next to 0, some of which drifted
/// below 0 and wrapped to just under 2π, are held by a few cells' interval [−δ, δ'] instead of
/// the box's whole height. add() every value, then interval(): the narrower of [min x, max x]
/// and the same of x − 2π for x ≥ π (so −π ≤ lo ≤ hi < 2π).
class PeriodicInterval {
 public:
  void add(double x) {
    plain_.add(x);
    shifted_.add(x >= kPi ? x - 2 * kPi : x);
  }
  /// {lo, hi}; {+inf, -inf} where no value was added.
  std::pair<double, double> interval() const {
    const Range& r = shifted_.hi - shifted_.lo < plain_.hi - plain_.lo ? shifted_ : plain_;
    return {r.lo, r.hi};
  }
  /// Whether the interval [lo, hi] holds x: x or x − 2π in it.
  static bool holds(double lo, double hi, double x) {
    return (x >= lo && x <= hi) || (x - 2 * kPi >= lo && x - 2 * kPi <= hi);
  }

 private:
  struct Range {
    double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
    void add(double x) {
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
  };
  Range plain_, shifted_;
};

/// Boxes of positions, [n][6] (lowest x, y, z, then highest), as a checkpoint keeps them beside
/// its positions: each component's [lo, hi] a PeriodicInterval's, −π ≤ lo ≤ hi < 2π (to the
/// slack validate_particles allows positions). Message names x_boxes[b][c].
void validate_position_boxes(const std::vector<double>& box);

/// The state's scalars (`history`: it holds an AB2 history): t ≥ 0, steps ≥ 0, t = 0 exactly
/// when steps = 0, 0 ≤ t_reinit ≤ t; 0 ≤ since_reinit ≤ steps, 0 ≤ reinits ≤ steps; with an AB2
/// history dt_prev > 0 (since_reinit may be 0: the reinitialisation from the points remeshes the
/// history); dt_prev, last_residual, ratio_at_reinit, div_removed ≥ 0.
void validate_scalars(const State& s, bool history);

}  // namespace vh::vortex
