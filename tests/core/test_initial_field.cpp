// The initial field: prescribed shell energies, solenoidal, requested u′ and Re_λ,
// deterministic in the seed, and bit-identical between the CPU and the GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/diagnostics.h"
#include "core/error.h"
#include "core/fft.h"
#include "core/initial_field.h"
#ifdef VH_HAVE_CUDA
#include <cuda_runtime.h>
#include <cufft.h>

#include "core/device.h"
#endif

namespace {

using vh::Grid;

double rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

vh::InitialFieldSpec random_spec() {
  vh::InitialFieldSpec s;
  s.k_p = 3.0;
  s.u_prime = 0.8;
  s.Re_lambda = 60.0;
  s.seed = 42;
  return s;
}

TEST(InitialField, ShellEnergiesAreThePrescribedOnes) {
  for (auto shape : {vh::SpectrumShape::k4exp, vh::SpectrumShape::pope}) {
    const Grid g{32};
    auto spec = random_spec();
    spec.shape = shape;
    spec.pope_L = 0.5;
    spec.pope_eta = 0.05;
    const auto f = vh::make_initial_field(spec, g);
    const auto E = vh::energy_spectrum(f.u);
    const vh::ShellTable shells(g);
    double sum = 0;
    for (std::size_t n = 1; n < E.size(); ++n)
      if (shells.modes[n] > 0) sum += vh::model_spectrum(spec, double(n));
    for (std::size_t n = 1; n < E.size(); ++n) {
      if (shells.modes[n] == 0) continue;
      const double target = vh::model_spectrum(spec, double(n)) * f.K0 / sum;
      if (target < 1e-300) continue;
      EXPECT_LT(rel(E[n], target), 1e-10) << vh::to_string(shape) << " shell " << n;
    }
    EXPECT_EQ(E[0], 0.0);
  }
}

TEST(InitialField, SolenoidalRealAndAtTheRequestedUprimeAndReLambda) {
  const Grid g{32};
  const auto spec = random_spec();
  const auto f = vh::make_initial_field(spec, g);
  vh::Fft3d fft(g.n);

  // Physical divergence from spectral derivatives, against max|u|.
  vh::VectorField u;
  fft.inverse(f.u, u);
  std::vector<vh::Complex> d(g.modes(), 0.0), tmp;
  for (int c = 0; c < 3; ++c) {
    vh::derivative(f.u, c, c, tmp);
    for (std::size_t m = 0; m < d.size(); ++m) d[m] += tmp[m];
  }
  std::vector<double> div(g.points());
  fft.inverse(d.data(), div.data());
  double umax = 0, dmax = 0;
  for (int c = 0; c < 3; ++c)
    for (double v : u.c[c]) umax = std::max(umax, std::abs(v));
  for (double v : div) dmax = std::max(dmax, std::abs(v));
  EXPECT_LE(dmax, 1e-12 * umax);

  // Hermitian symmetry: the field is real, so forward(inverse(c)) gives c back.
  vh::SpectralVector back(g);
  fft.forward(u, back);
  double err = 0, norm = 0;
  for (int c = 0; c < 3; ++c)
    for (std::size_t m = 0; m < g.modes(); ++m) {
      err = std::max(err, std::abs(back.c[c][m] - f.u.c[c][m]));
      norm = std::max(norm, std::abs(f.u.c[c][m]));
    }
  EXPECT_LT(err, 1e-14 * norm);

  const vh::Statistics s = vh::statistics(f.u, f.nu, fft);
  EXPECT_LT(rel(s.u_prime, spec.u_prime), 1e-10);
  EXPECT_LT(rel(s.Re_lambda, spec.Re_lambda), 1e-10);
  EXPECT_LT(rel(f.K0, 1.5 * spec.u_prime * spec.u_prime), 1e-14);
}

TEST(InitialField, DeterministicInTheSeed) {
  const Grid g{16};
  auto spec = random_spec();
  const auto a = vh::make_initial_field(spec, g);
  const auto b = vh::make_initial_field(spec, g);
  spec.seed = 43;
  const auto c = vh::make_initial_field(spec, g);
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(std::memcmp(a.u.c[d].data(), b.u.c[d].data(), g.modes() * sizeof(vh::Complex)), 0);
    EXPECT_NE(std::memcmp(a.u.c[d].data(), c.u.c[d].data(), g.modes() * sizeof(vh::Complex)), 0);
  }
}

