// `vortexhit compare` from the outside, on run folders written by the real program: a run
// against itself differs by nothing (exit 0); against a copy whose energy is scaled by 1.1
// (K, ε and E(k), written back through RunFile) it reports K ratio 1.1 and fails a 5 %
// tolerance (exit 1); runs on different grids compare on the shells both hold (not their Q
// fields); a missing solver or an unreadable file is bad input (exit 2) named by file and
// dataset; shells the reference holds empty (round-off) are left out of the bands and k_agree
// and named. The PDFs of Q and of (Q, R): a run against
// itself is at distance 0; against a second seed the Q-PDF distance equals one computed here
// from the fields files, ⟨Q_W⟩ follows ε, and --q-pdf-max / --qr-pdf-max fail below it. The
// shells beyond the solvers' k_max are named, and a run file without the series kmax (older
// runs) still compares, saying it cannot tell (tests/app/test_resolution.cpp: two solvers).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "io/fields_file.h"
#include "io/run_file.h"
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

// A run shorter than the requested times (16³ to t/T = 1 against --at 0,1,5,10): each output
// is compared once, and the requests it would have repeated are named, in the text and JSON.
TEST_F(Compare, EachOutputOnceWhateverTheRequests) {
  const fs::path json = root / "once.json";
  const std::string run = (root / "n16").string();
  const Result r = vortexhit("compare " + run + " " + run + " --solver spectral --at 0,1,5,10 --json " + json.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string j = slurp(json);
  auto count = [](const std::string& text, const std::string& word) {
    int n = 0;
    for (std::size_t p = text.find(word); p != std::string::npos; p = text.find(word, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(j, "\"k_agree\""), 2) << "spectra at t/T 0 and 1 only: " << j;
  EXPECT_EQ(count(j, "\"correlation\""), 2) << "Q fields at t/T 0 and 1 only: " << j;
  EXPECT_EQ(count(r.output, "t/T 5, 10 requested: the nearest output is the one shown for an earlier --at time\n"), 2)
      << "once under the spectra, once under the Q statistics: " << r.output;
}

TEST_F(Compare, RunWithItselfHasNoDifferences) {
  const fs::path a = root / "n16", json = root / "self.json";
  const Result r = vortexhit("compare " + a.string() + " " + a.string() +
                             " --K-tol 0.05 --epsilon-tol 1e-12 --band-tol 0 --q-corr-min 1 --q-jaccard-min 1"
                             " --q-pdf-max 0 --qr-pdf-max 0 --json " + json.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "all 7 checks passed")) << r.output;
  EXPECT_TRUE(has(r.output, "Q statistics")) << r.output;
  const std::string j = slurp(json);
  EXPECT_TRUE(has(j, R"("series_max_rel_diff": {"K": 0, "epsilon": 0, "Re_lambda": 0, "L": 0, "T": 0})")) << j;
  EXPECT_FALSE(has(j, R"("rel_diff": 0.)")) << "a band differs: " << j;
  EXPECT_TRUE(has(j, R"("correlation": 1, "jaccard": 1, "q_pdf_distance": 0, "qr_pdf_distance": 0)")) << j;
  EXPECT_TRUE(has(j, R"("q_pdf_bins": {"lo": -10, "hi": 10, "n": 200})")) << j;
  EXPECT_TRUE(has(j, R"("qr_pdf_bins": {"lo": -10, "hi": 10, "n": 80})")) << j;
  // Shells 13 and 14 hold no mode of the 3/2 rule's cube |k_i| <= 7 (its corner is at 12.1):
  // empty in A, they neither extend nor break the agreement.
  EXPECT_TRUE(has(j, R"("k_agree": 12)")) << "identical spectra agree on every shell of 16³ they fill: " << j;
  EXPECT_TRUE(has(j, R"("empty_shells_a": [13, 14])")) << j;
  EXPECT_TRUE(has(j, R"("passed": true)")) << j;
  // The 3/2 rule keeps |k_i| <= N/2 - 1 = 7: the agreement on shells 8-12 is that of modes
  // the solver holds only in part (the cube's corners), and compare says so.
  EXPECT_TRUE(has(r.output, "k_max (largest wavenumber kept): shells 8-14 lie beyond run A's spectral and run B's "
                            "spectral k_max = 7\n"))
      << r.output;
  EXPECT_TRUE(has(r.output, "12 of 14 (shells 8-12 beyond run A's spectral and run B's spectral k_max = 7)"))
      << r.output;
  EXPECT_TRUE(has(j, R"("solver_kmax_a": 7,)")) << j;
  EXPECT_TRUE(has(j, R"("first_shell_beyond_kmax": 8)")) << j;
}

TEST_F(Compare, RunFileWithoutKmaxStillCompares) {
  // A run file written before the series kmax and kmax_eta: compare works and says what it
  // cannot tell.
  const fs::path a = root / "n16", b = root / "no_kmax";
  fs::remove_all(b);
  fs::copy(a, b);
  vh::RunData d = vh::RunFile::read((b / "run.h5").string());
  for (auto& [name, rec] : d.solvers)
    for (const char* s : {"kmax", "kmax_eta"}) {
      rec.series.erase(s);
      rec.names.erase(std::remove(rec.names.begin(), rec.names.end(), s), rec.names.end());
    }
  vh::RunFile((b / "run.h5").string(), d).write();
  const fs::path json = root / "no_kmax.json";
  Result r = vortexhit("compare " + a.string() + " " + b.string() + " --K-tol 1e-12 --json " + json.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "shells 8-14 lie beyond run A's spectral k_max = 7; no k_max recorded for run B's "
                            "spectral (run.h5 written before the series kmax)"))
      << r.output;
  EXPECT_TRUE(has(slurp(json), R"("solver_kmax_b": null)")) << slurp(json);
  r = vortexhit("compare " + b.string() + " " + b.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "no k_max recorded for run A's spectral and run B's spectral")) << r.output;
  EXPECT_TRUE(has(r.output, "  12 of 14\n")) << "nothing to say beyond k_agree: " << r.output;
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

/// Writes E(k) of every solver and output of `dir`'s run file at `shells` as `share` of that
/// spectrum's energy (the shells' own values left out of the sum).
void set_shells(const fs::path& dir, const std::vector<int>& shells, double share) {
  vh::RunData d = vh::RunFile::read((dir / "run.h5").string());
  for (auto& [name, rec] : d.solvers)
    for (auto& row : rec.E) {
      double total = 0;
      for (std::size_t k = 0; k < row.size(); ++k)
        if (std::find(shells.begin(), shells.end(), int(k)) == shells.end()) total += row[k];
      for (int k : shells) row[k] = share * total;
    }
  vh::RunFile((dir / "run.h5").string(), d).write();
}

TEST_F(Compare, ShellsTheReferenceHoldsEmptyAreLeftOut) {
  // A holds shells 1 and 3 at round-off (1e-35 of its energy: a symmetry's zeros, as the
  // Taylor–Green vortex's shell 1), B holds 1e-9 there (a solver's noise); every other shell is
  // the same. A ratio to round-off would end the agreement at k = 0; those shells are left out,
  // named, and B's share there reported.
  const fs::path a = root / "empty_a", b = root / "noise_b", json = root / "empty.json";
  for (const auto& [dir, share] : {std::make_pair(a, 1e-35), std::make_pair(b, 1e-9)}) {
    fs::remove_all(dir);
    fs::copy(root / "n16", dir);
    set_shells(dir, {1, 3}, share);
  }
  Result r = vortexhit("compare " + a.string() + " " + b.string() + " --band-tol 1e-8 --k-agree-min 12 --json " +
                       json.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "shells 1, 3, 13-14 empty in run A's spectral (< 1e-20 of its energy)")) << r.output;
  EXPECT_TRUE(has(r.output, "run B's spectral holds at most 1e-09 of its energy in one of them")) << r.output;
  std::string j = slurp(json);
  EXPECT_TRUE(has(j, R"("k_agree": 12)")) << "the shells A fills agree to the last: " << j;
  EXPECT_TRUE(has(j, R"("shell_apart": null)")) << "nothing ends the agreement: " << j;
  EXPECT_TRUE(has(j, R"("empty_shells_a": [1, 3, 13, 14])")) << j;
  EXPECT_NEAR(json_number(j, "b_in_empty_shells"), 1e-9, 1e-15) << j;
  EXPECT_LT(json_number(j, "rel_diff"), 1e-12) << "the band without shells 1 and 3 is the same: " << j;

  // A shell that B holds empty and A fills still disagrees: the rule is A's, the reference's.
  r = vortexhit("compare " + b.string() + " " + a.string() + " --json " + json.string());
  EXPECT_EQ(r.status, 0) << r.output;
  j = slurp(json);
  EXPECT_TRUE(has(j, R"("k_agree": 0)")) << j;
  EXPECT_TRUE(has(j, R"("empty_shells_a": [13, 14])")) << j;
  // The line says where the agreement ends and how little of A's energy that shell holds.
  EXPECT_TRUE(has(r.output, "  0 of 14; shell 1: E_B/E_A 1e-26, 1e-09 of A's energy\n")) << r.output;
  EXPECT_TRUE(has(j, R"("shell_apart": 1)")) << j;
  EXPECT_NEAR(json_number(j, "ratio_apart"), 1e-26, 1e-36) << j;
  EXPECT_NEAR(json_number(j, "a_share_apart"), 1e-9, 1e-17) << j;

  // A band of shells A holds empty prints "empty", and is not measured: at 8³ it is the one
  // band (k = 1-2), so a band check has nothing to measure and fails as such.
  const fs::path a8 = root / "empty_a8", b8 = root / "noise_b8";
  for (const auto& [dir, share] : {std::make_pair(a8, 1e-35), std::make_pair(b8, 1e-9)}) {
    fs::remove_all(dir);
    fs::copy(root / "n8", dir);
    set_shells(dir, {1, 2}, share);
  }
  r = vortexhit("compare " + a8.string() + " " + b8.string() + " --band-tol 0 --json " + json.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "FAILED (not measured)")) << r.output;
  EXPECT_TRUE(has(r.output, "      empty  ")) << r.output;
  EXPECT_TRUE(has(slurp(json), R"("rel_diff": null)")) << slurp(json);
}

