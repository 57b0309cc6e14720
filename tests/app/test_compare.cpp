// `vortexhit compare` from the outside, on run folders written by the real program: a run
// against itself differs by nothing (exit 0); against a copy whose energy is scaled by 1.1
// (K, ε and E(k), written back through RunFile) it reports K ratio 1.1 and fails a 5 %
// tolerance (exit 1); runs on different grids, a missing solver or an unreadable file are
// bad input (exit 2) named by file and dataset.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "core/run_file.h"
#include "shell.h"

namespace fs = std::filesystem;

namespace {

using vh::test::Result;
using vh::test::vortexhit;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The number after the `nth` occurrence of "key": in a JSON text (NaN when absent).
double json_number(const std::string& j, const std::string& key, int nth = 0) {
  std::size_t pos = 0;
  for (int i = 0; i <= nth; ++i) {
    pos = j.find("\"" + key + "\": ", pos);
    if (pos == std::string::npos) return std::nan("");
    pos += key.size() + 4;
  }
  return std::strtod(j.c_str() + pos, nullptr);
}

bool has(const std::string& text, const std::string& word) { return text.find(word) != std::string::npos; }

/// Two tiny spectral runs (16³ and 8³, fields at t/T = 0 and 1) shared by every test: the
/// program is what is under test, so its real output is the input here.
class Compare : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One folder per process: ctest runs each test in its own process, in parallel.
    root = fs::temp_directory_path() / ("vh_compare_" + std::to_string(getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    const std::string deck = std::string(VH_SOURCE_DIR) + "/inputs/quick.ini";
    for (int n : {16, 8}) {
      const Result r = vortexhit("run " + deck + " --quiet --device=cpu --case.solver=spectral --domain.n=" +
                                 std::to_string(n) + " --output.dir=" + (root / ("n" + std::to_string(n))).string());
      ASSERT_EQ(r.status, 0) << r.output;
    }
  }
  static void TearDownTestSuite() { fs::remove_all(root); }

  static fs::path root;
};
fs::path Compare::root;

TEST_F(Compare, RunWithItselfHasNoDifferences) {
  const fs::path a = root / "n16", json = root / "self.json";
  const Result r = vortexhit("compare " + a.string() + " " + a.string() +
                             " --K-tol 0.05 --epsilon-tol 1e-12 --band-tol 0 --q-corr-min 1 --q-jaccard-min 1"
                             " --json " + json.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "all 5 checks passed")) << r.output;
  const std::string j = slurp(json);
  EXPECT_TRUE(has(j, R"("series_max_rel_diff": {"K": 0, "epsilon": 0, "Re_lambda": 0, "L": 0, "T": 0})")) << j;
  EXPECT_FALSE(has(j, R"("rel_diff": 0.)")) << "a band differs: " << j;
  EXPECT_TRUE(has(j, R"("correlation": 1, "jaccard": 1)")) << j;
  EXPECT_TRUE(has(j, R"("k_agree": 14)")) << "identical spectra agree on every shell of 16³: " << j;
  EXPECT_TRUE(has(j, R"("passed": true)")) << j;
}

TEST_F(Compare, EnergyScaledByTenPercentFailsFivePercentTolerance) {
  const fs::path a = root / "n16", b = root / "scaled";
  fs::remove_all(b);
  fs::copy(a, b);
  // Scale the energy of every solver group: K, ε and E(k) are all quadratic in u.
  vh::RunData d = vh::RunFile::read((b / "run.h5").string());
  for (auto& [name, rec] : d.solvers) {
    for (const char* s : {"K", "epsilon"})
      for (double& v : rec.series.at(s)) v *= 1.1;
    for (auto& row : rec.E)
      for (double& v : row) v *= 1.1;
  }
  vh::RunFile((b / "run.h5").string(), d).write();

  const fs::path json = root / "scaled.json";
  const Result r = vortexhit("compare " + a.string() + " " + b.string() + " --solver spectral --k-tol 0.05 --json " +
                             json.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "1.100000")) << "K ratio 1.1 in the table: " << r.output;
  EXPECT_TRUE(has(r.output, "check --K-tol 0.05: max |K B/A - 1| = 0.1  FAILED")) << r.output;
  const std::string j = slurp(json);
  EXPECT_NEAR(json_number(j, "K_ratio", 0), 1.1, 1e-14) << j;
  EXPECT_NEAR(json_number(j, "K_ratio", 5), 1.1, 1e-14) << j;
  EXPECT_NEAR(json_number(j, "epsilon_ratio", 5), 1.1, 1e-14) << j;
  EXPECT_NEAR(json_number(j, "rel_diff"), 0.1, 1e-14) << "E(k) scaled by 1.1: " << j;
  EXPECT_TRUE(has(j, R"("passed": false)")) << j;

  // A 15 % tolerance passes: the exit status follows the tolerance, not the mere difference.
  EXPECT_EQ(vortexhit("compare " + a.string() + " " + b.string() + " --K-tol 0.15").status, 0);
}

TEST_F(Compare, DifferentGridsAreBadInput) {
  const Result r = vortexhit("compare " + (root / "n16").string() + " " + (root / "n8").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, "different N")) << r.output;
  EXPECT_TRUE(has(r.output, (root / "n8" / "run.h5").string())) << r.output;
  EXPECT_TRUE(has(r.output, "domain.n")) << r.output;
}

TEST_F(Compare, MissingSolverAndUnreadableFileAreBadInput) {
  Result r = vortexhit("compare " + (root / "n16").string());  // default spectral,vortex: no vortex yet
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, "/vortex")) << r.output;
  EXPECT_TRUE(has(r.output, "run.h5")) << r.output;

  const fs::path broken = root / "broken";
  fs::create_directories(broken);
  std::ofstream(broken / "run.h5") << "not HDF5";
  r = vortexhit("compare " + (root / "n16").string() + " " + broken.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, (broken / "run.h5").string())) << r.output;
}

TEST_F(Compare, TwoSolversOfOneRun) {
  // initial and spectral share t = 0 only; no fields file holds both, so a Q check cannot be
  // measured and fails rather than passing silently.
  Result r = vortexhit("compare " + (root / "n16").string() + " --solvers initial,spectral --K-tol 1e-12");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "series at 1 common output times")) << r.output;
  r = vortexhit("compare " + (root / "n16").string() + " --solvers initial,spectral --q-corr-min 0.5");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "not measured")) << r.output;
}

}  // namespace
