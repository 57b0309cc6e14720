// GPU back end against the CPU reference (issue 3, "Must show" 3): each kernel through the
// solver call that exercises it. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/device.h"
#include "core/initial_field.h"
#include "fused_test_util.h"
#include "spectral/solver.h"
#include "spectral_test_util.h"

namespace vh::spectral {
namespace {

using test::rel_l2;

SpectralVector random_field(int n) { return test::random_field(n, 11); }

/// How the GPU runs its transforms: cuFFT with callbacks, cuFFT with separate per-point
/// passes, cuFFT pruned transforms, or the fused cuFFTDx passes (spectral/fused.h).
enum class Fft { callbacks, plain, pruned, fused };
const char* name(Fft f) {
  return f == Fft::callbacks ? " callbacks" : f == Fft::plain ? " no-callbacks" : f == Fft::pruned ? " pruned" : " fused";
}

Params params(Dealias d, Viscosity v, bool single = false, Fft f = Fft::plain) {
  Params p;
  p.pruned_transforms = f == Fft::pruned;
  p.fft_callbacks = f == Fft::callbacks;
  p.transforms = f == Fft::fused ? Transforms::fused : Transforms::cufft;
  p.dealias = d;
  p.viscosity = v;
  p.nu = 0.01;
  p.single_precision = single;
  return p;
}

#define SKIP_WITHOUT_GPU() \
  if (!gpu_available()) GTEST_SKIP() << "no GPU visible"

// load_kernel, cross_kernel, post_kernel (kRhsOnly) and the cuFFT plans.
TEST(SpectralGpu, NonlinearTermMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const int n = 32;
  const SpectralVector u = random_field(n);
  for (Fft f : {Fft::callbacks, Fft::plain, Fft::pruned, Fft::fused})
    for (Dealias d : {Dealias::three_halves, Dealias::two_thirds, Dealias::none}) {
      auto c = make_solver(params(d, Viscosity::integrating_factor), Grid{n}, Backend::cpu);
      auto g = make_solver(params(d, Viscosity::integrating_factor, false, f), Grid{n}, Backend::gpu);
      c->set_velocity(u, 0);
      g->set_velocity(u, 0);
      SpectralVector a, b;
      c->nonlinear_term(a);
      g->nonlinear_term(b);
      const double err = rel_l2(b, a);
      std::printf("[gpu nonlinear %s%s] rel L2 vs CPU %.3e\n", to_string(d), name(f), err);
      EXPECT_LT(err, 1e-13);
    }
}

// The callback path is really taken (a failed callback plan falls back to separate passes
// silently but for one stderr line, which would make the Fft::callbacks cases above test
// the fallback), and it gives the separate passes' nonlinear term and 20-step state.
TEST(SpectralGpu, CallbackPathIsBuiltAndMatchesSeparatePasses) {
  SKIP_WITHOUT_GPU();
  const int n = 32;
  const SpectralVector u = random_field(n);
  for (bool single : {false, true})
    for (Dealias d : {Dealias::three_halves, Dealias::two_thirds, Dealias::none}) {
      auto cb = make_solver(params(d, Viscosity::integrating_factor, single, Fft::callbacks), Grid{n}, Backend::gpu);
      auto pl = make_solver(params(d, Viscosity::integrating_factor, single, Fft::plain), Grid{n}, Backend::gpu);
      EXPECT_TRUE(cb->uses_fft_callbacks()) << to_string(d) << (single ? " fp32" : " fp64");
      EXPECT_FALSE(pl->uses_fft_callbacks());
      cb->set_velocity(u, 0);
      pl->set_velocity(u, 0);
      SpectralVector a, b;
      cb->nonlinear_term(a);
      pl->nonlinear_term(b);
      const double en = rel_l2(a, b);
      const double dt = 0.2 * Grid{n}.h() / pl->max_velocity();
      for (int i = 0; i < 20; ++i) {
        cb->step(dt);
        pl->step(dt);
      }
      cb->velocity(a);
      pl->velocity(b);
      const double es = rel_l2(a, b);
      std::printf("[gpu callbacks vs separate passes %s %s] nonlinear %.3e, 20 steps %.3e\n", to_string(d),
                  single ? "fp32" : "fp64", en, es);
      EXPECT_LT(en, single ? 1e-5 : 1e-13);
      EXPECT_LT(es, single ? 1e-5 : 1e-12);
    }
}

// max_kernel and the N-size inverse plan.
TEST(SpectralGpu, MaxVelocityMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const int n = 32;
  const SpectralVector u = random_field(n);
  auto c = make_solver(params(Dealias::three_halves, Viscosity::integrating_factor), Grid{n}, Backend::cpu);
  auto g = make_solver(params(Dealias::three_halves, Viscosity::integrating_factor), Grid{n}, Backend::gpu);
  c->set_velocity(u, 0);
  g->set_velocity(u, 0);
  const double a = c->max_velocity(), b = g->max_velocity();
  std::printf("[gpu max velocity] cpu %.15f gpu %.15f\n", a, b);
  EXPECT_NEAR(b, a, 1e-13 * a);
}

// energy_kernel.
TEST(SpectralGpu, EnergiesMatchCpu) {
  SKIP_WITHOUT_GPU();
  const int n = 32;
  const SpectralVector u = random_field(n);
  auto c = make_solver(params(Dealias::none, Viscosity::integrating_factor), Grid{n}, Backend::cpu);
  auto g = make_solver(params(Dealias::none, Viscosity::integrating_factor), Grid{n}, Backend::gpu);
  c->set_velocity(u, 0);
  g->set_velocity(u, 0);
  const Energies a = c->energies(), b = g->energies();
  EXPECT_NEAR(b.K, a.K, 1e-13 * a.K);
  EXPECT_NEAR(b.enstrophy, a.enstrophy, 1e-13 * a.enstrophy);
}

// post_kernel in every RK4 stage: 20 steps, every dealias and viscosity treatment, fp64.
TEST(SpectralGpu, TwentyStepsMatchCpu) {
  SKIP_WITHOUT_GPU();
  const int n = 32;
  const SpectralVector u = random_field(n);
  for (Fft f : {Fft::callbacks, Fft::plain, Fft::pruned, Fft::fused})
  for (Viscosity v : {Viscosity::integrating_factor, Viscosity::explicit_rk4})
    for (Dealias d : {Dealias::three_halves, Dealias::two_thirds, Dealias::none}) {
      auto c = make_solver(params(d, v), Grid{n}, Backend::cpu);
      auto g = make_solver(params(d, v, false, f), Grid{n}, Backend::gpu);
      c->set_velocity(u, 0);
      g->set_velocity(u, 0);
      const double dt = 0.2 * Grid{n}.h() / c->max_velocity();
      for (int i = 0; i < 20; ++i) {
        c->step(dt);
        g->step(dt);
      }
      SpectralVector a, b;
      c->velocity(a);
      g->velocity(b);
      const double err = rel_l2(b, a);
      std::printf("[gpu 20 steps %s %s%s] rel L2 vs CPU %.3e\n", to_string(d),
                  v == Viscosity::explicit_rk4 ? "explicit" : "IF", name(f), err);
      EXPECT_LT(err, 1e-12);
      EXPECT_DOUBLE_EQ(g->time(), c->time());
      if (f == Fft::fused) {  // the state diagnostics read the state the fused passes left
        const Energies ec = c->energies(), eg = g->energies();
        EXPECT_NEAR(eg.K, ec.K, 1e-12 * ec.K);
        EXPECT_NEAR(eg.enstrophy, ec.enstrophy, 1e-12 * ec.enstrophy);
        EXPECT_NEAR(g->max_velocity(), c->max_velocity(), 1e-12 * c->max_velocity());
        for (int i = 0; i < 2; ++i) {  // and stepping goes on after max_velocity()
          c->step(dt);
          g->step(dt);
        }
        c->velocity(a);
        g->velocity(b);
        EXPECT_LT(rel_l2(b, a), 1e-12);
      }
    }
}

// fp32 path: same algorithm, agreement limited by single rounding (~1e-7 per operation).
TEST(SpectralGpu, SinglePrecisionTracksDouble) {
  SKIP_WITHOUT_GPU();
  const int n = 32;
  const SpectralVector u = random_field(n);
  auto c = make_solver(params(Dealias::three_halves, Viscosity::integrating_factor), Grid{n}, Backend::cpu);
  c->set_velocity(u, 0);
  const double dt = 0.2 * Grid{n}.h() / c->max_velocity();
  for (int i = 0; i < 20; ++i) c->step(dt);
  SpectralVector a;
  c->velocity(a);
  for (Fft f : {Fft::callbacks, Fft::plain, Fft::pruned, Fft::fused}) {
    auto g = make_solver(params(Dealias::three_halves, Viscosity::integrating_factor, true, f),
                         Grid{n}, Backend::gpu);
    g->set_velocity(u, 0);
    for (int i = 0; i < 20; ++i) g->step(dt);
    SpectralVector b;
    g->velocity(b);
    const double err = rel_l2(b, a);
    std::printf("[gpu fp32%s 20 steps] rel L2 vs CPU fp64 %.3e\n", name(f), err);
    EXPECT_LT(err, 1e-5);
  }
}

// The fused passes are really taken where asked (a fallback to cuFFT prints one stderr line
// and would make the Fft::fused cases above test cuFFT), for every dealias mode and both
// precisions at N = 32 (M = 48 and 32), and at the benchmark sizes 256³ 3/2 and 512³ 2/3.
TEST(SpectralGpu, FusedPathIsTaken) {
  SKIP_WITHOUT_GPU();
  if (!fused::built()) GTEST_SKIP() << "this build has no cuFFTDx (VH_MATHDX_DIR)";
  for (bool single : {false, true})
    for (Dealias d : {Dealias::three_halves, Dealias::two_thirds, Dealias::none}) {
      auto g = make_solver(params(d, Viscosity::integrating_factor, single, Fft::fused), Grid{32}, Backend::gpu);
      EXPECT_TRUE(g->uses_fused_transforms()) << to_string(d) << (single ? " fp32" : " fp64") << ": "
                                              << fused::unsupported_reason(kernel::make_geometry(32, d), single);
      auto c = make_solver(params(d, Viscosity::integrating_factor, single, Fft::plain), Grid{32}, Backend::gpu);
      EXPECT_FALSE(c->uses_fused_transforms());
    }
  for (auto [n, d] : {std::pair{256, Dealias::three_halves}, std::pair{512, Dealias::two_thirds}})
    EXPECT_EQ(fused::unsupported_reason(kernel::make_geometry(n, d), false), "") << n << " " << to_string(d);
}

// Each fused GPU kernel against its CPU reference (fused.cpp) on random inputs: every pass,
// every dealias mode at N = 32, the z-forward pass in every RK4 stage with both viscosity
// treatments. All arrays a pass may write are compared.
TEST(SpectralGpu, FusedPassesMatchCpuReference) {
  SKIP_WITHOUT_GPU();
  if (!fused::built()) GTEST_SKIP() << "this build has no cuFFTDx (VH_MATHDX_DIR)";
  using fused::Pass;
  const char* names[] = {"ZI", "YI", "XC", "YF", "ZFP"};
  for (Dealias d : {Dealias::three_halves, Dealias::two_thirds, Dealias::none}) {
    const kernel::Geometry g = kernel::make_geometry(32, d);
    std::vector<std::pair<Pass, fused::StageArgs>> cases;
    for (Pass p : {Pass::z_inverse, Pass::y_inverse, Pass::x_cross, Pass::y_forward}) cases.push_back({p, {}});
    for (bool expl : {false, true})
      for (int s = kernel::kRhsOnly; s <= kernel::kStage4; ++s) cases.push_back({Pass::z_forward_post, {s, expl, 0.01, 0.003}});
    for (const auto& [p, args] : cases) {
      fused::HostArrays a, b;
      test::random_arrays(g, 7, a);
      b = a;
      fused::run_pass_cpu(p, g, args, a);
      fused::run_pass_gpu(p, g, args, b);
      double err = 0;
      for (auto m : {&fused::HostArrays::u0, &fused::HostArrays::acc, &fused::HostArrays::a, &fused::HostArrays::zb,
                     &fused::HostArrays::yb})
        err = std::max(err, test::max_rel(b.*m, a.*m));
      std::printf("[fused pass %s %s stage %d%s] max rel diff GPU vs CPU %.3e\n", names[int(p)], to_string(d),
                  args.stage, args.explicit_visc ? " explicit" : "", err);
      EXPECT_LT(err, 1e-13) << names[int(p)] << " " << to_string(d) << " stage " << args.stage;
    }
  }
}

}  // namespace
}  // namespace vh::spectral
