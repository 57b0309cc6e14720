// The vortex solver with its state on the GPU (vortex/solver_gpu.h) against the CPU Solver, the
// reference, one mechanism at a time so that a failure names its place:
//   - the initial particles (set_velocity: resampling, spectral curl, filter, lattice values)
//     and the grid velocity of lattice particles: the same per-mode functions (remesh_kernel.h,
//     rounded alike: solver_gpu.cu has no fused multiply-adds), so they differ by the FFTs'
//     rounding only;
//   - the reinitialisation from the same moved particles with an AB2 history, and the grid
//     velocity of moved particles (blob sums, FFTs, per-mode steps, new lattice values): the
//     blob sums differ by ≤ 1e-13 (test_blobs_gpu), the ÷ s and ÷ S of the modes the filter keeps
//     amplify that at most 81× in the sphere |k| ≤ N/3 that holds nearly all of the field (s ≥
//     exp(−(2π/3)²/2) = 0.11 there, σ₀ = h): 1e-12; the cube filter's corners (s down to 0.11³
//     at |k| = √3·N/3) hold a small share of it and amplify more: 1e-11 for α and dα/dt, the
//     arrays divided by s twice (measured 2.3e-12 and 7.3e-13 at refine 1.5);
//   - five steps at 32³, where the two FMMs (CPU and GPU, both to fmm.tolerance 1e-6) differ: the
//     state and the grid velocity within the FMM's error;
//   - vortex.velocity = lattice: five steps against the CPU's lattice velocity and the GPU's FMM;
//   - a GPU restart (state → set_state on a fresh solver) against the run in one go: bit for bit;
//   - three steps at 8³ with FMM p 4, small enough for compute-sanitizer racecheck (the two above
//     take more than 480 s under it): equal to round-off, as both FMMs sum the same expansions.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/initial_field.h"
#include "vortex/solver.h"
#include "vortex/solver_gpu.h"

