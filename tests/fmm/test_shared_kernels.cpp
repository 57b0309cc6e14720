// The host path of the math shared with the GPU (fmm/expansions_kernel.h, fmm/traverse_kernel.h)
// against the CPU code it replaced, kept here verbatim as the reference: the recurrences, the
// table M2M and M2L and the acceptance test must give the old bits (the CPU path is unchanged);
// the L2P's closed form differs from the old evaluation through solid harmonics at unit vectors
// only by round-off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <random>
#include <vector>

#include "common.h"
#include "fmm/expansions.h"
#include "fmm/expansions_kernel.h"
#include "fmm/traverse.h"
#include "fmm/traverse_kernel.h"

namespace vh::fmm {
namespace {

// ---- the replaced CPU code (expansions.cpp and traverse.cpp before the shared headers) ----
inline cplx get_ref(const cplx* X, int l, int m) {
  if (m >= 0) return X[idx(l, m)];
  const cplx v = std::conj(X[idx(l, -m)]);
  return (m & 1) ? -v : v;
}

void solid_harmonics_ref(const Vec3& r, int p, cplx* R, cplx* I) {
  const double x = r[0], y = r[1], z = r[2];
  const double r2 = x * x + y * y + z * z;
  const cplx xy(x, y);
  if (R) {
    R[0] = 1.0;
    for (int l = 0; l < p; ++l) {
      R[idx(l + 1, l + 1)] = -xy / double(2 * l + 2) * R[idx(l, l)];
      for (int m = 0; m <= l; ++m) {
        const cplx prev = (m <= l - 1) ? R[idx(l - 1, m)] : cplx(0.0);
        R[idx(l + 1, m)] = (double(2 * l + 1) * z * R[idx(l, m)] - r2 * prev) / double((l + m + 1) * (l - m + 1));
      }
    }
  }
  if (!I) return;
  const double inv_r2 = 1.0 / r2;
  I[0] = std::sqrt(inv_r2);
  for (int l = 0; l < p; ++l) {
    I[idx(l + 1, l + 1)] = -double(2 * l + 1) * xy * inv_r2 * I[idx(l, l)];
    for (int m = 0; m <= l; ++m) {
      const cplx prev = (m <= l - 1) ? I[idx(l - 1, m)] : cplx(0.0);
      I[idx(l + 1, m)] = (double(2 * l + 1) * z * I[idx(l, m)] - double(l * l - m * m) * prev) * inv_r2;
    }
  }
}

void m2m_table_ref(int p, const cplx* R, const cplx* Mc, cplx* Mp) {
  const int nc = ncoef(p);
  for (int a = 0; a < 3; ++a) {
    const cplx* M = Mc + a * nc;
    cplx* P = Mp + a * nc;
    for (int l = 0; l <= p; ++l)
      for (int m = 0; m <= l; ++m) {
        cplx s = 0.0;
        for (int j = 0; j <= l; ++j)
          for (int k = -j; k <= j; ++k) {
            const int n = l - j, mm = m - k;
            if (mm > n || mm < -n) continue;
            s += get_ref(R, j, k) * get_ref(M, n, mm);
          }
        P[idx(l, m)] += s;
      }
  }
}

void m2l_table_ref(int p, const cplx* Ih, const cplx* Mc, cplx* Lc) {
  const int nc = ncoef(p);
  std::vector<double> Ir((p + 1) * (p + 1)), Ii(Ir.size()), Mr(3 * Ir.size()), Mi(3 * Ir.size());
  const int nf = (p + 1) * (p + 1);
  for (int n = 0; n <= p; ++n)
    for (int m = -n; m <= n; ++m) {
      const cplx v = get_ref(Ih, n, m);
      Ir[n * n + n + m] = v.real();
      Ii[n * n + n + m] = v.imag();
      for (int a = 0; a < 3; ++a) {
        const cplx w = std::conj(get_ref(Mc + a * nc, n, m)) * double((n & 1) ? -1 : 1);
        Mr[a * nf + n * n + n + m] = w.real();
        Mi[a * nf + n * n + n + m] = w.imag();
      }
    }
  for (int l = 0; l <= p; ++l)
    for (int m = 0; m <= l; ++m) {
      double sr[3] = {0, 0, 0}, si[3] = {0, 0, 0};
      for (int j = 0; j <= p - l; ++j) {
        const int bi = (l + j) * (l + j) + (l + j) + m, bm = j * j + j;
        for (int k = -j; k <= j; ++k) {
          const double ir = Ir[bi + k], ii = Ii[bi + k];
          for (int a = 0; a < 3; ++a) {
            sr[a] += Mr[a * nf + bm + k] * ir - Mi[a * nf + bm + k] * ii;
            si[a] += Mr[a * nf + bm + k] * ii + Mi[a * nf + bm + k] * ir;
          }
        }
      }
      for (int a = 0; a < 3; ++a) Lc[a * nc + idx(l, m)] += cplx(sr[a], si[a]);
    }
}

bool far_ref(const Cell& A, const Cell& B, const Vec3& shift, const Acceptance& mac) {
  double dc, db;
  testing::reference_distances(A, B, shift, dc, db);
  return A.radius + B.radius < mac.theta * dc && db >= mac.rcut_per_sigma * B.sigma_max;
}

// L2P's derivatives the old way: Q_j(e) = sum_k Lt_jk conj(R_jk(e)) at unit vectors e.
void potential_derivatives_ref(const cplx* Lt, double dphi[3][3], double hphi[3][3][3]) {
  auto Q = [&](int a, int j, const Vec3& e) {
    cplx Re[6];
    solid_harmonics_ref(e, 2, Re, nullptr);
    double s = (Lt[a * 6 + idx(j, 0)] * std::conj(Re[idx(j, 0)])).real();
    for (int k = 1; k <= j; ++k) s += 2.0 * (Lt[a * 6 + idx(j, k)] * std::conj(Re[idx(j, k)])).real();
    return s;
  };
  const Vec3 e[3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  for (int a = 0; a < 3; ++a) {
    for (int i = 0; i < 3; ++i) dphi[a][i] = Q(a, 1, e[i]);
    for (int i = 0; i < 3; ++i) {
      hphi[a][i][i] = 2.0 * Q(a, 2, e[i]);
      for (int k = i + 1; k < 3; ++k) {
        const Vec3 s = {e[i][0] + e[k][0], e[i][1] + e[k][1], e[i][2] + e[k][2]};
        hphi[a][i][k] = hphi[a][k][i] = Q(a, 2, s) - Q(a, 2, e[i]) - Q(a, 2, e[k]);
      }
    }
  }
}
// ---------------------------------------------------------------------------------------------

TEST(SharedKernels, RecurrencesGiveTheOldBits) {
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<double> U(-3, 3);
  for (int p : {0, 1, 2, 10, 24}) {
    const int nc = ncoef(p);
    for (int t = 0; t < 50; ++t) {
      const Vec3 r{U(gen), U(gen), t == 0 ? 0.0 : U(gen)};
      std::vector<cplx> R(nc), I(nc), Rr(nc), Ir(nc);
      solid_harmonics(r, p, R.data(), I.data());
      solid_harmonics_ref(r, p, Rr.data(), Ir.data());
      for (int c = 0; c < nc; ++c) {
        ASSERT_EQ(R[c], Rr[c]) << "R, p " << p << " coefficient " << c;
        ASSERT_EQ(I[c], Ir[c]) << "I, p " << p << " coefficient " << c;
      }
    }
  }
}

// The GPU kernels' regular harmonics multiply by a table of reciprocals where the host divides
// (expansions_kernel.h Reciprocal): the table holds the correctly rounded 1/d, and rows built
// with it stay within a few ulps a degree of the host's (each step rounds once more than the
// division; the recurrence's two terms may cancel, so the bound is on the row's largest value).
TEST(SharedKernels, ReciprocalRecurrencesStayWithinUlpsOfTheDivisions) {
  constexpr int kP = 20;
  static constexpr ReciprocalTable<(kP + 1) * (kP + 1) + 1> table;
  for (int d = 1; d <= (kP + 1) * (kP + 1); ++d) {
    volatile double one = 1.0;  // a division at run time
    ASSERT_EQ(table.v[d], one / double(d)) << "1/" << d;
  }
  std::mt19937_64 gen(3);
  std::uniform_real_distribution<double> U(-3, 3);
  double worst = 0;
  for (int t = 0; t < 200; ++t) {
    const double x = U(gen), y = U(gen), z = U(gen), r2 = x * x + y * y + z * z;
    std::vector<double> a(2 * ncoef(kP)), b(2 * ncoef(kP));
    a[0] = b[0] = 1;
    for (int l = 0; l < kP; ++l) {
      harmonic_row_up<false>(l, x, y, z, r2, &a[2 * idx(l, 0)], l > 0 ? &a[2 * idx(l - 1, 0)] : nullptr,
                             &a[2 * idx(l + 1, 0)]);
      harmonic_row_up<false>(l, x, y, z, r2, &b[2 * idx(l, 0)], l > 0 ? &b[2 * idx(l - 1, 0)] : nullptr,
                             &b[2 * idx(l + 1, 0)], Reciprocal{table.v});
    }
    for (int l = 1; l <= kP; ++l) {
      double row = 0, diff = 0;
      for (int c = 2 * idx(l, 0); c < 2 * idx(l + 1, 0); ++c) {
        row = std::max(row, std::abs(a[c]));
        diff = std::max(diff, std::abs(a[c] - b[c]));
      }
      const double ulps = diff / (row * 0x1p-52 * l);
      worst = std::max(worst, ulps);
      ASSERT_LE(ulps, 4.0) << "degree " << l << " at (" << x << ", " << y << ", " << z << ")";
    }
  }
  std::printf("worst difference: %.2f ulps of the row's largest value a degree\n", worst);
  EXPECT_GT(worst, 0.0);  // the two do round differently
}

TEST(SharedKernels, TableTranslationsGiveTheOldBits) {
  std::mt19937_64 gen(2);
  std::uniform_real_distribution<double> U(-1, 1);
  for (int p : {1, 6, 10, 17}) {
    const int nc = ncoef(p);
    std::vector<cplx> T(nc), M(3 * nc), L1(3 * nc), L2(3 * nc);
    solid_harmonics({U(gen), U(gen), 2 + U(gen)}, p, T.data(), nullptr);
    for (auto& v : M) v = cplx(U(gen), U(gen));
    for (int k = 0; k < 3 * nc; ++k) L1[k] = L2[k] = cplx(U(gen), U(gen));
    m2m_table(p, T.data(), M.data(), L1.data());
    m2m_table_ref(p, T.data(), M.data(), L2.data());
    for (int k = 0; k < 3 * nc; ++k) ASSERT_EQ(L1[k], L2[k]) << "M2M p " << p << " output " << k;
    solid_harmonics({U(gen), U(gen), 3 + U(gen)}, p, nullptr, T.data());
    m2l_table(p, T.data(), M.data(), L1.data());
    m2l_table_ref(p, T.data(), M.data(), L2.data());
    for (int k = 0; k < 3 * nc; ++k) ASSERT_EQ(L1[k], L2[k]) << "M2L p " << p << " output " << k;
  }
}

// The closed form against Q at unit vectors: the same polynomial, other roundings.  Terms are
// O(1), so 1e-15 absolute is a few ulps.
TEST(SharedKernels, LocalToDerivativesMatchesTheOldForm) {
  std::mt19937_64 gen(3);
  std::uniform_real_distribution<double> U(-1, 1);
  for (int t = 0; t < 100; ++t) {
    cplx Lt[18];
    for (auto& v : Lt) v = cplx(U(gen), U(gen));
    for (int a = 0; a < 3; ++a)
      for (int j = 0; j <= 2; ++j) Lt[a * 6 + idx(j, 0)] = cplx(Lt[a * 6 + idx(j, 0)].real(), 0.0);  // m = 0 real
    double d1[3][3], h1[3][3][3], d2[3][3], h2[3][3][3];
    potential_derivatives(reinterpret_cast<const double*>(Lt), d1, h1);
    potential_derivatives_ref(Lt, d2, h2);
    for (int a = 0; a < 3; ++a)
      for (int i = 0; i < 3; ++i) {
        EXPECT_NEAR(d1[a][i], d2[a][i], 1e-15);
        for (int k = 0; k < 3; ++k) EXPECT_NEAR(h1[a][i][k], h2[a][i][k], 1e-15) << a << i << k;
      }
    // The curl: u_0 = (d_y psi_z - d_z psi_y), grad u_0 = d_k of it.
    double r[12];
    velocity_from_potentials(d1, h1, r);
    const double inv4pi = 1.0 / (4.0 * M_PI);
    EXPECT_EQ(r[0], inv4pi * (d1[2][1] - d1[1][2]));
    EXPECT_EQ(r[3 + 3 * 1 + 2], inv4pi * (h1[0][2][2] - h1[2][0][2]));
  }
}

TEST(SharedKernels, AcceptanceGivesTheOldDecisions) {
  std::mt19937_64 gen(4);
  std::uniform_real_distribution<double> U(0, 1);
  const Acceptance mac{0.6, 4.4, 0};
  long long far = 0, total = 0;
  for (int t = 0; t < 200000; ++t) {
    // Cells of one side h, B within a few sides of A (dyadic centres: exact ties in the test).
    Cell A, B;
    const double h = std::ldexp(1.0, -static_cast<int>(4 * U(gen)));
    for (int d = 0; d < 3; ++d) {
      A.center[d] = std::floor(8 * U(gen)) * h + 0.5 * h;
      B.center[d] = A.center[d] + std::floor(7 * U(gen) - 3) * h;
    }
    for (Cell* c : {&A, &B}) {
      for (int d = 0; d < 3; ++d) {
        c->bmin[d] = c->center[d] - h * 0.5 * U(gen);
        c->bmax[d] = c->center[d] + h * 0.5 * U(gen);
      }
      c->radius = h * (0.3 + 0.6 * U(gen));
      c->sigma_max = h * 0.05 * U(gen);
    }
    const Vec3 s{t % 7 == 0 ? 8.0 : 0.0, 0, 0};  // a periodic shift now and then
    const bool a = far_pair(A.center.data(), A.radius, A.bmin.data(), A.bmax.data(), B.center.data(), B.radius,
                            B.bmin.data(), B.bmax.data(), B.sigma_max, s.data(), mac.theta, mac.rcut_per_sigma);
    ASSERT_EQ(a, far_ref(A, B, s, mac)) << "pair " << t;
    far += a;
    ++total;
  }
  EXPECT_GT(far, total / 20);  // both outcomes exercised
  EXPECT_LT(far, total - total / 20);
}

}  // namespace
}  // namespace vh::fmm
