// Shared diagnostics against closed forms and against Wray's 512³ DNS (AGARD HOM02).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>

#include <omp.h>

#include "core/diagnostics.h"
#include "core/fft.h"
#include "validation/reference_data.h"

namespace {

using vh::Grid;
using vh::kPi;

/// Fills a vector field from a function of (x, y, z).
template <class F>
vh::VectorField sample(const Grid& g, F&& f) {
  vh::VectorField u(g);
  const double h = g.h();
  for (int k = 0; k < g.n; ++k)
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.n; ++i) {
        double v[3];
        f(i * h, j * h, k * h, v);
        for (int c = 0; c < 3; ++c) u.c[c][g.index(i, j, k)] = v[c];
      }
  return u;
}

double rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

/// A field of uniform values in [−½, ½) from a 64-bit LCG seeded with `seed`.
vh::VectorField random_field(const Grid& g, std::uint64_t seed) {
  vh::VectorField u(g);
  for (auto& comp : u.c)
    for (double& v : comp) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      v = double(seed >> 11) / 9007199254740992.0 - 0.5;
    }
  return u;
}

// u = A (sin m y, sin m x, 0): one Fourier mode per component, solenoidal.
// K = A²/2 (all in shell m), ε = ν A² m², L = 3π/(4m), Q = −A² m² cos mx cos my.
TEST(Diagnostics, SingleModeClosedForms) {
  const Grid g{16};
  const double A = 0.7, nu = 0.013;
  const int m = 3;
  auto u = sample(g, [&](double x, double y, double, double* v) {
    v[0] = A * std::sin(m * y);
    v[1] = A * std::sin(m * x);
    v[2] = 0.0;
  });
  vh::Fft3d fft(g.n);
  const vh::Statistics s = vh::statistics(u, nu, fft);
  EXPECT_LT(rel(s.K, A * A / 2), 1e-12);
  EXPECT_LT(rel(s.epsilon, nu * A * A * m * m), 1e-12);
  EXPECT_LT(rel(s.enstrophy, 0.5 * A * A * m * m), 1e-12);
  EXPECT_LT(rel(s.L, 3 * kPi / (4 * m)), 1e-12);
  EXPECT_LT(rel(s.T, s.L / std::sqrt(A * A / 3)), 1e-12);
  EXPECT_LT(rel(s.lambda, std::sqrt(15 * nu * (A * A / 3) / (nu * A * A * m * m))), 1e-12);
  EXPECT_LT(s.divergence_rel, 1e-14);

  vh::SpectralVector c(g);
  fft.forward(u, c);
  const auto E = vh::energy_spectrum(c);
  for (std::size_t n = 0; n < E.size(); ++n)
    EXPECT_NEAR(E[n], n == std::size_t(m) ? A * A / 2 : 0.0, 1e-14) << "shell " << n;

  vh::ScalarField q;
  vh::q_criterion(c, fft, q);
  double err = 0;
  const double h = g.h();
  for (int k = 0; k < g.n; ++k)
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.n; ++i)
        err = std::max(err, std::abs(q.v[g.index(i, j, k)] +
                                     A * A * m * m * std::cos(m * i * h) * std::cos(m * j * h)));
  EXPECT_LT(err, 1e-12 * A * A * m * m);
}

