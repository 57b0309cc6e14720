#include "core/pdf.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace vh {
namespace {

/// Counts per bin → fractions of `counted`; NaN everywhere when nothing was counted.
std::vector<double> fractions(const std::vector<std::size_t>& counts, std::size_t counted) {
  std::vector<double> p(counts.size(), std::numeric_limits<double>::quiet_NaN());
  if (counted)
    for (std::size_t i = 0; i < counts.size(); ++i) p[i] = double(counts[i]) / double(counted);
  return p;
}

}  // namespace

int Bins::index(double v) const {
  const double f = std::floor((v - lo) / width());
  if (!(f >= 0)) return 0;  // below lo
  return f >= n ? n - 1 : int(f);
}

std::vector<double> histogram(const std::vector<double>& v, double scale, const Bins& b) {
  VH_CHECK(b.n >= 1 && b.hi > b.lo, "histogram: bins need n >= 1 and hi > lo");
  std::vector<std::size_t> counts(b.n, 0);
  std::size_t counted = 0;
  for (double x : v) {
    const double s = x / scale;
    if (!std::isfinite(s)) continue;
    ++counts[b.index(s)];
    ++counted;
  }
  return fractions(counts, counted);
}

std::vector<double> histogram2d(const std::vector<double>& x, double sx, const std::vector<double>& y, double sy,
                                const Bins& bx, const Bins& by) {
  VH_CHECK(x.size() == y.size(), "histogram2d: x and y differ in length");
  VH_CHECK(bx.n >= 1 && bx.hi > bx.lo && by.n >= 1 && by.hi > by.lo, "histogram2d: bins need n >= 1 and hi > lo");
  std::vector<std::size_t> counts(std::size_t(bx.n) * by.n, 0);
  std::size_t counted = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double a = x[i] / sx, b = y[i] / sy;
    if (!std::isfinite(a) || !std::isfinite(b)) continue;
    ++counts[std::size_t(bx.index(a)) * by.n + by.index(b)];
    ++counted;
  }
  return fractions(counts, counted);
}

double total_variation(const std::vector<double>& p, const std::vector<double>& q) {
  VH_CHECK(p.size() == q.size(), "total_variation: histograms on different bins");
  double s = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) s += std::abs(p[i] - q[i]);  // NaN propagates
  return 0.5 * s;
}

}  // namespace vh