namespace vh::vortex {
namespace {

double rel_l2(const std::vector<Vec3>& a, const std::vector<Vec3>& b) {
  if (a.size() != b.size()) return INFINITY;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (int d = 0; d < 3; ++d) {
      num += (a[i][d] - b[i][d]) * (a[i][d] - b[i][d]);
      den += b[i][d] * b[i][d];
    }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

/// Relative L2 difference of two coefficient sets (Parseval: the same as on the grid).
double rel_l2(const SpectralVector& a, const SpectralVector& b) {
  double num = 0, den = 0;
  for (int d = 0; d < 3; ++d)
    for (std::size_t m = 0; m < b.c[d].size(); ++m) {
      num += std::norm(a.c[d][m] - b.c[d][m]);
      den += std::norm(b.c[d][m]);
    }
  return std::sqrt(num / den);
}

/// A turbulence-like initial velocity (k⁴ exp spectrum peaking at k_p, core/initial_field.h).
InitialField initial(int n, double k_p, unsigned seed) {
  InitialFieldSpec spec;
  spec.k_p = k_p;
  spec.nu = 0.02;
  spec.seed = seed;
  return make_initial_field(spec, Grid{n});
}

Params params(double nu) {
  Params p;
  p.nu = nu;
  p.refine = 1;  // the cases that compare other refines set them
  p.fmm.tolerance = 1e-6;
  p.fmm.periodic = true;
  return p;
}

/// The two states, array by array within `tol` (relative L2; α and dα/dt within alpha_tol where
/// given), positions and cores bit for bit where `exact_positions`, and the scalars equal.
void expect_states_near(const State& gpu, const State& cpu, double tol, bool exact_positions, const std::string& what,
                        double alpha_tol = 0) {
  const Particles &g = gpu.particles, &c = cpu.particles;
  if (exact_positions) {
    EXPECT_TRUE(g.x == c.x) << what << ": positions";
    EXPECT_TRUE(g.sigma == c.sigma) << what << ": cores";
  } else {
    EXPECT_LE(rel_l2(g.x, c.x), tol) << what << ": positions";
  }
  const double ta = alpha_tol > 0 ? alpha_tol : tol;
  const struct {
    const char* name;
    const std::vector<Vec3>&a, &b;
    double tol;
  } arrays[] = {{"alpha", g.alpha, c.alpha, ta},
                {"gamma", g.gamma, c.gamma, tol},
                {"u_prev", gpu.u_prev, cpu.u_prev, tol},
                {"dalpha_prev", gpu.dalpha_prev, cpu.dalpha_prev, ta},
                {"dgamma_prev", gpu.dgamma_prev, cpu.dgamma_prev, tol}};
  for (const auto& a : arrays) {
    ASSERT_EQ(a.a.size(), a.b.size()) << what << ": " << a.name;
    if (a.b.empty()) continue;
    const double e = rel_l2(a.a, a.b);
    EXPECT_LE(e, a.tol) << what << ": " << a.name;
    std::printf("%s: %s relative L2 GPU - CPU %.2e\n", what.c_str(), a.name, e);
  }
  EXPECT_EQ(gpu.t, cpu.t) << what;
  EXPECT_EQ(gpu.t_reinit, cpu.t_reinit) << what;
  EXPECT_EQ(gpu.dt_prev, cpu.dt_prev) << what;
  EXPECT_EQ(gpu.steps, cpu.steps) << what;
  EXPECT_EQ(gpu.since_reinit, cpu.since_reinit) << what;
  EXPECT_EQ(gpu.reinits, cpu.reinits) << what;
}

void expect_states_equal(const State& a, const State& b, const std::string& what) {
  EXPECT_TRUE(a.particles.x == b.particles.x) << what << ": positions";
  EXPECT_TRUE(a.particles.alpha == b.particles.alpha) << what << ": alpha";
  EXPECT_TRUE(a.particles.gamma == b.particles.gamma) << what << ": gamma";
  EXPECT_TRUE(a.particles.sigma == b.particles.sigma) << what << ": sigma";
  EXPECT_TRUE(a.u_prev == b.u_prev) << what << ": u_prev";
  EXPECT_TRUE(a.dalpha_prev == b.dalpha_prev) << what << ": dalpha_prev";
  EXPECT_TRUE(a.dgamma_prev == b.dgamma_prev) << what << ": dgamma_prev";
  EXPECT_EQ(a.t, b.t) << what;
  EXPECT_EQ(a.steps, b.steps) << what;
  EXPECT_EQ(a.reinits, b.reinits) << what;
}

/// The monitors of both: Σγ (0 up to its sum's round-off) and the maxima within `tol` of the
/// vorticity's scale (∇·ω_σ of a projected field is a small difference of O(|ω|) terms), and the
/// projection's share ‖k·ω̂‖/‖|k|ω̂‖ (dimensionless, O(1e-3)) within `tol`.
void expect_monitors_near(const Monitors& g, const Monitors& c, double tol, const std::string& what) {
  const double w = c.max_omega;
  for (int d = 0; d < 3; ++d) EXPECT_NEAR(g.total_strength[d], c.total_strength[d], tol * w) << what;
  EXPECT_NEAR(g.max_div_omega, c.max_div_omega, tol * w) << what;
  EXPECT_NEAR(g.max_omega, c.max_omega, tol * w) << what;
  EXPECT_NEAR(g.div_removed, c.div_removed, tol) << what;
  EXPECT_EQ(g.core_ratio, c.core_ratio) << what;
  EXPECT_EQ(g.reinits, c.reinits) << what;
  std::printf("%s: monitors GPU/CPU: max|w| %.17g / %.17g, max|div w| %.6e / %.6e, projected %.6e / %.6e\n",
              what.c_str(), g.max_omega, c.max_omega, g.max_div_omega, c.max_div_omega, g.div_removed, c.div_removed);
}

// The initial particles, on the grid's lattice and on one twice as fine, RBF and direct strengths,
// and the grid velocity of lattice particles (Biot–Savart of the lattice field, truncated).
TEST(VortexGpu, InitialParticlesEqualTheCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  for (double refine : {1.0, 1.5, 2.0})
    for (Init init : {Init::rbf, Init::direct}) {
      const int n = refine == 2 ? 12 : 16;
      const InitialField f = initial(n, 3, 5);
      Params p = params(f.nu);
      p.refine = refine;
      p.init = init;
      Solver cpu(p, Grid{n});
      GpuSolver gpu(p, Grid{n});
      cpu.set_velocity(f.u, 0.25);
      gpu.set_velocity(f.u, 0.25);
      const std::string what = "n " + std::to_string(n) + " refine " + std::to_string(refine).substr(0, 3) +
                               (init == Init::rbf ? " rbf" : " direct");
      expect_states_near(gpu.state(), cpu.state(), 1e-12, true, what);
      SpectralVector uc, ug;
      cpu.velocity(uc);
      gpu.velocity(ug);
      const double e = rel_l2(ug, uc);
      EXPECT_LE(e, 1e-12) << what << ": grid velocity";
      std::printf("%s: grid velocity relative L2 GPU - CPU %.2e\n", what.c_str(), e);
      expect_monitors_near(gpu.monitors(), cpu.monitors(), 1e-12, what);
    }
}

// A state with moved particles and an AB2 history (two CPU steps without reinitialisation) set on
// both: the grid velocity of the moved particles (blob sums, pending diffusion), then one
// reinitialisation, then the new lattice's velocity and monitors.
TEST(VortexGpu, ReinitialisationEqualsTheCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  struct Case {
    const char* name;
    int n;
    double refine;
    Diffusion diffusion;
    bool project;
  };
  for (const Case& c : {Case{"defaults (lattice diffusion, projection, filter)", 16, 1, Diffusion::lattice, true},
                        Case{"core spreading, no projection", 16, 1, Diffusion::core_spreading, false},
                        Case{"refine 1.5", 12, 1.5, Diffusion::lattice, true},
                        Case{"refine 2", 8, 2, Diffusion::lattice, true}}) {
    const InitialField f = initial(c.n, 2.5, 9);
    Params p = params(0.05);  // a visible viscous factor over the two steps
    p.refine = c.refine;
    p.diffusion = c.diffusion;
    p.project = c.project;
    p.reinit_every = 0;
    p.max_core_ratio = 10;
    Solver run(p, Grid{c.n});
    run.set_velocity(f.u, 0.0);
    const double dt = 0.4 * Grid{lattice_points_per_direction(c.refine, c.n)}.h() / run.max_velocity();
    run.step(dt);
    run.step(1.2 * dt);
    const State moved = run.state();
    ASSERT_FALSE(moved.u_prev.empty());

    Solver cpu(p, Grid{c.n});
    GpuSolver gpu(p, Grid{c.n});
    cpu.set_state(moved);
    gpu.set_state(moved);
    expect_states_equal(gpu.state(), moved, std::string(c.name) + ": set_state then state");
    SpectralVector uc, ug;
    cpu.velocity(uc);
    gpu.velocity(ug);
    EXPECT_LE(rel_l2(ug, uc), 1e-12) << c.name << ": grid velocity of the moved particles";
    std::printf("%s: moved particles' grid velocity relative L2 GPU - CPU %.2e\n", c.name, rel_l2(ug, uc));

    cpu.reinitialise();
    gpu.reinitialise();
    expect_states_near(gpu.state(), cpu.state(), 1e-12, true, c.name, 1e-11);
    EXPECT_NEAR(gpu.last_div_removed(), cpu.last_div_removed(), 1e-12) << c.name;
    cpu.velocity(uc);
    gpu.velocity(ug);
    EXPECT_LE(rel_l2(ug, uc), 1e-12) << c.name << ": grid velocity after the reinitialisation";
    expect_monitors_near(gpu.monitors(), cpu.monitors(), 1e-12, c.name);
  }
}

/// Relative L2 of b's grid velocity against a's, printed with `what`.
double grid_velocity_difference(SolverInterface& a, SolverInterface& b, const char* what) {
  SpectralVector va, vb;
  a.velocity(va);
  b.velocity(vb);
  const double e = rel_l2(vb, va);
  std::printf("%s: grid velocity relative L2 GPU - CPU %.2e\n", what, e);
  return e;
}

/// Sets f on every solver, then takes five steps of varying length (the variable AB2 weights) on
/// each: 0.5 h / max|u| of the first one's initial particles, 10 % longer each step. Returns
/// each solver's initial max|u|.
std::vector<double> five_steps(const InitialField& f, const std::vector<SolverInterface*>& solvers) {
  std::vector<double> umax;
  for (SolverInterface* s : solvers) {
    s->set_velocity(f.u, 0.0);
    umax.push_back(s->max_velocity());
  }
  const double dt = 0.5 * Grid{f.u.grid.n}.h() / umax.front();
  for (int i = 0; i < 5; ++i)
    for (SolverInterface* s : solvers) s->step(dt * (1 + 0.1 * i));
  return umax;
}

// Five steps of the default method at 32³ with steps of varying length (the variable AB2
// weights), each solver with its own FMM to fmm.tolerance 1e-6 (θ 0.4, p 14, double; measured
// error of u 6e-8). An FMM error enters u_prev as it is and the rates and strengths about 3×
// larger (measured here on the CPU, p 8 against p 20 at θ 0.4: u_prev 1.8e-6, dα_prev 5.8e-6,
// α 3.6e-6, γ 1.5e-6, grid velocity 9.6e-7): 1e-5 is 10× the tolerance of u at its 3× for the
// rates, and 1e-5 of max |ω| for the monitors' maxima.
TEST(VortexGpu, FiveStepsEqualTheCpuWithinTheFmmTolerance) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const int n = 32;
  const InitialField f = initial(n, 3, 11);
  const Params p = params(f.nu);
  Solver cpu(p, Grid{n});
  GpuSolver gpu(p, Grid{n});
  const std::vector<double> u0 = five_steps(f, {&cpu, &gpu});
  const double uc = u0[0];
  EXPECT_NEAR(u0[1], uc, 1e-5 * uc) << "max |u| of the initial particles";
  expect_states_near(gpu.state(), cpu.state(), 1e-5, true, "32^3, 5 steps");
  EXPECT_LE(grid_velocity_difference(cpu, gpu, "32^3, 5 steps"), 1e-5) << "grid velocity after 5 steps";
  EXPECT_NEAR(gpu.max_velocity(), cpu.max_velocity(), 1e-5 * uc);
  const double gc = cpu.max_gradient();
  EXPECT_NEAR(gpu.max_gradient(), gc, 1e-5 * gc) << "max |du_i/dx_j| (time.lcfl)";
  std::printf("32^3, 5 steps: max|du_i/dx_j| GPU %.10f CPU %.10f\n", gpu.max_gradient(), gc);
  expect_monitors_near(gpu.monitors(), cpu.monitors(), 1e-5, "32^3, 5 steps");
}

// The same with fmm.m2l = fft (the deck's default: the lattice's complete tree by its uniform
// levels, fmm/uniform_gpu.h), which must take that path (its count of translations is the
// stencils', not the lists') and stay as close to the CPU.
TEST(VortexGpu, FiveStepsWithTheUniformLevelsEqualTheCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const int n = 32;
  const InitialField f = initial(n, 3, 11);
  Params p = params(f.nu);
  p.fmm.m2l = "fft";
  Solver cpu(params(f.nu), Grid{n});
  GpuSolver gpu(p, Grid{n}), lists(params(f.nu), Grid{n});
  const std::vector<double> u0 = five_steps(f, {&cpu, &gpu, &lists});
  EXPECT_NEAR(u0[1], u0[0], 1e-5 * u0[0]) << "max |u| of the initial particles";
  expect_states_near(gpu.state(), cpu.state(), 1e-5, true, "fmm.m2l fft, 32^3, 5 steps");
  EXPECT_LE(grid_velocity_difference(cpu, gpu, "fmm.m2l fft, 32^3, 5 steps"), 1e-5) << "grid velocity after 5 steps";
  const long long nf = gpu.last_step_times().fmm_stages.n_m2l, nl = lists.last_step_times().fmm_stages.n_m2l;
  std::printf("32^3, 5 steps, fmm.m2l fft: %lld translations a step against the lists' %lld\n", nf, nl);
  EXPECT_NE(nf, nl);
}

// vortex.velocity = lattice on the GPU (blob_velocity_kernel, the strided joins, the self pair)
// against the CPU Solver's lattice_rhs: the same per-mode function rounded alike, so five steps
// at 32³ differ by what the reinitialisations already do (the blob sums' order and the FFTs:
// 1e-12 a step, above) — within 1e-10; and against the GPU's own FMM within the FMM's tolerance.
TEST(VortexGpu, LatticeVelocityEqualsTheCpuAndTheFmm) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const int n = 32;
  const InitialField f = initial(n, 3, 11);
  Params p = params(f.nu);
  p.velocity = Velocity::lattice;
  Solver cpu(p, Grid{n});
  GpuSolver gpu(p, Grid{n}), fmm(params(f.nu), Grid{n});
  const std::vector<double> u0 = five_steps(f, {&cpu, &gpu, &fmm});
  EXPECT_NEAR(u0[1], u0[0], 1e-12 * u0[0]) << "max |u| of the initial particles";
  expect_states_near(gpu.state(), cpu.state(), 1e-10, true, "lattice velocity GPU - CPU, 32^3, 5 steps");
  expect_states_near(gpu.state(), fmm.state(), 1e-5, true, "GPU lattice velocity - GPU FMM, 32^3, 5 steps");
  EXPECT_LE(grid_velocity_difference(cpu, gpu, "lattice velocity, 32^3, 5 steps"), 1e-10) << "grid velocity after 5 steps";
  EXPECT_GT(gpu.last_step_times().velocity, 0.0);
  EXPECT_EQ(gpu.last_step_times().fmm_stages.p2p, 0.0) << "no FMM evaluation";
}

// vortex.diffusion = integrating-factor on the GPU (mode_steps_kernel's increment and factor,
// add_increments_kernel after advance_kernel) against the CPU Solver, lattice velocity, five steps of varying
// length at 32³ with ν 0.05 (x = ν|k|²Δt up to 0.3): within 1e-10 as the lattice velocity above;
// and a state off the lattice is refused by both (exit 2 in a run).
TEST(VortexGpu, IntegratingFactorEqualsTheCpu) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const int n = 32;
  const InitialField f = initial(n, 3, 11);
  Params p = params(0.05);
  p.velocity = Velocity::lattice;
  p.diffusion = Diffusion::integrating_factor;
  Solver cpu(p, Grid{n});
  GpuSolver gpu(p, Grid{n});
  five_steps(f, {&cpu, &gpu});
  expect_states_near(gpu.state(), cpu.state(), 1e-10, true, "integrating factor GPU - CPU, 32^3, 5 steps");
  EXPECT_LE(grid_velocity_difference(cpu, gpu, "integrating factor, 32^3, 5 steps"), 1e-10) << "grid velocity after 5 steps";
  State off = gpu.state();
  off.since_reinit = 1;
  EXPECT_THROW(gpu.set_state(off), vh::InputError);
  EXPECT_THROW(cpu.set_state(off), vh::InputError);
}