/// ½ Σ|p − q| of the PDFs of Q/⟨Q²⟩^½ of two fields on compare's bins (200 of 0.1 on [−10, 10),
/// the tails in the end bins), written out here apart from core/pdf.h.
double q_pdf_distance(const std::vector<double>& a, const std::vector<double>& b) {
  auto hist = [](const std::vector<double>& q) {
    double s = 0;
    for (double v : q) s += v * v;
    const double rms = std::sqrt(s / double(q.size()));
    std::vector<double> p(200, 0.0);
    for (double v : q) p[std::clamp(int(std::floor((v / rms + 10.0) / 0.1)), 0, 199)] += 1.0 / double(q.size());
    return p;
  };
  const auto pa = hist(a), pb = hist(b);
  double d = 0;
  for (int i = 0; i < 200; ++i) d += 0.5 * std::abs(pa[i] - pb[i]);
  return d;
}

TEST_F(Compare, QPdfDistancesOfTwoSeeds) {
  // A second seed, made here: only this test needs it (ctest runs each test in its own process).
  const fs::path a = root / "n16", b = root / "seed2", json = root / "seeds.json";
  Result r = vortexhit("run " + std::string(VH_SOURCE_DIR) + "/inputs/quick.ini --quiet --device=cpu "
                       "--case.solver=spectral --domain.n=16 --case.seed=2 --output.dir=" + b.string());
  ASSERT_EQ(r.status, 0) << r.output;
  r = vortexhit("compare " + a.string() + " " + b.string() + " --at 0,1 --json " + json.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "Q statistics")) << r.output;
  EXPECT_TRUE(has(r.output, "(Q,R) pdf")) << r.output;
  const std::string j = slurp(json);
  for (int i = 0; i < 2; ++i) {  // t/T = 0 and 1, fields_0000.h5 and fields_0001.h5
    const std::string f = "fields_000" + std::to_string(i) + ".h5";
    const double d = q_pdf_distance(vh::read_scalar_field((a / f).string(), "spectral").v,
                                    vh::read_scalar_field((b / f).string(), "spectral").v);
    // Sums of the same fractions in another order: round-off.
    EXPECT_NEAR(json_number(j, "q_pdf_distance", i), d, 1e-12) << f;
    EXPECT_GT(d, 0.01) << "two seeds have different Q fields: " << f;
    const double dqr = json_number(j, "qr_pdf_distance", i);
    EXPECT_GT(dqr, 0.01) << j;
    EXPECT_LT(dqr, 0.5) << "one flow, two seeds: the teardrops overlap: " << j;
    // ⟨Q_W⟩ = ⟨ω·ω⟩/4 on the grid = ε/4ν from the spectrum (solenoidal u, one ν): its
    // ratio is the ε ratio of the series at the same output to round-off.
    const int s = i == 0 ? 0 : 10;  // outputs every 0.1 T
    ASSERT_NEAR(json_number(j, "t_over_T", s), i, 1e-9);
    EXPECT_NEAR(json_number(j, "q_w_mean_b", i) / json_number(j, "q_w_mean_a", i),
                json_number(j, "epsilon_ratio", s), 1e-10) << j;
  }
  const double worst_q = std::max(json_number(j, "q_pdf_distance", 0), json_number(j, "q_pdf_distance", 1));
  const double worst_qr = std::max(json_number(j, "qr_pdf_distance", 0), json_number(j, "qr_pdf_distance", 1));

  // Each flag fails just below the worst distance and passes at it.
  char flags[160];
  std::snprintf(flags, sizeof flags, " --at 0,1 --q-pdf-max %.17g --qr-pdf-max %.17g", 0.99 * worst_q, worst_qr);
  r = vortexhit("compare " + a.string() + " " + b.string() + flags);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "check --q-pdf-max")) << r.output;
  EXPECT_TRUE(has(r.output, "largest distance of the Q PDFs")) << r.output;
  EXPECT_TRUE(has(r.output, "1 of 2 checks failed")) << r.output;
  std::snprintf(flags, sizeof flags, " --at 0,1 --q-pdf-max %.17g --qr-pdf-max %.17g", worst_q, 0.99 * worst_qr);
  r = vortexhit("compare " + a.string() + " " + b.string() + flags);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "check --qr-pdf-max")) << r.output;
  EXPECT_TRUE(has(r.output, "1 of 2 checks failed")) << r.output;
  std::snprintf(flags, sizeof flags, " --at 0,1 --q-pdf-max %.17g --qr-pdf-max %.17g", worst_q, worst_qr);
  EXPECT_EQ(vortexhit("compare " + a.string() + " " + b.string() + flags).status, 0);
}