TEST(InitialField, TaylorGreenIsExact) {
  const Grid g{16};
  vh::InitialFieldSpec spec;
  spec.shape = vh::SpectrumShape::taylor_green;
  spec.nu = 1.0 / 1600;
  const auto f = vh::make_initial_field(spec, g);
  vh::Fft3d fft(g.n);
  vh::VectorField u;
  fft.inverse(f.u, u);
  double err = 0;
  const double h = g.h();
  for (int k = 0; k < g.n; ++k)
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.n; ++i) {
        const std::size_t p = g.index(i, j, k);
        err = std::max({err, std::abs(u.c[0][p] - std::sin(i * h) * std::cos(j * h) * std::cos(k * h)),
                        std::abs(u.c[1][p] + std::cos(i * h) * std::sin(j * h) * std::cos(k * h)),
                        std::abs(u.c[2][p])});
      }
  EXPECT_LT(err, 1e-15);
  EXPECT_DOUBLE_EQ(f.K0, 0.125);
  EXPECT_EQ(f.nu, 1.0 / 1600);
}

TEST(InitialField, BadSpecsAreInputErrors) {
  auto spec = random_spec();
  spec.nu = 0.01;  // Re_lambda given too
  EXPECT_THROW(vh::make_initial_field(spec, Grid{8}), vh::InputError);
  spec = random_spec();
  spec.Re_lambda = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(vh::make_initial_field(spec, Grid{8}), vh::InputError);
  spec = random_spec();
  spec.Re_lambda = std::numeric_limits<double>::quiet_NaN();
  spec.nu = -1;
  EXPECT_THROW(vh::make_initial_field(spec, Grid{8}), vh::InputError);
  spec = random_spec();
  spec.K0 = 1.0;
  EXPECT_THROW(vh::make_initial_field(spec, Grid{8}), vh::InputError);
}

