// The vortex particle solver (docs/design.md, "Vortex method definitions"; Yokota & Barba 2012;
// Cottet & Koumoutsakos 2000).
//
// State: particles (x_p, α_p, γ_p, σ_p; vortex/particles.h) on a lattice of refine·N points per
// direction (h_p = h/refine, σ₀ = overlap·h_p), and the AB2 history. Each step:
//   1. u(x_p) and ∇u(x_p) from one periodic FMM evaluation of the blob field Σ α ζ_σ (fmm/fmm.h),
//      each particle's own blob left out of its ∇u (vortex.velocity = fmm); or, with
//      vortex.velocity = lattice, the same sum by FFTs of the strengths while the particles sit
//      on the lattice (just reinitialised): the blobs' periodic Biot–Savart sum mode by mode
//      with its aliases (vortex/remesh_kernel.h, blob_velocity), exact where the FMM is exact to
//      its tolerance. It needs reinit_every = 1; an evaluation that finds the particles off the
//      lattice (a checkpoint of another scheme) takes the FMM;
//   2. dx/dt = u; each strength s ∈ {α, γ} stretches, ds/dt = (s·∇)u (classical) or (∇u)ᵀs
//      (transpose, conserves Σs) (vortex/update_kernel.h);
//   3. second-order Adams–Bashforth in its variable-step form, y ← y + Δt [(1 + r/2) fⁿ −
//      (r/2) fⁿ⁻¹], r = Δt/Δt_prev (CFL steps and steps that land on output times vary); only
//      the very first step is forward Euler;
//   4. diffusion: core spreading σ² ← σ² + 2νΔt (exact for one Gaussian blob), or the exact
//      viscous factor exp(−ν|k|²τ) on the lattice field at each reinitialisation (lattice: a
//      split step, made Strang's by step_lead() and output_nu_tau()), or (the default, where it
//      can run: automatic_diffusion) the integrating factor along the particles' paths
//      (integrating_factor; reinit_every = 1, points): the strengths take the first half of the
//      step's exact factor as an increment, (exp(−ν|k|²Δt/2) − 1) ω of the lattice field at the
//      step's start, added outside the AB2 extrapolation, and the reinitialisation multiplies
//      the arrived field by the second half exp(−ν|k|²Δt/2). The
//      stretching and the velocity see the field of their own time (no splitting of the AB2
//      history); it is the midpoint form of AB2 with an integrating factor, ωⁿ⁺¹ = E(Δt/2)
//      [E(Δt/2) ωⁿ + Δt (c0 fⁿ + c1 fⁿ⁻¹)], exact in pure decay and damping stiff shells at
//      once (bench/RESULTS.md, 2026-11-29 "the integrating factor");
//   5. reinitialisation every `reinit_every` steps, or as soon as σ/σ₀ > max_core_ratio: new
//      particles on the lattice with σ₀ (see below).
//
// Reinitialisation (vortex.reinit_from):
//   points  (default) the lattice field the particles' point strengths γ represent: their
//           interpolation by the lattice RBF's cardinal functions (vortex/remesh.h), then
//           diffusion, the projection onto solenoidal fields and the filter in Fourier space;
//           γ = ω V and α = the RBF strengths of ω. The AB2 history (fⁿ⁻¹ of u and of the
//           strengths' rates, carried by the particles) is remeshed the same way, so the step
//           after a reinitialisation is AB2 too. The velocity handed to the diagnostics is
//           that of this field (Biot–Savart in Fourier space; truncated to the N³ grid).
//   blobs   the blob field ω_σ = Σ α ζ_σ sampled at the lattice, RBF strengths from it
//           (vortex/rbf.h): the scheme of SC09 and Yokota & Barba (with reinit_every = 100,
//           diffusion = core-spreading, project = false, filter = none). The AB2 history is
//           dropped (the next step is Euler), and the diagnostics see the FMM velocity of the
//           blob field at the lattice points (of cores shrunk by field_core, below).
//
// Why points: the blob field moves its Gaussians rigidly with the particles, an O(σ²k²) error
// in the transport of every mode (its discrete second moment, Cottet & Koumoutsakos 2000,
// ch. 2); remeshing it through the RBF re-creates that error at every reinitialisation. The
// cardinal interpolation of the point strengths carries no such error (vortex/remesh.h), and
// the blob field the FMM sees interpolates ω exactly at every reinitialisation. Measured at
// 128³ (bench/RESULTS.md, "vortex fidelity").
//
// field_core (f, reinit_from = blobs only): which blob field is "the" vortex field. The
// particles move in u_σ = Σ K_σ × α, the velocity of ω_σ = Σ α ζ_σ; written for the point
// strengths ω̃ = Σ α δ, the dynamics is ∂ω̃/∂t = ∇×(u_σ × ω̃) and its nonlinear term conserves
// the energy of ζ_{σ/√2}∗ω̃, not that of ω_σ. f = 1 is ω_σ itself (the papers' choice), f = 1/√2
// the conserved field: the blobs of core fσ₀ reproduce ω at the lattice at the start, and the
// grid velocity is that of the same blobs, core √(σ² − (1 − f²)σ₀²).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/comm.h"
#include "base/error.h"
#include "core/grid.h"
#include "core/slab.h"
#include "core/options.h"
#include "fmm/fmm.h"
#include "vortex/particles.h"
#include "vortex/rbf.h"
#include "vortex/remesh.h"