// The GPU run is deterministic (the blob sums and reductions add in a fixed order; the FMM
// evaluator's results are its own), and a restart from its state on a fresh solver continues it
// bit for bit: the state holds everything the step needs. With reinit_every 1 the one-go run's
// evaluations reuse the evaluator's tree (same_positions) where the restarted one builds it, with
// 2 the restart falls between reinitialisations. Also across the checkpoint's other reader: the
// GPU state continues on the CPU Solver (within the FMMs' difference).
TEST(VortexGpu, RestartContinuesBitForBit) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const int n = 16;
  const InitialField f = initial(n, 3, 13);
  for (int every : {1, 2}) {
    Params p = params(f.nu);
    p.reinit_every = every;
    p.diffusion = automatic_diffusion(p);  // the deck's default for each
    const std::string what = "reinit_every " + std::to_string(every) + ": ";
    auto run = [&](SolverInterface& s, int steps, double dt) {
      for (int i = 0; i < steps; ++i) s.step(dt * (1 + 0.05 * s.steps()));
    };
    GpuSolver a(p, Grid{n}), b(p, Grid{n});
    a.set_velocity(f.u, 0.0);
    b.set_velocity(f.u, 0.0);
    const double dt = 0.5 * Grid{n}.h() / a.max_velocity();
    run(a, 5, dt);
    run(b, 5, dt);
    expect_states_equal(a.state(), b.state(), what + "two runs of 5 steps (a failure here is the evaluation's)");

    GpuSolver c(p, Grid{n});
    c.set_velocity(f.u, 0.0);
    run(c, 3, dt);
    const State mid = c.state();
    EXPECT_EQ(mid.since_reinit, every == 1 ? 0 : 1) << what;
    GpuSolver d(p, Grid{n});
    d.set_state(mid);
    run(d, 2, dt);
    expect_states_equal(d.state(), a.state(), what + "restarted after 3 steps, 2 more");

    Solver e(p, Grid{n});
    e.set_state(mid);
    run(e, 2, dt);
    expect_states_near(a.state(), e.state(), 1e-5, every == 1, what + "GPU state continued on the CPU");
  }
}

