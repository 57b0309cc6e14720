// Solid harmonics identities and the expansion chain P2M -> M2M -> M2L -> L2L -> L2P against the
// direct gradient and Hessian of sum q / |r - x_q|.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "fmm/expansions.h"

namespace vh::fmm {
namespace {

cplx full(const std::vector<cplx>& X, int l, int m) {
  if (m >= 0) return X[idx(l, m)];
  const cplx v = std::conj(X[idx(l, -m)]);
  return (m & 1) ? -v : v;
}

TEST(Expansions, AdditionTheorems) {
  // Truncated at degree p = 24 with |a|/|r| ~ 0.3: remainder ~ 0.3^25 ~ 1e-13.
  const int p = 24, nc = ncoef(p);
  const Vec3 a = {0.2, -0.3, 0.25}, r = {1.5, 0.7, -1.1}, b = {-0.1, 0.4, 0.3};
  std::vector<cplx> Ra(nc), Ia(nc), Rr(nc), Ir(nc), Rb(nc), Ib(nc);
  solid_harmonics(a, p, Ra.data(), Ia.data());
  solid_harmonics(r, p, Rr.data(), Ir.data());
  solid_harmonics(b, p, Rb.data(), Ib.data());
  // 1/|r - a| = sum conj(R_lm(a)) I_lm(r)
  cplx s = 0;
  for (int l = 0; l <= p; ++l)
    for (int m = -l; m <= l; ++m) s += std::conj(full(Ra, l, m)) * full(Ir, l, m);
  const double d = std::hypot(r[0] - a[0], r[1] - a[1], r[2] - a[2]);
  EXPECT_NEAR(s.real(), 1 / d, 1e-12);
  EXPECT_NEAR(s.imag(), 0, 1e-14);
  // R_lm(a + b) = sum R_jk(a) R_{l-j,m-k}(b) (exact, finite sum)
  std::vector<cplx> Rab(nc), Irb(nc), Rrb(nc);
  solid_harmonics({a[0] + b[0], a[1] + b[1], a[2] + b[2]}, p, Rab.data(), nullptr);
  for (int l = 0; l <= 8; ++l)
    for (int m = 0; m <= l; ++m) {
      cplx t = 0;
      for (int j = 0; j <= l; ++j)
        for (int k = -j; k <= j; ++k)
          if (std::abs(m - k) <= l - j) t += full(Ra, j, k) * full(Rb, l - j, m - k);
      EXPECT_LT(std::abs(t - Rab[idx(l, m)]), 1e-15 + 1e-13 * std::abs(Rab[idx(l, m)])) << l << " " << m;
    }
  // I_lm(r + b) = sum (-1)^j conj(R_jk(b)) I_{l+j,m+k}(r), truncated at l + j <= p: the
  // remainder of degree l is ~(|b|/|r|)^(p-l+1) ~ 0.3^21 relative to the degree-(l) terms,
  // times the growth of the (l+j)! normalisation; 1e-8 of the largest term of degree l.
  solid_harmonics({r[0] + b[0], r[1] + b[1], r[2] + b[2]}, p, Rrb.data(), Irb.data());
  for (int l = 0; l <= 4; ++l)
    for (int m = 0; m <= l; ++m) {
      double scale = 0;
      for (int mm = 0; mm <= l; ++mm) scale = std::max(scale, std::abs(Irb[idx(l, mm)]));
      cplx t = 0;
      for (int j = 0; j <= p - l; ++j)
        for (int k = -j; k <= j; ++k) t += ((j & 1) ? -1.0 : 1.0) * std::conj(full(Rb, j, k)) * full(Ir, l + j, m + k);
      EXPECT_LT(std::abs(t - Irb[idx(l, m)]), 1e-8 * scale) << l << " " << m;
    }
}

// The gradient gd and Hessian hd at x of sum_i qs[i][a] / |x - xs[i]|, summed directly.
void direct_derivatives(const Vec3& x, const std::vector<Vec3>& xs, const std::vector<Vec3>& qs, int a, double gd[3],
                        double hd[3][3]) {
  for (int j = 0; j < 3; ++j) {
    gd[j] = 0;
    for (int k = 0; k < 3; ++k) hd[j][k] = 0;
  }
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double r[3] = {x[0] - xs[i][0], x[1] - xs[i][1], x[2] - xs[i][2]};
    const double rr = std::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    for (int j = 0; j < 3; ++j) {
      gd[j] -= qs[i][a] * r[j] / (rr * rr * rr);
      for (int k = 0; k < 3; ++k) hd[j][k] += qs[i][a] * (3 * r[j] * r[k] / std::pow(rr, 5) - (j == k) / (rr * rr * rr));
    }
  }
}

// Chain error for 30 charges in a ball of radius 0.5 at distance ~3.8: falls like ~(1/3)^p.
double chain_error(int p) {
  const int nc = ncoef(p);
  std::mt19937_64 gen(3);
  std::uniform_real_distribution<double> U(-0.28, 0.28);
  const Vec3 cs = {0.1, 0.2, -0.1}, ct = {3.0, 1.5, 2.0};
  std::vector<Vec3> xs, qs, xt;
  for (int i = 0; i < 30; ++i) {
    xs.push_back({cs[0] + U(gen), cs[1] + U(gen), cs[2] + U(gen)});
    qs.push_back({U(gen), U(gen), U(gen)});
  }
  for (int i = 0; i < 10; ++i) xt.push_back({ct[0] + U(gen), ct[1] + U(gen), ct[2] + U(gen)});
  Expansion M(3 * nc), M2(3 * nc), L(3 * nc), L2(3 * nc);
  const Vec3 cs2 = {cs[0] + 0.15, cs[1] - 0.1, cs[2] + 0.12}, ct2 = {ct[0] - 0.1, ct[1] + 0.05, ct[2] + 0.08};
  for (std::size_t i = 0; i < xs.size(); ++i)
    p2m(p, {xs[i][0] - cs[0], xs[i][1] - cs[1], xs[i][2] - cs[2]}, qs[i], M.data());
  m2m(p, {cs[0] - cs2[0], cs[1] - cs2[1], cs[2] - cs2[2]}, M.data(), M2.data());
  m2l(p, {cs2[0] - ct[0], cs2[1] - ct[1], cs2[2] - ct[2]}, M2.data(), L.data());
  l2l(p, {ct2[0] - ct[0], ct2[1] - ct[1], ct2[2] - ct[2]}, L.data(), L2.data());
  double num = 0, den = 0;
  for (const auto& x : xt) {
    double dp[3][3], hp[3][3][3];
    l2p(p, {x[0] - ct2[0], x[1] - ct2[1], x[2] - ct2[2]}, L2.data(), dp, hp);
    for (int a = 0; a < 3; ++a) {
      double gd[3], hd[3][3];
      direct_derivatives(x, xs, qs, a, gd, hd);
      for (int j = 0; j < 3; ++j) {
        num += (gd[j] - dp[a][j]) * (gd[j] - dp[a][j]);
        den += gd[j] * gd[j];
        for (int k = 0; k < 3; ++k) {
          num += (hd[j][k] - hp[a][j][k]) * (hd[j][k] - hp[a][j][k]);
          den += hd[j][k] * hd[j][k];
        }
      }
    }
  }
  return std::sqrt(num / den);
}

TEST(Expansions, ChainConvergesWithOrder) {
  double prev = 1;
  for (int p : {2, 4, 8, 12, 16, 20}) {
    const double e = chain_error(p);
    std::printf("chain p=%2d  rel. error of grad+Hessian %.3e\n", p, e);
    EXPECT_LT(e, 0.5 * prev) << "p " << p;
    prev = e;
  }
  EXPECT_LT(prev, 1e-9);
}

TEST(Expansions, M2pIsTheM2lToThePointThenL2p) {
  // m2p_table of the folded multipole: the M2L into the degrees 0..2 of a local expansion about
  // the target, read there (fmm/expansions.h).  The same sums as m2l_table into a zero expansion
  // followed by l2p at d = 0 (whose L2L adds only zero terms): equal to the last bit; and, for 30
  // charges in a ball of radius 0.5 seen from ~1.5 (ratio 1/3, p = 16: remainder ~(1/3)^17 ~ 1e-8
  // of the field), the direct gradient and Hessian of sum q / |r - x_q| within 1e-6.
  const int p = 16, nc = ncoef(p);
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> U(-0.28, 0.28);
  const Vec3 c = {0.3, -0.2, 0.1}, x = {1.2, 0.9, -0.6};
  Expansion M(3 * nc), L(3 * nc);
  std::vector<Vec3> xs, qs;
  for (int i = 0; i < 30; ++i) {
    xs.push_back({c[0] + U(gen), c[1] + U(gen), c[2] + U(gen)});
    qs.push_back({U(gen), U(gen), U(gen)});
    p2m(p, {xs[i][0] - c[0], xs[i][1] - c[1], xs[i][2] - c[2]}, qs[i], M.data());
  }
  const Vec3 d = {c[0] - x[0], c[1] - x[1], c[2] - x[2]};
  std::vector<cplx> I(nc);
  solid_harmonics(d, p, nullptr, I.data());
  double dp[3][3], hp[3][3][3], dl[3][3], hl[3][3][3];
  FoldedMultipole F;
  fold_multipole(p, M.data(), F);
  m2p_table(p, I.data(), F, dp, hp);
  m2l(p, d, M.data(), L.data());
  l2p(p, {0, 0, 0}, L.data(), dl, hl);
  double num = 0, den = 0;
  for (int a = 0; a < 3; ++a) {
    double gd[3], hd[3][3];
    direct_derivatives(x, xs, qs, a, gd, hd);
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(dp[a][j], dl[a][j]) << a << " " << j;
      num += (gd[j] - dp[a][j]) * (gd[j] - dp[a][j]);
      den += gd[j] * gd[j];
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(hp[a][j][k], hl[a][j][k]) << a << " " << j << " " << k;
        num += (hd[j][k] - hp[a][j][k]) * (hd[j][k] - hp[a][j][k]);
        den += hd[j][k] * hd[j][k];
      }
    }
  }
  EXPECT_LT(std::sqrt(num / den), 1e-6);
}

}  // namespace
}  // namespace vh::fmm