// Taylor–Green: K = 1/8 in shell round(√3) = 2, ½⟨ω²⟩ = 3/8, ε = 3ν/4, L = 3π/8,
// Q = cos²z (sin²x sin²y − cos²x cos²y), S₃ = 0 by symmetry.
TEST(Diagnostics, TaylorGreenClosedForms) {
  const Grid g{16};
  const double nu = 1.0 / 1600;
  auto u = sample(g, [](double x, double y, double z, double* v) {
    v[0] = std::sin(x) * std::cos(y) * std::cos(z);
    v[1] = -std::cos(x) * std::sin(y) * std::cos(z);
    v[2] = 0.0;
  });
  vh::Fft3d fft(g.n);
  const vh::Statistics s = vh::statistics(u, nu, fft);
  EXPECT_LT(rel(s.K, 0.125), 1e-12);
  EXPECT_LT(rel(s.enstrophy, 0.375), 1e-12);
  EXPECT_LT(rel(s.epsilon, 0.75 * nu), 1e-12);
  EXPECT_LT(rel(s.L, 3 * kPi / 8), 1e-12);
  EXPECT_NEAR(s.S3, 0.0, 1e-12);

  vh::SpectralVector c(g);
  fft.forward(u, c);
  const auto E = vh::energy_spectrum(c);
  EXPECT_LT(rel(E[2], 0.125), 1e-12);

  vh::ScalarField q;
  vh::q_criterion(c, fft, q);
  vh::VectorField w;
  vh::vorticity(c, fft, w);
  double qerr = 0, werr = 0;
  const double h = g.h();
  for (int k = 0; k < g.n; ++k)
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.n; ++i) {
        const double x = i * h, y = j * h, z = k * h;
        const double sx = std::sin(x), cx = std::cos(x), sy = std::sin(y), cy = std::cos(y);
        const double sz = std::sin(z), cz = std::cos(z);
        const std::size_t p = g.index(i, j, k);
        qerr = std::max(qerr, std::abs(q.v[p] - cz * cz * (sx * sx * sy * sy - cx * cx * cy * cy)));
        // ω = (−cx sy sz, −sx cy sz, 2 sx sy cz)
        werr = std::max({werr, std::abs(w.c[0][p] + cx * sy * sz), std::abs(w.c[1][p] + sx * cy * sz),
                         std::abs(w.c[2][p] - 2 * sx * sy * cz)});
      }
  EXPECT_LT(qerr, 1e-12);
  EXPECT_LT(werr, 1e-12);
}

// A generalised ABC flow u = (A sin k₃z + C cos k₂y, B sin k₁x + A cos k₃z, C sin k₂y + B cos k₁x)
// (solenoidal: u_x depends on y, z only, and so on). A = ∇u has zero diagonal,
//   A = [[0, a, b], [c, 0, d], [e, f, 0]],  a = −Ck₂ sin k₂y, b = Ak₃ cos k₃z, c = Bk₁ cos k₁x,
//                                            d = −Ak₃ sin k₃z, e = −Bk₁ sin k₁x, f = Ck₂ cos k₂y,
// so Q = −(ac + be + df) and R = −det A = −(ade + bcf) in closed form, ω = (f − d, b − e, c − a).
// Every entry is one Fourier mode, so the spectral derivatives are exact: only FFT round-off
// (~1e-15 of the values, which are O(1)–O(10)) separates the two, hence 1e-12.
TEST(Diagnostics, GradientInvariantsOfGeneralisedAbcFlow) {
  const Grid g{16};
  const double A = 0.9, B = 0.6, C = 0.3;
  const int k1 = 1, k2 = 2, k3 = 3;
  auto u = sample(g, [&](double x, double y, double z, double* v) {
    v[0] = A * std::sin(k3 * z) + C * std::cos(k2 * y);
    v[1] = B * std::sin(k1 * x) + A * std::cos(k3 * z);
    v[2] = C * std::sin(k2 * y) + B * std::cos(k1 * x);
  });
  vh::Fft3d fft(g.n);
  vh::SpectralVector c(g);
  fft.forward(u, c);
  const vh::GradientInvariants inv = vh::gradient_invariants(c, fft);
  ASSERT_EQ(inv.q.grid.n, g.n);
  ASSERT_EQ(inv.r.grid.n, g.n);
  double qerr = 0, rerr = 0, rmax = 0, qw = 0;
  const double h = g.h();
  for (int kk = 0; kk < g.n; ++kk)
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.n; ++i) {
        const double x = i * h, y = j * h, z = kk * h;
        const double a = -C * k2 * std::sin(k2 * y), b = A * k3 * std::cos(k3 * z), cc = B * k1 * std::cos(k1 * x),
                     d = -A * k3 * std::sin(k3 * z), e = -B * k1 * std::sin(k1 * x), f = C * k2 * std::cos(k2 * y);
        const std::size_t p = g.index(i, j, kk);
        qerr = std::max(qerr, std::abs(inv.q.v[p] + (a * cc + b * e + d * f)));
        rerr = std::max(rerr, std::abs(inv.r.v[p] + (a * d * e + b * cc * f)));
        rmax = std::max(rmax, std::abs(a * d * e + b * cc * f));
        qw += 0.25 * ((f - d) * (f - d) + (b - e) * (b - e) + (cc - a) * (cc - a));
      }
  EXPECT_LT(qerr, 1e-12);
  EXPECT_LT(rerr, 1e-12);
  EXPECT_GT(rmax, 0.9);  // max |R| = ABC k₁k₂k₃ = 0.972: far from zero, so the check has teeth
  EXPECT_LT(rel(inv.q_w_mean, qw / double(g.points())), 1e-12);
  // ⟨ω·ω⟩ = k₁²B² + k₂²C² + k₃²A² (each squared sine/cosine averages ½, two per amplitude).
  EXPECT_LT(rel(inv.q_w_mean, 0.25 * (k1 * k1 * B * B + k2 * k2 * C * C + k3 * k3 * A * A)), 1e-12);

  // Q agrees with q_criterion(), which sums the products in another order.
  vh::ScalarField q;
  vh::q_criterion(c, fft, q);
  double diff = 0;
  for (std::size_t p = 0; p < q.v.size(); ++p) diff = std::max(diff, std::abs(q.v[p] - inv.q.v[p]));
  EXPECT_LT(diff, 1e-12);
}

