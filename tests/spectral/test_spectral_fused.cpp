// The CPU reference of the fused passes (spectral/fused.h) against the CPU solver: the chain
// ZI, YI, XC, YF, ZFP gives the solver's nonlinear term and its RK4 steps, for each dealias
// mode and viscosity treatment. (The GPU passes are compared with these in
// test_spectral_gpu.) Tolerance: fp64 round-off of O(M) DFT sums, far below 1e-12.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/initial_field.h"
#include "fused_test_util.h"
#include "spectral/rhs_kernel.h"
#include "spectral_test_util.h"

namespace vh::spectral {
namespace {

using test::rel_l2;

SpectralVector random_field(int n) { return test::random_field(n, 11); }

Params cpu_params(Dealias d, Viscosity v) {
  Params p;
  p.dealias = d;
  p.viscosity = v;
  p.nu = 0.01;
  return p;
}

TEST(SpectralFused, CpuPassesGiveTheNonlinearTerm) {
  const int n = 16;
  const SpectralVector u = random_field(n);
  for (Dealias d : {Dealias::three_halves, Dealias::two_thirds, Dealias::none}) {
    auto c = make_solver(cpu_params(d, Viscosity::integrating_factor), Grid{n}, Backend::cpu);
    c->set_velocity(u, 0);
    SpectralVector ref;
    c->nonlinear_term(ref);
    const kernel::Geometry g = kernel::make_geometry(n, d);
    fused::HostArrays h;
    test::set_state(g, u, h);
    test::cpu_evaluation(g, fused::StageArgs{}, h);
    const double err = rel_l2(test::get_state(g, h.a), ref);
    std::printf("[fused cpu nonlinear %s] rel L2 vs CpuSolver %.3e\n", to_string(d), err);
    EXPECT_LT(err, 1e-13);
  }
}

TEST(SpectralFused, CpuPassesGiveTheRk4Step) {
  const int n = 16;
  const SpectralVector u = random_field(n);
  for (Viscosity v : {Viscosity::integrating_factor, Viscosity::explicit_rk4})
    for (Dealias d : {Dealias::three_halves, Dealias::two_thirds, Dealias::none}) {
      auto c = make_solver(cpu_params(d, v), Grid{n}, Backend::cpu);
      c->set_velocity(u, 0);
      const double dt = 0.2 * Grid{n}.h() / c->max_velocity();
      const kernel::Geometry g = kernel::make_geometry(n, d);
      fused::HostArrays h;
      test::set_state(g, u, h);
      fused::run_pass_cpu(fused::Pass::z_inverse, g, fused::StageArgs{}, h);
      for (int step = 0; step < 2; ++step) {
        c->step(dt);
        for (int s = 1; s <= 4; ++s)
          test::cpu_evaluation(g, fused::StageArgs{s, v == Viscosity::explicit_rk4, 0.01, dt}, h, false);
      }
      SpectralVector ref;
      c->velocity(ref);
      const double err = rel_l2(test::get_state(g, h.u0), ref);
      std::printf("[fused cpu 2 steps %s %s] rel L2 vs CpuSolver %.3e\n", to_string(d),
                  v == Viscosity::explicit_rk4 ? "explicit" : "IF", err);
      EXPECT_LT(err, 1e-13);
    }
}

// The packing identities of the x pass: two real lines through one complex transform.
TEST(SpectralFused, XPackUnpackRoundTrip) {
  const int m = 12, nx = 5;
  std::vector<test::FCx> u(nx), w(nx);
  for (int k = 0; k < nx; ++k) {
    u[k] = {0.1 * k + 1, k == 0 ? 0 : -0.3 * k};
    w[k] = {0.2 - 0.05 * k, k == 0 ? 0 : 0.7 / (k + 1)};
  }
  // Z = U + iW on the full line, then (Z(k) + conj Z(−k))/2 = U, (Z(k) − conj Z(−k))/2i = W.
  std::vector<test::FCx> z(m);
  for (int j = 0; j < m; ++j) z[j] = kernel::x_pack(j, m, nx, u.data(), w.data());
  for (int k = 0; k < nx; ++k) {
    test::FCx p, q;
    kernel::x_unpack(z[k], z[(m - k) % m], p, q);
    EXPECT_NEAR(p.re, u[k].re, 1e-15);
    EXPECT_NEAR(p.im, u[k].im, 1e-15);
    EXPECT_NEAR(q.re, w[k].re, 1e-15);
    EXPECT_NEAR(q.im, w[k].im, 1e-15);
  }
}

}  // namespace
}  // namespace vh::spectral
