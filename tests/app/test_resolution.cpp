// The resolution a run reports (issue 28 §1), from the outside: run.h5 holds each solver's k_max
// (series kmax) and k_max η (series kmax_eta) equal to k_max (ν³/ε)^{1/4} computed here from
// the stored ε, ν from the initial field's series (ν = u′λ/Re_λ) and k_max by hand from the
// deck; an under-resolved run warns once per solver on the console and in log.txt, a resolved
// one does not; a restart of a run file written before the two series adds them to its old
// rows. The Taylor–Green deck of inputs/ci/ at 16³: at ν = 1/1600 k_max η is about 0.19, at
// ν = 0.05 about 1.7. Each run takes a few seconds on 2 cores.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "io/run_file.h"
#include "shell.h"

namespace fs = std::filesystem;

namespace {

using vh::test::Result;
using vh::test::vortexhit;

const std::string kDeck = std::string(VH_SOURCE_DIR) + "/inputs/ci/tgv1600.ini";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t count(const std::string& text, const std::string& word) {
  std::size_t n = 0;
  for (std::size_t p = text.find(word); p != std::string::npos; p = text.find(word, p + 1)) ++n;
  return n;
}

class Resolution : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("vh_resolution_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
           std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

/// ν of the run from its initial field's series: u′ = √(2K/3), ν = u′λ/Re_λ (docs/design.md).
double nu_of(const vh::RunData& d) {
  const auto& s = d.solvers.at("initial").series;
  const double u = std::sqrt(2 * s.at("K")[0] / 3);
  return u * s.at("lambda")[0] / s.at("Re_lambda")[0];
}

/// Every row of `solver` holds k_max = `kmax` and k_max η = k_max (ν³/ε)^{1/4} of its own ε.
void expect_kmax_eta(const vh::RunData& d, const std::string& solver, double kmax, double nu) {
  const auto& s = d.solvers.at(solver).series;
  ASSERT_TRUE(s.count("kmax") && s.count("kmax_eta")) << solver;
  const auto& eps = s.at("epsilon");
  ASSERT_GE(eps.size(), 1u) << solver;
  ASSERT_EQ(s.at("kmax_eta").size(), eps.size()) << solver;
  for (std::size_t i = 0; i < eps.size(); ++i) {
    EXPECT_EQ(s.at("kmax")[i], kmax) << solver << " output " << i;
    const double want = kmax * std::pow(nu * nu * nu / eps[i], 0.25);
    // ν from the series carries the round-off of λ and Re_λ (a few ulp): 1e-12 relative.
    EXPECT_NEAR(s.at("kmax_eta")[i], want, 1e-12 * want) << solver << " output " << i;
  }
}

TEST_F(Resolution, RunFileHoldsKmaxEtaOfEachSolversOwnEpsilon) {
  // Each solver its own k_max at N = 16: the grid's 7 (initial field), the 2/3 rule's (16 − 1)/3
  // = 5, the vortex filter's 0.5 · 16/2 = 4 (refine 1). Two steps of both solvers: about 6 s.
  const fs::path out = dir / "both";
  const Result r = vortexhit("run " + kDeck + " --case.solver=both --spectral.dealias=2/3 --vortex.filter_fraction=0.5" +
                             " --vortex.refine=1" +
                             " --time.t_end=0.02 --time.output_interval=0.01 --output.fields_at= --output.dir=" +
                             out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const vh::RunData d = vh::RunFile::read((out / "run.h5").string());
  const double nu = nu_of(d);
  EXPECT_NEAR(nu, 0.000625, 1e-12 * 0.000625) << "the deck's flow.nu";
  expect_kmax_eta(d, "initial", 7, nu);
  expect_kmax_eta(d, "spectral", 5, nu);
  expect_kmax_eta(d, "vortex", 4, nu);
  EXPECT_EQ(d.solvers.at("vortex").series.at("kmax_eta").size(), 3u) << "t = 0, 0.01, 0.02";
  // The columns sit after helicity, before the vortex monitors.
  const auto& names = d.solvers.at("vortex").names;
  const auto at = std::find(names.begin(), names.end(), "helicity");
  ASSERT_TRUE(at != names.end() && at + 2 < names.end());
  EXPECT_EQ(*(at + 1), "kmax");
  EXPECT_EQ(*(at + 2), "kmax_eta");

  // Under-resolved (k_max η ≈ 0.1): the banner's resolution line, and one warning per solver.
  EXPECT_NE(r.output.find("resolution k_max eta at t = 0: initial 0.188 (k_max 7), spectral 0.134 (k_max 5), "
                          "vortex 0.107 (k_max 4)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(count(r.output, "warning  spectral k_max eta 0.134 < 1 at t/T = 0 (k_max 5): the dissipation range is "
                            "not resolved; raise domain.n"),
            1u)
      << r.output;
  EXPECT_EQ(count(r.output, "warning  vortex k_max eta 0.107 < 1 at t/T = 0 (k_max 4): the dissipation range is "
                            "not resolved; raise domain.n (or vortex.refine"),
            1u)
      << r.output;
  const std::string log = slurp(out / "log.txt");
  EXPECT_EQ(count(log, "warning  spectral k_max eta"), 1u) << log;
  EXPECT_EQ(count(log, "warning  vortex k_max eta"), 1u) << log;
  EXPECT_NE(r.output.find("kmax_eta  0.11"), std::string::npos) << "the progress line: " << r.output;
  const std::string sum = slurp(out / "summary.txt");
  EXPECT_NE(sum.find("spectral.kmax 5\n"), std::string::npos) << sum;
  EXPECT_NE(sum.find("vortex.kmax 4\n"), std::string::npos) << sum;
  EXPECT_NE(sum.find("vortex.kmax_eta_min"), std::string::npos) << sum;

  // compare names the shells beyond either solver's k_max (N = 16: shells up to 14).
  const Result c = vortexhit("compare " + out.string() + " --at 0");
  EXPECT_EQ(c.status, 0) << c.output;
  EXPECT_NE(c.output.find("shells 5-14 lie beyond vortex k_max = 4, shells 6-14 beyond spectral k_max = 5"),
            std::string::npos)
      << c.output;
  EXPECT_NE(c.output.find("k 1-5*"), std::string::npos) << "the band reaching shell 5: " << c.output;
}

TEST_F(Resolution, ResolvedRunDoesNotWarn) {
  // ν = 0.05: k_max η ≈ 1.7 at N = 16, and it only grows as the flow decays.
  const fs::path out = dir / "resolved";
  const Result r = vortexhit("run " + kDeck + " --flow.nu=0.05 --time.t_end=0.1 --output.dir=" + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("resolution k_max eta at t = 0: initial 1.6"), std::string::npos) << r.output;
  const vh::RunData d = vh::RunFile::read((out / "run.h5").string());
  expect_kmax_eta(d, "spectral", 7, nu_of(d));
  for (double v : d.solvers.at("spectral").series.at("kmax_eta")) EXPECT_GT(v, 1);
}

TEST_F(Resolution, RestartAddsTheColumnsToAnOlderRunFile) {
  // A run file as written before k_max was recorded: the two series removed.
  const fs::path out = dir / "old";
  Result r = vortexhit("run " + kDeck + " --quiet --time.t_end=0.1 --output.dir=" + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string path = (out / "run.h5").string();
  vh::RunData d = vh::RunFile::read(path);
  for (auto& [name, rec] : d.solvers) {
    for (const char* s : {"kmax", "kmax_eta"}) {
      rec.series.erase(s);
      rec.names.erase(std::remove(rec.names.begin(), rec.names.end(), s), rec.names.end());
    }
  }
  vh::RunFile(path, d).write();
  r = vortexhit("run --restart " + out.string() + " --quiet --time.t_end=0.2");
  ASSERT_EQ(r.status, 0) << r.output;
  d = vh::RunFile::read(path);
  EXPECT_EQ(d.solvers.at("spectral").outputs(), 5u) << "t = 0, 0.05, ..., 0.2";
  expect_kmax_eta(d, "initial", 7, nu_of(d));
  expect_kmax_eta(d, "spectral", 7, nu_of(d));
}

}  // namespace