// Betchov (1956): in homogeneous incompressible flow ⟨Q⟩ = 0 and ⟨R⟩ = 0 (and ⟨Q_W⟩ = ⟨Q_S⟩).
// On the periodic grid these hold exactly for a solenoidal field whose modes satisfy
// |k_i| < N/3: the products Q (degree 2) and R (degree 3) then alias nothing onto k = 0, so the
// grid mean is the exact mean. A random such field, projected to be solenoidal: ⟨Q⟩ and ⟨R⟩
// vanish to round-off relative to ⟨Q_W⟩ and ⟨Q_W⟩^{3/2}, and ⟨Q_W⟩ = ½ enstrophy = ¼⟨ω·ω⟩.
TEST(Diagnostics, GradientInvariantsMeansVanishForSolenoidalField) {
  const Grid g{24};
  vh::SpectralVector c(g);
  std::uint64_t s = 2024;
  auto uniform = [&s] {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return double(s >> 11) / 9007199254740992.0 - 0.5;
  };
  const int nxh = g.n / 2 + 1;
  for (int iz = 0; iz < g.n; ++iz)
    for (int iy = 0; iy < g.n; ++iy)
      for (int ix = 0; ix < nxh; ++ix) {
        const int k[3] = {ix, g.wavenumber(iy), g.wavenumber(iz)};
        if (std::abs(k[0]) >= g.n / 3 || std::abs(k[1]) >= g.n / 3 || std::abs(k[2]) >= g.n / 3) continue;
        const double k2 = double(k[0]) * k[0] + double(k[1]) * k[1] + double(k[2]) * k[2];
        if (k2 == 0) continue;
        vh::Complex v[3];
        for (auto& x : v) x = vh::Complex(uniform(), uniform());
        const vh::Complex kv = (double(k[0]) * v[0] + double(k[1]) * v[1] + double(k[2]) * v[2]) / k2;
        for (int cc = 0; cc < 3; ++cc) c.c[cc][g.mode_index(ix, iy, iz)] = v[cc] - double(k[cc]) * kv;
      }
  // Make the kx = 0 plane Hermitian (c(−k) = conj c(k)) by a round trip through the grid.
  vh::Fft3d fft(g.n);
  vh::VectorField u(g);
  fft.inverse(c, u);
  fft.forward(u, c);
  const vh::GradientInvariants inv = vh::gradient_invariants(c, fft);
  double qm = 0, rm = 0;
  for (std::size_t p = 0; p < g.points(); ++p) {
    qm += inv.q.v[p];
    rm += inv.r.v[p];
  }
  qm /= double(g.points());
  rm /= double(g.points());
  const vh::Statistics st = vh::statistics(c, 1.0, fft);
  ASSERT_LT(st.divergence_rel, 1e-14);
  ASSERT_GT(inv.q_w_mean, 1.0);
  EXPECT_LT(rel(inv.q_w_mean, 0.5 * st.enstrophy), 1e-12);
  EXPECT_LT(std::abs(qm) / inv.q_w_mean, 1e-12);
  EXPECT_LT(std::abs(rm) / std::pow(inv.q_w_mean, 1.5), 1e-12);
  // Not trivially zero: the pointwise R is of order ⟨Q_W⟩^{3/2}.
  double r2 = 0;
  for (double v : inv.r.v) r2 += v * v;
  EXPECT_GT(std::sqrt(r2 / double(g.points())), 0.1 * std::pow(inv.q_w_mean, 1.5));
}

