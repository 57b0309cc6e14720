// The benchmarks that allocate big arrays ask the memory estimate first (bench/memory_check.h): a
// case too large for the machine is refused at once, exit 2, with one line naming the largest
// size that fits, instead of allocating and ending in std::bad_alloc or "CUDA: out of memory"
// (exit 1). Under `ulimit -v` of 2 GiB, so that every machine is too small and an allocation of
// the case would fail (exit 1): exit 2 shows that nothing was allocated.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "shell.h"

namespace {

using vh::test::Result;

/// `cmd` under ulimit -v 2 GiB, with its wall time in seconds.
Result limited(const std::string& cmd, double& seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  Result r = vh::test::shell("ulimit -v 2097152 && " + cmd);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void expect_refused(const Result& r, double seconds, const std::string& start, const std::string& allowed) {
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.rfind(start, 0), 0u) << "expected: " << start << "\n" << r.output;
  EXPECT_NE(r.output.find("ulimit -v"), std::string::npos) << "names the limit that decides:\n" << r.output;
  EXPECT_NE(r.output.find("; allowed here: " + allowed + " <= "), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << "one line:\n" << r.output;
  // The estimate and the limits only: well under a second where no array is made.
  EXPECT_LT(seconds, 10) << r.output;
}

TEST(BenchMemory, SpectralBenchRefusesACaseTooLargeBeforeAllocating) {
  double s = 0;
  // 512³ with the 3/2 rule needs about 31 GiB on the CPU; 4096³ about 20 TiB.
  for (const char* n : {"512", "64,4096"}) {
    const Result r = limited(std::string(VH_SPECTRAL_BENCH) + " --device cpu --dealias 3/2 --n " + n, s);
    expect_refused(r, s, std::string("spectral_bench: --n ") + (n[0] == '5' ? "512" : "4096") + " --dealias 3/2 needs ",
                   "--n");
  }
}

TEST(BenchMemory, FmmBenchRefusesACaseTooLargeBeforeAllocating) {
  double s = 0;
  // 2^24 particles: about 12 GiB for the FMM and the bench's arrays.
  const Result r = limited(std::string(VH_FMM_BENCH) + " --device cpu --min-log2n 10 --max-log2n 24", s);
  expect_refused(r, s, "fmm_bench: --max-log2n 24 needs ", "--max-log2n");
}

}  // namespace