TEST_F(Compare, DifferentGridsCompareOnTheShellsBothHold) {
  // A coarse run against a finer one of the same deck (the check of a run against a resolved
  // reference): the initial field is keyed by global wavenumber, so at t = 0 both hold the same
  // modes up to the coarser's k_max = 3 (8³, 3/2 rule); after that the series ratios are what
  // the two files say, and the Q fields, measured point by point, are not compared.
  const fs::path a = root / "n16", b = root / "n8", json = root / "grids.json";
  Result r = vortexhit("compare " + a.string() + " " + b.string() + " --at 0,1 --json " + json.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "N 16 (run A), 8 (run B)")) << r.output;
  EXPECT_TRUE(has(r.output, "Q fields: not compared: the runs' grids differ (N = 16 and 8)")) << r.output;
  const std::string j = slurp(json);
  EXPECT_EQ(json_number(j, "k_max"), 7) << "the coarser run's last shell: " << j;
  EXPECT_LT(json_number(j, "rel_diff", 0), 1e-9) << "the same modes at t = 0 (band 1-2 of 8³): " << j;
  EXPECT_GE(json_number(j, "k_agree", 0), 3) << "shells 1-3, whole in both, agree at t = 0: " << j;

  // The ratios against the two files read here.
  const vh::RunData da = vh::RunFile::read((a / "run.h5").string()), db = vh::RunFile::read((b / "run.h5").string());
  const auto& sa = da.solvers.at("spectral").series;
  const auto& sb = db.solvers.at("spectral").series;
  ASSERT_EQ(sa.at("t").size(), sb.at("t").size());
  double worst_k = 0;
  for (std::size_t i = 0; i < sa.at("t").size(); ++i) {
    ASSERT_NEAR(sa.at("t")[i], sb.at("t")[i], 1e-9);
    const double ratio = sb.at("K")[i] / sa.at("K")[i];
    EXPECT_NEAR(json_number(j, "K_ratio", int(i)), ratio, 1e-12) << i;
    worst_k = std::max(worst_k, std::abs(ratio - 1));
  }
  EXPECT_GT(worst_k, 1e-3) << "8³ does not resolve the quick flow: its K must differ";
  EXPECT_NEAR(json_number(j, "K"), worst_k, 1e-12) << j;

  // A Q check cannot be measured across grids: it fails, saying so.
  r = vortexhit("compare " + a.string() + " " + b.string() + " --q-corr-min 0.5");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "not measured")) << r.output;
}

TEST_F(Compare, OneSolverOfEachRun) {
  // --solvers A,B with two runs: run B's solver B against run A's solver A (e.g. a vortex run
  // against a finer spectral reference); here initial and spectral, which share t = 0 only.
  const fs::path a = root / "n16", b = root / "n8";
  Result r = vortexhit("compare " + a.string() + " " + b.string() + " --solvers initial,spectral --K-tol 1e-12");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "A: " + (a / "run.h5").string() + " /initial   B: " + (b / "run.h5").string() +
                                " /spectral"))
      << r.output;
  EXPECT_TRUE(has(r.output, "series at 1 common output times")) << r.output;
  r = vortexhit("compare " + a.string() + " " + b.string() + " --solvers initial,spectral --solver spectral");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, "--solver and --solvers together")) << r.output;
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
  r = vortexhit("compare " + (root / "n16").string() + " --solvers initial,spectral --qr-pdf-max 1");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "check --qr-pdf-max 1: largest distance of the (Q,R) PDFs = n/a  FAILED (not measured)"))
      << r.output;
}

}  // namespace
