// ordered_sum (base/ordered_sum.h): the same bits on any number of threads and any call, equal
// to the chunked sum written out serially, and the chunk size given by the caller kept.
#include <gtest/gtest.h>
#include <omp.h>

#include <array>
#include <cstdint>
#include <vector>

#include "base/ordered_sum.h"

namespace {

/// The chunks' sums in order, serially: what ordered_sum must give.
double chunked(const std::vector<double>& v, std::ptrdiff_t chunk) {
  double sum = 0;
  for (std::size_t c = 0; c < v.size(); c += std::size_t(chunk)) {
    double part = 0;
    for (std::size_t i = c; i < v.size() && i < c + std::size_t(chunk); ++i) part += v[i];
    sum += part;
  }
  return sum;
}

TEST(OrderedSum, TheSameBitsOnAnyThreadCount) {
  std::vector<double> v(100003);
  std::uint64_t x = 99;
  for (double& e : v) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    e = (double(x >> 11) / 9007199254740992.0 - 0.5) * double(1 + (x >> 60));  // mixed magnitudes
  }
  const auto n = std::ptrdiff_t(v.size());
  const int saved = omp_get_max_threads();
  for (std::ptrdiff_t chunk : {vh::kSumChunk, std::ptrdiff_t(7)}) {
    const double want = chunked(v, chunk);
    for (int threads : {1, 2, 3, 5, 8}) {
      omp_set_num_threads(threads);
      const std::array<double, 2> s =
          vh::ordered_sum<2>(n, [&](std::ptrdiff_t i, double* acc) { acc[0] += v[i], acc[1] += 2 * v[i]; }, chunk);
      EXPECT_EQ(s[0], want) << threads << " threads, chunk " << chunk;
      EXPECT_EQ(s[1], 2 * want) << threads << " threads, chunk " << chunk;  // ×2 is exact
    }
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(vh::ordered_sum<1>(0, [](std::ptrdiff_t, double* acc) { acc[0] += 1; })[0], 0.0);
}

}  // namespace