namespace vh::vortex {

enum class Stretching { classical, transpose };
enum class Init { rbf, direct };
enum class ReinitFrom { points, blobs };
enum class Diffusion { core_spreading, lattice, integrating_factor };
enum class Velocity { fmm, lattice };

struct Params {
  Init init = Init::rbf;
  ReinitFrom reinit_from = ReinitFrom::points;
  Diffusion diffusion = Diffusion::integrating_factor;  ///< needs reinit_every = 1 and points (diffusion_conflict)
  double refine = 1.5;           ///< particles per grid spacing and direction (h_p = h/refine; refine·N even)
  double overlap = 1.0;          ///< σ₀ = overlap · h_p
  double field_core = 1.0;       ///< f: blobs only (see above)
  Stretching stretching = Stretching::classical;
  Velocity velocity = Velocity::fmm;  ///< how step 1 evaluates u and ∇u (above)
  int reinit_every = 1;          ///< steps between reinitialisations (0: only by core ratio)
  double max_core_ratio = 1.5;   ///< reinitialise as soon as σ/σ₀ exceeds this
  double blob_cutoff = 6.0;      ///< blob sums at the lattice cut off at this many σ (exp(−18) = 1.5e-8)
  bool project = true;           ///< project the reinitialised vorticity onto solenoidal fields
  Filter filter = Filter::cube;  ///< modes the reinitialisation removes
  double filter_fraction = 2.0 / 3;  ///< the filter's cut-off this · N_p/2: kept |k| or |k_i| below it
  RbfParams rbf;
  fmm::Params fmm;               ///< periodic is forced on
  double nu = 0;
  /// The FMM (fmm::Params::use_gpu; copied into fmm by the Solver) and the blob sums at the
  /// lattice (reinitialisation, monitors) on the GPU.  Not a deck key: the program sets it from
  /// its back end (--device gpu).
  bool use_gpu = false;
};

/// Points per direction of the particle lattice for the N³ grid: refine·N. Throws vh::InputError
/// naming vortex.refine (and the refines that suit this N) unless it is an even integer >= 8.
int lattice_points_per_direction(double refine, int n);

/// The solver's k_max, the wavenumber of k_max η that the run reports (docs/design.md, "Files a
/// run writes"): the largest wavenumber of the velocity it hands to the diagnostics on the N³
/// grid, min(filter_fraction · N_p/2, N_p/2 − 1, N/2 − 1) with N_p = refine·N, the first term
/// only with a filter. filter_fraction · N_p/2 is the radius of the largest sphere the
/// reinitialisation keeps whole (the cube's inscribed sphere, or the spherical filter's; between
/// reinitialisations, reinit_every > 1, the moved particles carry some energy beyond it until
/// the next one); N_p/2 − 1 and N/2 − 1 are the largest |k_i| of the lattice and of the grid
/// the velocity is truncated to (the Nyquist modes apart). With the defaults (refine 1.5, 2/3 filter)
/// k_max = N/2 − 1, the grid's; refine = 1 makes it N/3. Throws as lattice_points_per_direction() does.
double resolved_kmax(const Params& p, int n);

/// Zeroes the modes of u, a field on the N³ grid (any slab), that the solver's initial particles
/// do not carry: those beyond the lattice (resample's |k_i| < min(N, N_p)/2) and those its filter
/// removes (kernel::kept). Every reinitialisation removes them, so set_velocity does not start
/// from them either, and the first step sees the field every later one sees (docs/design.md,
/// "Vortex method definitions": where they held energy, the first step's rates came from them and
/// AB2 extrapolated those into a second step 30 times longer).
void keep_carried_modes(const Params& p, SpectralSlab& u);

/// ν·τ of the viscous factor the next reinitialisation applies at time t, since the last one at
/// t_reinit, to the AB2 history of the strengths' rates: ν(t − t_reinit) with lattice diffusion,
/// else 0.
double pending_nu_tau(const Params& p, double t, double t_reinit);
/// ν·τ of the viscous factor it applies to the arrived vorticity: pending_nu_tau() with lattice
/// diffusion, the second half ν(t − t_reinit)/2 with integrating-factor, else 0.
double arrival_nu_tau(const Params& p, double t, double t_reinit);
/// ν·τ of the viscous factor exp(−ν|k|²τ) that takes the solver's lattice field to its vorticity
/// at time t for the diagnostics (grid velocity, monitors; not the dynamics), with lattice
/// diffusion: the pending factor pending_nu_tau(), less half the last step right after a
/// reinitialisation when every step reinitialises from the points. Why: a step transports the
/// field (T), then applies the viscous factor of the whole step (Lie splitting); repeated,
/// (e^{−LΔt} T)ⁿ ω₀ = e^{−LΔt/2} Sⁿ (e^{LΔt/2} ω₀), S the second-order Strang step, L = ν|k|².
/// This and step_lead() take the two outer factors away. Without them the dissipation range,
/// which forgets its start, sits low by exp(−ν|k|²Δt) in energy, first order in Δt (E_v/E_s 0.71
/// at k = 63 of 128³ at CFL 0.5; bench/RESULTS.md, 2026-11-28 "the default refine 1.5"). 0
/// without lattice diffusion.
double output_nu_tau(const Params& p, double t, double t_reinit, double dt_prev);
/// The other half of output_nu_tau(): each step's reinitialisation diffuses over (Δt − Δt_prev)/2
/// more than the step (Δt_prev = 0 at the first), so that between two transports the factor is
/// Strang's exp(−ν|k|²(Δt_prev + Δt)/2) and before the first one its half step (applied after the
/// transport: one O(Δt ΔΔt) commutator a step). Without it the half step back is wrong for the
/// modes that remember their start: pure decay would end half a step short. Returns how much
/// earlier t_reinit counts from, when every step reinitialises from the points with lattice
/// diffusion; else 0. dt_prev: the last step, counted only with AB2 history (Δt_prev = 0 before
/// the first step), as ab2_weights() counts it.
double step_lead(const Params& p, double dt, double dt_prev, bool history);

/// Why p's diffusion cannot run with its other settings ("" when it can): integrating_factor needs
/// the particles on the lattice at every step's start, reinit_every = 1 and reinit_from = points.
/// The deck names the key; the solvers' constructors throw vh::InputError with it.
std::string diffusion_conflict(const Params& p);
/// What vortex.diffusion = auto (the deck's default) picks for p's other settings:
/// integrating_factor where it can run, else lattice.
Diffusion automatic_diffusion(const Params& p);
/// The deck's name of a diffusion scheme ("integrating-factor", "lattice", "core-spreading").
const char* diffusion_name(Diffusion d);

/// Deck rows vortex.* and fmm.*.
std::vector<OptionSpec> option_specs();
/// Reads them (throws vh::InputError naming the key).
Params params_from(const Options& o, double nu);

/// What the solver reports at an output.
struct Monitors {
  Vec3 total_strength{0, 0, 0};  ///< Σγ (points) or Σα (blobs): the strengths of the solver's field
  double max_div_omega = 0;      ///< max |∇·ω_σ| over the lattice, of the blob field the FMM sees
  double max_omega = 0;          ///< max |ω| over the lattice, of the solver's field
  double div_removed = 0;        ///< the last projection's ‖k·ω̂‖/‖|k|ω̂‖ (0 without projection)
  double core_ratio = 1;         ///< σ/σ₀
  long reinits = 0;              ///< reinitialisations so far
  double last_rbf_residual = 0;
  double core_ratio_at_reinit = 0;  ///< σ/σ₀ just before the last reinitialisation
};

/// Everything needed to continue bit for bit (checkpoints).
struct State {
  Particles particles;
  std::vector<Vec3> u_prev, dalpha_prev, dgamma_prev;  ///< AB2 history (empty when there is none)
  double t = 0, t_reinit = 0, dt_prev = 0, last_residual = 0, ratio_at_reinit = 0, div_removed = 0;
  long steps = 0, since_reinit = 0, reinits = 0;
};

/// Throws vh::InputError when the state cannot continue under p: diffusion = integrating_factor
/// takes the viscous increment of the lattice field at the particles, so their state must sit on the
/// lattice (a checkpoint of reinit_every > 1 taken between reinitialisations does not).
void check_state_scheme(const Params& p, const State& s);

/// What the run driver needs of a vortex solver, so that it holds one pointer whatever the back
/// end: Solver below (the CPU reference; with use_gpu its FMM and blob sums run on the GPU but
/// the particles stay on the host) and GpuSolver (vortex/solver_gpu.h, CUDA builds: the state
/// on the device between steps, reinit_from = points). make_solver() picks one. The members
/// are Solver's; see there.
class SolverInterface {
 public:
  virtual ~SolverInterface() = default;
  virtual RbfResult set_velocity(const SpectralVector& u, double t) = 0;
  /// The same from this rank's slab of the grid's coefficients (core/slab.h); the default takes
  /// the whole grid of one rank.
  virtual RbfResult set_velocity(const SpectralSlab& u, double t) {
    VH_CHECK(u.slab.whole(), "this vortex solver runs on one rank");
    return set_velocity(SpectralSlab(u).to_vector(), t);
  }
  virtual void step(double dt) = 0;
  virtual double max_velocity() = 0;
  /// max_p max_ij |∂u_i/∂x_j(x_p)| over every rank's particles, of the same right-hand side:
  /// dt times it is the Lagrangian CFL number (time.lcfl).
  virtual double max_gradient() = 0;
  virtual void velocity(SpectralVector& u) = 0;
  /// The velocity on this rank's slab of the grid (u.slab on entry; the default: one rank).
  virtual void velocity(SpectralSlab& u) {
    VH_CHECK(u.slab.whole(), "this vortex solver runs on one rank");
    SpectralVector v;
    velocity(v);
    u = SpectralSlab::whole(std::move(v));
  }
  virtual double time() const = 0;
  virtual long steps() const = 0;
  virtual Monitors monitors() = 0;
  virtual long reinits() const = 0;
  virtual double core_ratio_at_reinit() const = 0;
  virtual double last_rbf_residual() const = 0;
  virtual double last_div_removed() const = 0;
  virtual RbfResult reinitialise() = 0;
  virtual State state() const = 0;
  virtual void set_state(const State& s) = 0;
  virtual const fmm::Timings& last_timings() const = 0;
  /// The velocity on the grid g as device coefficients (d[c]: this rank's modes of its slab of
  /// the grid, Slab::local_modes() complex doubles each, the slab's order and grid.h's
  /// normalisation; one rank: g.modes()), valid until the next call that changes the state,
  /// where the solver's state lives on the GPU: true; false (the default) where it does not.
  /// Collective on R ranks.
  virtual bool device_velocity(const void* d[3]) {
    (void)d;
    return false;
  }
};

/// GpuSolver where `p.use_gpu` and reinit_from = points (CUDA builds), else Solver.
std::unique_ptr<SolverInterface> make_solver(const Params& p, const Grid& g);
/// The same on this rank's slab of the grid (throws vh::InputError on R > 1 ranks for
/// reinit_from = blobs, which runs on one rank only).
std::unique_ptr<SolverInterface> make_solver(const Params& p, const Slab& grid_slab);

/// The z-slabs of the particle lattice (refine·N points per direction) over the ranks of
/// `comm`, ordered for the modes the reinitialisation keeps (core/slab.h).
Slab lattice_slab(const Params& p, int n, const Comm& comm);

class Solver : public SolverInterface {
 public:
  /// g: the grid of the diagnostics (N³); the particles live on the refine·N lattice.
  Solver(const Params& p, const Grid& g);
  /// On the ranks of grid_slab.comm (docs/design.md, "The vortex solver on several ranks"):
  /// set_velocity and velocity take and give this rank's slab of the grid's coefficients; the
  /// particles are this rank's (those of its z-slab of the lattice, vortex/halo.h); the FMM is
  /// the distributed one (fmm/fmm.h, the overloads with a Comm).  reinit_from = points and
  /// the CPU (use_gpu = false) when R > 1.  Every member is collective then.
  Solver(const Params& p, const Slab& grid_slab);
  ~Solver() override;
  using SolverInterface::set_velocity;
  using SolverInterface::velocity;
  RbfResult set_velocity(const SpectralSlab& u, double t) override;
  void velocity(SpectralSlab& u) override;