// ABC flow (k = 1): ω = u, so ⟨u·ω⟩ = ⟨u·u⟩ = A² + B² + C² = 2K; and the TG field has none.
TEST(Diagnostics, HelicityOfAbcFlow) {
  const Grid g{16};
  const double A = 0.9, B = 0.6, C = 0.3;
  auto u = sample(g, [&](double x, double y, double z, double* v) {
    v[0] = A * std::sin(z) + C * std::cos(y);
    v[1] = B * std::sin(x) + A * std::cos(z);
    v[2] = C * std::sin(y) + B * std::cos(x);
  });
  vh::Fft3d fft(g.n);
  const vh::Statistics s = vh::statistics(u, 0.01, fft);
  EXPECT_LT(rel(s.helicity, A * A + B * B + C * C), 1e-12);
  EXPECT_LT(rel(s.K, 0.5 * (A * A + B * B + C * C)), 1e-12);
}

// u_i = f(x_i) with f' = cos s + β cos 2s: ⟨f'²⟩ = (1+β²)/2, ⟨f'³⟩ = 3β/4 (⟨cos²s cos 2s⟩ = ¼).
TEST(Diagnostics, SkewnessClosedForm) {
  const Grid g{16};
  const double beta = 0.6;
  auto f = [&](double s) { return std::sin(s) + 0.5 * beta * std::sin(2 * s); };
  auto u = sample(g, [&](double x, double y, double z, double* v) {
    v[0] = f(x);
    v[1] = f(y);
    v[2] = f(z);
  });
  vh::Fft3d fft(g.n);
  const vh::Statistics s = vh::statistics(u, 1e-3, fft);
  const double expected = (0.75 * beta) / std::pow(0.5 * (1 + beta * beta), 1.5);
  EXPECT_LT(rel(s.S3, expected), 1e-12);
  EXPECT_GT(s.divergence_rel, 0.5);  // this field is far from solenoidal, and the norm says so
}

// Parseval: Σ E_n equals ½⟨u·u⟩ summed in physical space for an arbitrary field.
TEST(Diagnostics, SpectrumSumsToPhysicalEnergy) {
  const Grid g{12};
  const vh::VectorField u = random_field(g, 12345);
  double phys = 0;
  for (const auto& comp : u.c)
    for (double v : comp) phys += 0.5 * v * v / double(g.points());
  vh::Fft3d fft(g.n);
  vh::SpectralVector c(g);
  fft.forward(u, c);
  double sum = 0;
  for (double e : vh::energy_spectrum(c)) sum += e;
  EXPECT_LT(rel(sum, phys), 1e-13);
}

