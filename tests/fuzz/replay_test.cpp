// Replays a fuzz harness over its seed corpus and its regression inputs (the inputs of every
// crash the fuzzer found, kept after the fix), in every build, sanitized builds included:
// each must come back; a finding aborts the test binary. VH_FUZZ_SUITE names the harness,
// VH_FUZZ_DIR its folder (tests/fuzz/<harness>/{corpus,regressions}).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace fs = std::filesystem;

TEST(VH_FUZZ_SUITE, ReplaysSeedsAndRegressions) {
  int inputs = 0;
  for (const char* sub : {"corpus", "regressions"}) {
    const fs::path dir = fs::path(VH_FUZZ_DIR) / sub;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path(), std::ios::binary);
      const std::string bytes(std::istreambuf_iterator<char>(in), {});
      SCOPED_TRACE(e.path().string());
      EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), 0);
      ++inputs;
    }
  }
  EXPECT_GT(inputs, 0) << "no seed corpus in " << VH_FUZZ_DIR;
}