// The steps of the GPU solver sized for compute-sanitizer racecheck (scripts/device-check.sh
// sanitize, unit vortex_steps_small): FiveSteps and RestartContinues did not finish under it in
// 480 s (bench/RESULTS.md). The 8³ lattice (refine·N = 8, the smallest allowed), FMM p 4, θ 0.6,
// ncrit 128 (a tree of one level: 8 leaves of the lattice's 4³ points, up to 125 when moved),
// three steps of varying length with reinit_every 2: a first step without history, an AB2 step
// of moved particles, a reinitialisation that remeshes the AB2 history, an AB2 step from it;
// then max |u|, the grid velocity and the monitors. Tolerance: in double precision (set, not
// auto) the two FMMs sum the same expansions over the same tree and lists (fmm/README.md), so
// they differ by round-off (≤ 1e-10 asserted in test_fmm_gpu, 2.7e-15 measured), not by the
// FMM's error (p 4: ~1e-3); a reinitialisation adds ≤ 1e-12 (above), and three steps a few of
// each: 1e-9 is 10× the bound asserted for one evaluation. (A particle moved to within
// round-off of a leaf's face could fall in another leaf on one side, a difference of the FMM's
// error: at 512 particles and three steps, not seen.)
TEST(VortexGpu, SanitizerSizedSteps) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const int n = 8;
  const double tol = 1e-9;
  const InitialField f = initial(n, 2, 17);
  Params p = params(f.nu);
  p.fmm.tolerance = 1e-3;  // far field beyond ρ ≈ 4 (1 − g < 1e-3; 1e-6: 5.5): more pairs to the M2L
  p.fmm.p = 4;
  p.fmm.theta = 0.6;
  p.fmm.ncrit = 128;
  p.fmm.precision = "double";
  p.reinit_every = 2;
  p.diffusion = automatic_diffusion(p);
  Solver cpu(p, Grid{n});
  GpuSolver gpu(p, Grid{n});
  cpu.set_velocity(f.u, 0.0);
  gpu.set_velocity(f.u, 0.0);
  const double uc = cpu.max_velocity(), ug = gpu.max_velocity();
  EXPECT_NEAR(ug, uc, tol * uc) << "max |u| of the initial particles";
  const double dt = 0.5 * Grid{n}.h() / uc;
  for (int i = 0; i < 3; ++i) {
    cpu.step(dt * (1 + 0.1 * i));
    gpu.step(dt * (1 + 0.1 * i));
    if (i == 1) {
      ASSERT_EQ(cpu.reinits(), 1);
      expect_states_near(gpu.state(), cpu.state(), tol, true, "8^3, 2 steps (reinitialised)");
    }
  }
  expect_states_near(gpu.state(), cpu.state(), tol, false, "8^3, 3 steps");
  EXPECT_LE(grid_velocity_difference(cpu, gpu, "8^3, 3 steps"), tol) << "grid velocity after 3 steps";
  EXPECT_NEAR(gpu.max_velocity(), cpu.max_velocity(), tol * uc);
  expect_monitors_near(gpu.monitors(), cpu.monitors(), tol, "8^3, 3 steps");
}

}  // namespace
}  // namespace vh::vortex
