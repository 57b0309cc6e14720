// Sums of doubles over many terms, in parallel and in an order fixed by the number of terms
// alone: the same bits on any thread count and on every call. An OpenMP reduction(+) adds the
// threads' partial sums in the order they finish, so on more than two threads a run's monitors
// (and a CG solve's iterates) changed in the last bit from run to run, and a restart could not
// repeat them. Here the terms go in chunks of kSumChunk, each chunk summed in order by one
// thread, and the chunks' sums are added in chunk order.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace vh {

/// Terms a chunk of ordered_sum holds (by default).
inline constexpr std::ptrdiff_t kSumChunk = 4096;

/// Σ over i < n of the K quantities that term(i, acc) adds to acc[0 … K−1], in the order
/// described above, `chunk` terms a chunk (a term that is itself a row of many values: about
/// kSumChunk of them a chunk, so that small grids still spread over the threads).
template <int K, class F>
std::array<double, K> ordered_sum(std::ptrdiff_t n, F&& term, std::ptrdiff_t chunk = kSumChunk) {
  if (chunk < 1) chunk = 1;
  const std::ptrdiff_t chunks = (n + chunk - 1) / chunk;
  std::vector<std::array<double, K>> part(static_cast<std::size_t>(chunks));
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t c = 0; c < chunks; ++c) {
    std::array<double, K> acc{};
    const std::ptrdiff_t end = c + 1 == chunks ? n : (c + 1) * chunk;
    for (std::ptrdiff_t i = c * chunk; i < end; ++i) term(i, acc.data());
    part[static_cast<std::size_t>(c)] = acc;
  }
  std::array<double, K> sum{};
  for (const auto& p : part)
    for (int k = 0; k < K; ++k) sum[k] += p[k];
  return sum;
}

}  // namespace vh