#ifdef VH_HAVE_CUDA
TEST(InitialFieldGpu, BitIdenticalCoefficientsAndPhysicalFieldsAgree) {
  if (!vh::gpu_available()) GTEST_SKIP() << "no GPU visible";
  const Grid g{64};
  const auto spec = random_spec();
  const auto cpu = vh::make_initial_field(spec, g);
  void* d[3];
  for (auto& p : d) ASSERT_EQ(cudaMalloc(&p, g.modes() * sizeof(vh::Complex)), cudaSuccess);
  const auto gpu = vh::make_initial_field_device(spec, g, d);
  EXPECT_EQ(gpu.nu, cpu.nu);
  EXPECT_EQ(gpu.K0, cpu.K0);
  std::vector<vh::Complex> h(g.modes());
  std::vector<double> phys_gpu(g.points()), phys_cpu(g.points());
  double* d_real = nullptr;
  ASSERT_EQ(cudaMalloc(&d_real, g.points() * sizeof(double)), cudaSuccess);
  cufftHandle plan;
  ASSERT_EQ(cufftPlan3d(&plan, g.n, g.n, g.n, CUFFT_Z2D), CUFFT_SUCCESS);
  vh::Fft3d fft(g.n);
  for (int c = 0; c < 3; ++c) {
    ASSERT_EQ(cudaMemcpy(h.data(), d[c], g.modes() * sizeof(vh::Complex), cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(std::memcmp(h.data(), cpu.u.c[c].data(), g.modes() * sizeof(vh::Complex)), 0)
        << "component " << c << " differs in some bit";
    // Physical fields: cuFFT C2R (destroys its input, which we no longer need) vs FFTW.
    ASSERT_EQ(cufftExecZ2D(plan, static_cast<cufftDoubleComplex*>(d[c]), d_real), CUFFT_SUCCESS);
    ASSERT_EQ(cudaMemcpy(phys_gpu.data(), d_real, g.points() * sizeof(double),
                         cudaMemcpyDeviceToHost), cudaSuccess);
    fft.inverse(cpu.u.c[c].data(), phys_cpu.data());
    double num = 0, den = 0;
    for (std::size_t p = 0; p < g.points(); ++p) {
      num += (phys_gpu[p] - phys_cpu[p]) * (phys_gpu[p] - phys_cpu[p]);
      den += phys_cpu[p] * phys_cpu[p];
    }
    EXPECT_LT(std::sqrt(num / den), 1e-14) << "component " << c;
  }
  cufftDestroy(plan);
  cudaFree(d_real);
  for (auto p : d) cudaFree(p);
}

/// A copy of host coefficients on the device, freed at scope exit.
struct DeviceCoefficients {
  const void* ptr[3] = {nullptr, nullptr, nullptr};
  explicit DeviceCoefficients(const vh::SpectralVector& u) {
    for (int c = 0; c < 3; ++c) {
      void* p = nullptr;
      const std::size_t bytes = u.grid.modes() * sizeof(vh::Complex);
      if (cudaMalloc(&p, bytes) != cudaSuccess || cudaMemcpy(p, u.c[c].data(), bytes, cudaMemcpyHostToDevice) != cudaSuccess)
        throw std::runtime_error("device copy of the coefficients failed");
      ptr[c] = p;
    }
  }
  ~DeviceCoefficients() {
    for (const void* p : ptr) cudaFree(const_cast<void*>(p));
  }
};

TEST(DiagnosticsGpu, SpectrumMatchesCpu) {
  if (!vh::gpu_available()) GTEST_SKIP() << "no GPU visible";
  const Grid g{64};
  const auto cpu = vh::make_initial_field(random_spec(), g);
  const DeviceCoefficients d(cpu.u);
  std::vector<double> E;
  const double g2 = vh::energy_spectrum_device(d.ptr, g, E);
  const auto Ec = vh::energy_spectrum(cpu.u);
  ASSERT_EQ(E.size(), Ec.size());
  for (std::size_t n = 0; n < E.size(); ++n) EXPECT_NEAR(E[n], Ec[n], 1e-12 * cpu.K0) << n;
  EXPECT_LT(rel(g2, vh::gradient_norm2(cpu.u)), 1e-12);
}

TEST(DiagnosticsGpu, StatisticsMatchCpu) {
  if (!vh::gpu_available()) GTEST_SKIP() << "no GPU visible";
  const Grid g{48};
  const auto cpu = vh::make_initial_field(random_spec(), g);
  const DeviceCoefficients d(cpu.u);
  std::vector<double> E;
  const vh::Statistics gs = vh::statistics_device(d.ptr, g, cpu.nu, E);
  vh::Fft3d fft(g.n);
  const vh::Statistics cs = vh::statistics(cpu.u, cpu.nu, fft);
  for (auto [a, b] : {std::pair{gs.K, cs.K}, {gs.epsilon, cs.epsilon}, {gs.L, cs.L}, {gs.Re_lambda, cs.Re_lambda},
                      {gs.lambda, cs.lambda}})
    EXPECT_LT(rel(a, b), 1e-12);
  // S₃ and helicity are sums of terms of both signs: compare against their scale.
  EXPECT_NEAR(gs.S3, cs.S3, 1e-12);
  EXPECT_NEAR(gs.helicity, cs.helicity, 1e-12 * 2 * cs.enstrophy);
  EXPECT_NEAR(gs.divergence_rel, cs.divergence_rel, 1e-12);
}

// The GPU sums run in an order the code fixes (no atomics): the same bits on every call.
TEST(DiagnosticsGpu, SameBitsEveryRun) {
  if (!vh::gpu_available()) GTEST_SKIP() << "no GPU visible";
  const Grid g{48};
  const auto cpu = vh::make_initial_field(random_spec(), g);
  const DeviceCoefficients d(cpu.u);
  std::vector<double> E0, E;
  const vh::Statistics s0 = vh::statistics_device(d.ptr, g, cpu.nu, E0);
  for (int run = 0; run < 3; ++run) {
    const vh::Statistics s = vh::statistics_device(d.ptr, g, cpu.nu, E);
    EXPECT_EQ(std::memcmp(&s, &s0, sizeof s), 0) << "run " << run;
    ASSERT_EQ(E.size(), E0.size());
    EXPECT_EQ(std::memcmp(E.data(), E0.data(), E.size() * sizeof(double)), 0) << "run " << run;
  }
}
#endif

}  // namespace
