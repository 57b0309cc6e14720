// The vortex solver with its state on the GPU (CUDA builds): the method of vortex/solver.h with
// vortex.reinit_from = points (the default), step for step the CPU Solver's, whose tests it is
// compared against (tests/vortex/test_vortex_gpu.cpp). reinit_from = blobs (the seeds' scheme)
// stays with vortex::Solver, whose FMM and blob sums run on the GPU with use_gpu while its
// particles live on the host; make_solver() (solver.h) picks.
//
// A step, all on the device:
//   1. u and ∇u at the particles: fmm::GpuEvaluator::evaluate_self on the device arrays
//      (same_positions when the particles sit on the lattice and the last evaluation saw them
//      there: the tree and lists are kept);
//   2. one kernel per particle (vortex/update_kernel.h, the CPU's functions): the stretching
//      rates of α and γ, the variable-step AB2 update of x, α and γ, the history kept, core
//      spreading, the wrap into the box;
//   3. the reinitialisation from the points when due (vortex/remesh.h): blob sums of γ (and of
//      the history u_prev·V and dγ_prev) at the lattice from the device arrays
//      (blobs_gpu.h, DeviceBlobSums: one cell sort and one pass for the three), cuFFT D2Z (scaled by 1/n³,
//      grid.h) and Z2D in fp64, the per-mode steps of vortex/remesh_kernel.h (÷ symbol, viscous
//      factor, projection, filter, ÷ S for the blob strengths), the new lattice particles.
// Only scalars cross to the host per step: max |u| for the CFL step, and the count of non-finite
// positions and strengths (an overflowed state is reported as max |u| = NaN, as Solver does).
// At outputs the grid velocity is the Biot–Savart velocity of the lattice field, truncated to
// the N³ grid, as device coefficients (device_velocity: the diagnostics read them there) or
// copied to the host (velocity); the monitors cost one more sort and blob sum (∇·ω_σ).
//
// Device memory, bytes per particle (N_p³ = (refine·N)³ particles):
//   state: x, α, γ (24 each), σ (8), the AB2 history u_prev, dα_prev, dγ_prev (24 each)   152
//   u and ∇u of the last evaluation (96), which the reinitialisation, the grid velocity and
//     the monitors reuse as their FFT work space (two lattice spectra of 3 components and
//     the blob sums' real field: 72, and cuFFT's work area)                               96+
//   blob sums (DeviceBlobSums): the sorted particles' constants and stencil runs, the
//     permutation (88), and one int per lattice point (4)                                  92
//   the sums of the reinitialisation's second and third sets (the AB2 history's u·V and
//     dγ, summed in one pass with γ), kept while the first is transformed                 48
//   in all about 390 B, 52 GB at 512³ (2^27 particles), besides the FMM evaluator's own
//   buffers (fmm/evaluator.h; with vortex.velocity = lattice, u and ∇u apart: 96; with
//   vortex.diffusion = integrating-factor, the first half's point and blob strengths: 48) and
//   the CUDA context.
// On R > 1 ranks (the constructor with a slab; docs/design.md "The vortex solver on several
// GPUs") a rank holds its own particles' state, and every rank's particles gathered (80 B a
// particle of the lattice), the blob sums' sorted share, and the FFT space of its slab of the
// lattice (its planes and modes; core/fft_gpu.h GpuSlabFft, whose buffers add 32 B a lattice
// point of the slab and cuFFT's work areas).
#pragma once

#include <memory>

#include "vortex/solver.h"

namespace vh::vortex {

/// Device time of the last step's phases, seconds (CUDA events; the FMM by the host clock, as
/// the evaluation returns when its results are written). The evaluation is counted in the step
/// that uses it, whichever call (max_velocity or step) made it; 0 for a phase that did not run.
struct GpuStepTimes {
  double velocity = 0;   ///< u and ∇u: the FMM's evaluation, or the lattice's FFTs (vortex.velocity = lattice); wall
  double update = 0;     ///< stretching, AB2, core spreading, wrap
  double blob_sums = 0;  ///< cell sort and blob sums of the reinitialisation
  double fft_steps = 0;  ///< FFTs and per-mode kernels of the reinitialisation
  double rest = 0;       ///< the reinitialisation's other kernels (layouts, new lattice)
  bool reinitialised = false;
  fmm::Timings fmm_stages;  ///< the evaluator's own split
  /// R > 1: this rank's exchanges of the step (the gathers of the particles, the FMM's sum of
  /// the multipoles, the lattice transforms' all-to-alls): wall seconds and bytes sent to
  /// other ranks; and the particles it held at the step's evaluation (the load of its share).
  double exchange = 0, exchange_bytes = 0;
  long long particles = 0;
  /// R > 1: the FMM's sources at the step's evaluation: this rank's particles and the ghosts its
  /// near field reaches (vortex/halo_gpu.h), or every rank's where the FMM took the lists.
  long long sources = 0;
};

class GpuSolver : public SolverInterface {
 public:
  /// As Solver. Throws std::invalid_argument for reinit_from = blobs and vh::InputError
  /// without a visible GPU; allocates the device state for (refine·N)³ particles.
  GpuSolver(const Params& p, const Grid& g);
  /// On the ranks of grid_slab.comm, one GPU each (docs/design.md, "The vortex solver on
  /// several GPUs"): each rank holds the particles of its z-slab of the lattice, the FMM's
  /// targets and the blob sums' planes; the other ranks' particles that its FMM's near field and
  /// its blob sums reach come to it as ghosts (vortex/halo_gpu.h), the FMM's multipoles by the
  /// uniform levels' exchange (every rank's particles are gathered only where the FMM cannot take
  /// the uniform levels); the lattice's transforms go over the ranks' slabs (the spectral layout
  /// of core/slab.h). Collective.
  GpuSolver(const Params& p, const Slab& grid_slab);
  ~GpuSolver() override;
  GpuSolver(const GpuSolver&) = delete;
  GpuSolver& operator=(const GpuSolver&) = delete;

  using SolverInterface::set_velocity;
  using SolverInterface::velocity;
  RbfResult set_velocity(const SpectralVector& u, double t) override;
  RbfResult set_velocity(const SpectralSlab& u, double t) override;
  void step(double dt) override;
  double max_velocity() override;
  double max_gradient() override;
  void velocity(SpectralVector& u) override;
  void velocity(SpectralSlab& u) override;
  double time() const override;
  long steps() const override;
  Monitors monitors() override;
  long reinits() const override;
  double core_ratio_at_reinit() const override;
  double last_rbf_residual() const override;
  double last_div_removed() const override;
  RbfResult reinitialise() override;
  /// Copies the device state to the host (checkpoints), and back; the same State as Solver's,
  /// so a checkpoint of either restarts on the other.
  State state() const override;
  void set_state(const State& s) override;
  const fmm::Timings& last_timings() const override;
  bool device_velocity(const void* d[3]) override;

  /// The phases of the last step (waits for the device).
  GpuStepTimes last_step_times();
  /// Device memory this solver holds (its state and work space; not the FMM evaluator's).
  std::size_t device_bytes() const;
  /// Device memory its FMM evaluator's pool holds (fmm::GpuEvaluator::memory, reserved).
  std::size_t fmm_device_bytes() const;

  struct Impl;  ///< solver_gpu.cu

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace vh::vortex