  /// Particles from the velocity coefficients on g (interpolated spectrally to the particle
  /// lattice: exact): ω on the lattice by spectral curl; points: γ = ω V and α the RBF
  /// strengths of ω (init = rbf) or α = γ (direct); blobs: α from the RBF solve with core
  /// field_core·σ₀ (rbf) or α = ω V (direct). Returns the RBF result.
  RbfResult set_velocity(const SpectralVector& u, double t) override;
  /// One AB2 step (Euler only at the very start, and after a blob-field reinitialisation),
  /// diffusion, reinitialisation when due.
  void step(double dt) override;
  /// max_p max_i |u_i(x_p)| of the last right-hand side (computes it if stale).
  double max_velocity() override;
  double max_gradient() override;
  /// The solver's velocity on the grid g as coefficients (grid.h normalisation): the lattice
  /// field's modes |k_i| < N/2 (resample), on any rank count and refine.
  void velocity(SpectralVector& u) override;
  double time() const override { return t_; }
  long steps() const override { return steps_; }
  /// Monitors at the current state (costs blob sums over the lattice).
  Monitors monitors() override;
  long reinits() const override { return reinits_; }
  double core_ratio_at_reinit() const override { return ratio_at_reinit_; }
  double last_rbf_residual() const override { return last_residual_; }
  /// The last projection's ‖k·ω̂‖/‖|k|ω̂‖: how far from solenoidal the field had drifted.
  double last_div_removed() const override { return div_removed_; }
  /// Reinitialises now (as step() does when due); returns the RBF result.
  RbfResult reinitialise() override;

