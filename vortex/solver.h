// The vortex particle solver (docs/design.md, "Vortex method definitions"; Yokota & Barba 2012).
//
// State: particles (x_p, α_p, σ). Each step:
//   1. u(x_p) and ∇u(x_p) from one periodic FMM evaluation (fmm/fmm.h);
//   2. dx/dt = u, dα/dt = (α·∇)u (classical) or (∇u)ᵀα (transpose, conserves Σα);
//   3. second-order Adams–Bashforth, y ← y + Δt (3/2 fⁿ − 1/2 fⁿ⁻¹), in its variable-step
//      form y ← y + Δt [(1 + r/2) fⁿ − (r/2) fⁿ⁻¹], r = Δt/Δt_prev, since CFL steps and steps
//      that land on output times vary; the first step and the first step after every
//      reinitialisation are forward Euler (the history is gone);
//   4. core spreading, σ² ← σ² + 2νΔt (exact for the heat equation of one blob);
//   5. reinitialisation (vortex/reinit.h) every `reinit_every` steps or as soon as
//      σ/σ₀ > max_core_ratio: ω_σ at the lattice from the old blobs, new lattice particles
//      with σ₀, strengths from the RBF solve.
// The velocity handed to the diagnostics is the FMM velocity at the lattice points.
//
// Which field is "the" vortex field (vortex.field_core, f): the particles move in
// u_σ = Σ K_σ × α, the velocity of the blob field ω_σ = Σ α ζ_σ. Written for the point
// strengths ω̃ = Σ α δ, the dynamics is ∂ω̃/∂t = ∇×(u_σ × ω̃) with u_σ the velocity of ζ_σ∗ω̃:
// its nonlinear term conserves ½⟨ṽ, ζ_σ∗ṽ⟩ = the energy of ζ_{σ/√2}∗ω̃ (ṽ = BS(ω̃); the 3-D
// form of the Hamiltonian of 2-D blob methods), not the energy of ω_σ = ζ_σ∗ω̃, which it moves
// from low to high k and then hides behind the extra factor exp(−σ²k²/2). The solver's field is
// therefore a choice: the blobs of core f·σ₀ reproduce ω at the lattice at the start (init =
// rbf), and the grid velocity is that of the same blobs, core √(σ² − (1 − f²)σ₀²) (so core
// spreading still diffuses it at the full rate). f = 1 is ω_σ itself (the papers' choice); f =
// 1/√2 the conserved one. Measured on inputs/quick.ini at 32³ to t/T = 1: f = 1 loses energy
// beyond ε (−dK/dt exceeds ε by 11–23 %) and E(k = 4) is 27 % low; f = 1/√2 gets E(k = 4)
// 13 % low and K within 2 %. Between reinitialisations (reinit_every > 1) both are what the
// particles carry; the dynamics is the same.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/grid.h"
#include "core/options.h"
#include "fmm/fmm.h"
#include "vortex/particles.h"
#include "vortex/reinit.h"

namespace vh::vortex {

enum class Stretching { classical, transpose };
enum class Init { rbf, direct };

struct Params {
  Init init = Init::rbf;
  double overlap = 1.0;          ///< σ₀ = overlap · h
  double field_core = 1.0;       ///< f: the solver's field is that of blobs of core f·σ₀ (see above)
  Stretching stretching = Stretching::classical;
  int reinit_every = 100;        ///< steps between reinitialisations (0: only by core ratio)
  double max_core_ratio = 1.5;   ///< reinitialise as soon as σ/σ₀ exceeds this
  double blob_cutoff = 7.0;      ///< ω_σ at the lattice from blobs cut off at this many σ
  RbfParams rbf;
  fmm::Params fmm;               ///< periodic is forced on
  double nu = 0;
  /// The FMM (fmm::Params::use_gpu; copied into fmm by the Solver) and the blob sums at the
  /// lattice (reinitialisation, monitors) on the GPU.  Not a deck key: the program sets it from
  /// its back end (--device gpu).
  bool use_gpu = false;
};

/// Deck rows vortex.* and fmm.*.
std::vector<OptionSpec> option_specs();
/// Reads them (throws vh::InputError naming the key).
Params params_from(const Options& o, double nu);

/// What the solver reports at an output (docs/design.md monitors).
struct Monitors {
  Vec3 total_alpha{0, 0, 0};   ///< Σ α_p
  double max_div_omega = 0;    ///< max |∇·ω_σ| over the lattice
  double core_ratio = 1;       ///< σ/σ₀
  long reinits = 0;            ///< reinitialisations so far
  double last_rbf_residual = 0;
  double core_ratio_at_reinit = 0;  ///< σ/σ₀ just before the last reinitialisation
};

/// Everything needed to continue bit for bit (checkpoints).
struct State {
  Particles particles;
  std::vector<Vec3> u_prev, dalpha_prev;  ///< AB2 history (empty when there is none)
  double t = 0, dt_prev = 0, last_residual = 0, ratio_at_reinit = 0;
  long steps = 0, since_reinit = 0, reinits = 0;
};

class Solver {
 public:
  Solver(const Params& p, const Grid& g);

  /// Particles from the velocity coefficients: ω on the lattice by spectral curl, strengths
  /// from the RBF solve with core field_core·σ₀ (init = rbf) or α = ω h³ (direct). Returns the
  /// RBF result.
  RbfResult set_velocity(const SpectralVector& u, double t);
  /// One AB2 step (Euler after a (re)initialisation), core spreading, reinit when due.
  void step(double dt);
  /// max_p max_i |u_i(x_p)| of the last right-hand side (computes it if stale).
  double max_velocity();
  /// The FMM velocity at the lattice points of the solver's field (cores shrunk by field_core),
  /// as coefficients (grid.h normalisation).
  void velocity(SpectralVector& u);
  double time() const { return t_; }
  long steps() const { return steps_; }
  /// Monitors at the current state (costs a blob sum over the lattice).
  Monitors monitors();
  /// Reinitialisations so far, σ/σ₀ just before the last one, and its RBF residual.
  long reinits() const { return reinits_; }
  double core_ratio_at_reinit() const { return ratio_at_reinit_; }
  double last_rbf_residual() const { return last_residual_; }
  /// Reinitialises now (as step() does when due); returns the RBF result.
  RbfResult reinitialise();

  const Particles& particles() const { return p_; }
  /// The whole state, and its restoration (same grid and parameters).
  State state() const;
  void set_state(const State& s);
  const fmm::Timings& last_timings() const { return timings_; }

 private:
  void evaluate_rhs();  ///< fills u_, dalpha_ at the current state

  Params prm_;
  Grid g_;
  Particles p_;
  double sigma0_ = 0, t_ = 0, dt_prev_ = 0;
  long steps_ = 0, since_reinit_ = 0, reinits_ = 0;
  double last_residual_ = 0, ratio_at_reinit_ = 0;
  bool rhs_valid_ = false, have_history_ = false;
  std::vector<Vec3> u_, dalpha_, u_prev_, dalpha_prev_;
  std::vector<Mat3> grad_;
  fmm::Timings timings_;
};

}  // namespace vh::vortex
