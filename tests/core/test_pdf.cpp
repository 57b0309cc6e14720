// Histograms and the total-variation distance (core/pdf.h) against distributions whose binned
// probabilities are known in closed form: unit Gaussians, sampled at their exact quantiles.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/pdf.h"

namespace {

/// Φ(x), the unit Gaussian CDF.
double Phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

/// Φ⁻¹(p) by bisection on Φ (to 1e-14; more than the 1/n resolution of the samples needs).
double Phi_inv(double p) {
  double lo = -40, hi = 40;
  while (hi - lo > 1e-14) {
    const double mid = 0.5 * (lo + hi);
    (Phi(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

/// n samples of N(mu, 1) at the quantiles (i + ½)/n: each bin holds n·P(bin) of them to ±1,
/// so a histogram's entries are within 1/n of the exact bin probabilities.
std::vector<double> gaussian_quantiles(int n, double mu) {
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i) v[i] = mu + Phi_inv((i + 0.5) / n);
  return v;
}

/// Exact probability of each bin of `b` under N(mu, 1), the end bins taking the tails.
std::vector<double> gaussian_bins(const vh::Bins& b, double mu) {
  std::vector<double> p(b.n);
  for (int i = 0; i < b.n; ++i) {
    const double lo = i == 0 ? -INFINITY : b.lo + i * b.width();
    const double hi = i == b.n - 1 ? INFINITY : b.lo + (i + 1) * b.width();
    p[i] = Phi(hi - mu) - Phi(lo - mu);
  }
  return p;
}

const vh::Bins kBins{-10.0, 10.0, 200};  // the bins of compare's Q PDF (width 0.1)

TEST(Pdf, BinsClampToTheEnds) {
  EXPECT_EQ(kBins.index(-1e300), 0);
  EXPECT_EQ(kBins.index(-10.0), 0);
  EXPECT_EQ(kBins.index(-9.95), 0);
  EXPECT_EQ(kBins.index(0.0), 100);
  EXPECT_EQ(kBins.index(0.05), 100);
  EXPECT_EQ(kBins.index(9.99), 199);
  EXPECT_EQ(kBins.index(1e300), 199);
  EXPECT_EQ(kBins.index(INFINITY), 199);
  EXPECT_NEAR(kBins.centre(100), 0.05, 1e-14);
}

TEST(Pdf, HistogramCountsFractionsAndSkipsNonFinite) {
  const std::vector<double> v = {0.02, 0.04, 0.33, -50.0, NAN, 50.0};
  const auto p = vh::histogram(v, 0.5, kBins);  // scaled: 0.04, 0.08, 0.66, −100, NaN, 100
  ASSERT_EQ(p.size(), 200u);
  EXPECT_DOUBLE_EQ(p[100], 2.0 / 5);  // the NaN is not counted
  EXPECT_DOUBLE_EQ(p[106], 1.0 / 5);
  EXPECT_DOUBLE_EQ(p[0], 1.0 / 5);
  EXPECT_DOUBLE_EQ(p[199], 1.0 / 5);
  const auto none = vh::histogram({NAN, INFINITY}, 1.0, kBins);
  EXPECT_TRUE(std::isnan(none[0]));
  EXPECT_TRUE(std::isnan(vh::total_variation(none, p)));  // "not measured", never 0
}

TEST(Pdf, DistanceOfAFieldWithItselfIsZeroAndOfDisjointOnesOne) {
  const auto x = gaussian_quantiles(10000, 0.0);
  const auto p = vh::histogram(x, 1.0, kBins);
  EXPECT_EQ(vh::total_variation(p, p), 0.0);
  EXPECT_EQ(vh::total_variation(p, vh::histogram(x, 1.0, kBins)), 0.0);
  EXPECT_DOUBLE_EQ(vh::total_variation(vh::histogram({-1.0}, 1.0, kBins), vh::histogram({1.0}, 1.0, kBins)), 1.0);
}

// N(0, 1) against N(1, 1): the densities cross at x = ½, a bin edge, so p − q keeps one sign in
// every bin and the binned distance equals the continuous one, 2Φ(½) − 1 = erf(1/(2√2)) =
// 0.3829. The histograms of 10⁵ quantile samples are within 1/n = 1e-5 per bin of the exact
// bin probabilities; about 120 bins hold mass, so the distance is within 1.2e-3 (2e-3 allowed).
TEST(Pdf, TotalVariationOfShiftedGaussians) {
  const int n = 100000;
  const auto p = vh::histogram(gaussian_quantiles(n, 0.0), 1.0, kBins);
  const auto q = vh::histogram(gaussian_quantiles(n, 1.0), 1.0, kBins);
  const double exact = std::erf(1.0 / (2.0 * std::sqrt(2.0)));
  EXPECT_NEAR(vh::total_variation(gaussian_bins(kBins, 0.0), gaussian_bins(kBins, 1.0)), exact, 1e-14);
  EXPECT_NEAR(vh::total_variation(p, q), exact, 2e-3);
  // Symmetric, and the scale argument divides: N(0, 4) samples over 2 are N(0, 1) samples.
  EXPECT_EQ(vh::total_variation(p, q), vh::total_variation(q, p));
  auto wide = gaussian_quantiles(n, 0.0);
  for (double& v : wide) v *= 2.0;
  EXPECT_EQ(vh::total_variation(vh::histogram(wide, 2.0, kBins), p), 0.0);
}

// Joint PDFs: N(0, I) against N((1, 1), I) in 2-D. The densities cross on the diagonal
// x + y = 1, which cuts bins, so the binned distance is below the continuous erf(½) = 0.5205;
// it is computed here directly from the exact bin probabilities (products of 1-D ones). The
// sample is the product of m quantile samples with themselves, so its joint histogram is the
// product of its marginal histograms px, qx, and its distance differs from the exact one by
// at most ‖px − P‖₁ + ‖qx − Q‖₁ (‖a⊗a − b⊗b‖₁ ≤ 2‖a − b‖₁), computed here too.
TEST(Pdf, JointTotalVariationOfShiftedGaussians) {
  const vh::Bins b{-10.0, 10.0, 80};  // the bins of compare's (Q, R) PDF (width 0.25)
  const int m = 1000;
  const auto g0 = gaussian_quantiles(m, 0.0), g1 = gaussian_quantiles(m, 1.0);
  std::vector<double> x0, y0, x1, y1;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j) {
      x0.push_back(g0[i]);
      y0.push_back(g0[j]);
      x1.push_back(g1[i]);
      y1.push_back(g1[j]);
    }
  const auto p = vh::histogram2d(x0, 1.0, y0, 1.0, b, b);
  const auto q = vh::histogram2d(x1, 1.0, y1, 1.0, b, b);
  ASSERT_EQ(p.size(), 6400u);
  const auto px = vh::histogram(g0, 1.0, b), qx = vh::histogram(g1, 1.0, b);
  double from_marginals = 0;
  for (int i = 0; i < b.n; ++i)
    for (int j = 0; j < b.n; ++j) {
      // Entry (i, j) is bin i of x, bin j of y: the product of the marginals.
      ASSERT_NEAR(p[i * b.n + j], px[i] * px[j], 1e-15);
      ASSERT_NEAR(q[i * b.n + j], qx[i] * qx[j], 1e-15);
      from_marginals += 0.5 * std::abs(px[i] * px[j] - qx[i] * qx[j]);
    }
  EXPECT_NEAR(vh::total_variation(p, q), from_marginals, 1e-12);

  const auto e0 = gaussian_bins(b, 0.0), e1 = gaussian_bins(b, 1.0);
  double exact = 0, bound = 0;
  for (int i = 0; i < b.n; ++i) {
    bound += std::abs(px[i] - e0[i]) + std::abs(qx[i] - e1[i]);
    for (int j = 0; j < b.n; ++j) exact += 0.5 * std::abs(e0[i] * e0[j] - e1[i] * e1[j]);
  }
  EXPECT_LT(exact, std::erf(0.5));
  EXPECT_GT(exact, std::erf(0.5) - 0.02);  // a bin width of 0.25 loses little
  ASSERT_LT(bound, 0.02);                  // ~25 occupied bins, each within 1/m
  EXPECT_NEAR(vh::total_variation(p, q), exact, bound);
  EXPECT_EQ(vh::total_variation(p, p), 0.0);
}

}  // namespace