  /// This rank's particles.
  const Particles& particles() const { return p_; }
  /// The particle lattice.
  const Grid& lattice() const { return gp_; }
  /// Ghost particles this rank received at the last reinitialisation, and particles that left
  /// it by migration since (R > 1; 0 on one rank).
  std::size_t ghosts_received() const { return ghosts_; }
  std::size_t migrated() const { return migrated_; }
  /// The whole state (this rank's particles and history), and its restoration (same grid and
  /// parameters; on R ranks each rank's own particles, vortex/halo.h owner_of).
  State state() const override;
  void set_state(const State& s) override;
  const fmm::Timings& last_timings() const override { return timings_; }

 private:
  void evaluate_rhs();  ///< fills u_, dalpha_ (and dgamma_) at the current state
  void lattice_rhs();   ///< u_ and grad_ of particles on the lattice by FFTs (vortex.velocity = lattice)
  /// Coefficients on the particle lattice of the solver's vorticity now (points: the remeshed
  /// field before projection and filter, with the viscous factor of output_nu_tau()).
  void points_field(SpectralSlab& w);
  /// The lattice field after the spectral steps of a reinitialisation (diffusion over nu_tau,
  /// projection, filter); records the projection's share.
  void spectral_steps(SpectralSlab& w, double nu_tau, bool record);
  bool points() const { return prm_.reinit_from == ReinitFrom::points; }
  /// diffusion = integrating_factor: visc_g_, visc_a_ = the first viscous half of a step of dt,
  /// (exp(−ν|k|²Δt/2) − 1) ω of the lattice field at the particles (on the lattice), as point and
  /// blob strengths.
  void first_viscous_half(double dt);
  double max_sigma() const;  ///< over all ranks

  Params prm_;
  Grid g_, gp_;
  Slab gs_, ls_;  ///< this rank's slabs of the grid and of the particle lattice
  Comm comm_;
  std::size_t ghosts_ = 0, migrated_ = 0;
  std::unique_ptr<Lattice> lattice_;
  Particles p_;
  double sigma0_ = 0, t_ = 0, t_reinit_ = 0, dt_prev_ = 0;
  long steps_ = 0, since_reinit_ = 0, reinits_ = 0;
  double last_residual_ = 0, ratio_at_reinit_ = 0, div_removed_ = 0;
  bool rhs_valid_ = false, have_history_ = false;
  std::vector<Vec3> u_, dalpha_, dgamma_, u_prev_, dalpha_prev_, dgamma_prev_;
  std::vector<Vec3> visc_g_, visc_a_;  ///< diffusion = integrating_factor (first_viscous_half)
  std::vector<Mat3> grad_;
  fmm::Timings timings_;
};

}  // namespace vh::vortex