// The spectrum and the statistics are the same bits on any number of threads and on every
// call: their sums run in an order fixed by the planes (a run's series and spectra repeat
// exactly, and a restart continues them bit for bit). Before, the threads' shell bins were
// added in the order the threads finished.
TEST(Diagnostics, SpectrumAndStatisticsAreTheSameBitsOnAnyThreadCount) {
  const Grid g{20};
  const vh::VectorField u = random_field(g, 777);
  vh::Fft3d fft(g.n);
  vh::SpectralVector c(g);
  fft.forward(u, c);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const std::vector<double> E1 = vh::energy_spectrum(c);
  const vh::Statistics s1 = vh::statistics(c, 0.01, fft);
  for (int threads : {2, 3, 4, 7}) {
    omp_set_num_threads(threads);
    for (int call = 0; call < 3; ++call) {
      EXPECT_EQ(vh::energy_spectrum(c), E1) << threads << " threads";
      const vh::Statistics s = vh::statistics(c, 0.01, fft);
      EXPECT_EQ(s.K, s1.K) << threads << " threads";
      EXPECT_EQ(s.epsilon, s1.epsilon) << threads << " threads";
      EXPECT_EQ(s.helicity, s1.helicity) << threads << " threads";
      EXPECT_EQ(s.S3, s1.S3) << threads << " threads";
    }
  }
  omp_set_num_threads(saved);
}

// Wray (1997) HOM02, 512³: the spectrum-level diagnostics fed CB512.es reproduce the
// K and L of CB512.f_t (5 printed digits, so 1e-4) and ε = νΩ to 3e-3 (shell binning).
TEST(Diagnostics, WrayHom02SpectraReproduceTimeSeries) {
  const std::string dir = vh::validation::data_dir() + "/wray_hom02/";
  const double nu = 3.5014006e-4;
  std::ifstream ft(dir + "CB512.f_t");
  ASSERT_TRUE(ft) << dir + "CB512.f_t";
  std::vector<std::array<double, 5>> rows;
  std::string line;
  while (std::getline(ft, line)) {
    std::istringstream ss(line);
    std::array<double, 5> r{};
    if (ss >> r[0] >> r[1] >> r[2] >> r[3] >> r[4]) rows.push_back(r);
  }
  ASSERT_GT(rows.size(), 200u);

  std::ifstream es(dir + "CB512.es");
  ASSERT_TRUE(es) << dir + "CB512.es";
  // Skip the prose header: data blocks start at the first line holding "nk t" as numbers.
  int blocks = 0;
  while (std::getline(es, line)) {
    std::istringstream ss(line);
    int nk = 0;
    double t = 0;
    std::string rest;
    if (!(ss >> nk >> t) || (ss >> rest) || nk < 10) continue;
    std::vector<double> k(nk), E(nk);
    for (int i = 0; i < nk; ++i) {
      es >> E[i];
      k[i] = i;
    }
    const vh::SpectrumStatistics s = vh::spectrum_statistics(k, E, nu);
    const std::array<double, 5>* match = nullptr;
    for (const auto& r : rows)
      if (std::abs(r[0] - t) < 1e-4 * t) match = &r;
    ASSERT_NE(match, nullptr) << "no f_t row at t = " << t;
    EXPECT_LT(rel(s.K, (*match)[1]), 1e-4) << "t = " << t;
    EXPECT_LT(rel(s.L, (*match)[3]), 1e-4) << "t = " << t;
    EXPECT_LT(rel(s.epsilon, nu * (*match)[2]), 3e-3) << "t = " << t;
    ++blocks;
  }
  EXPECT_EQ(blocks, 28);
}

}  // namespace
