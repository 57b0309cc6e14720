// vortexhit from the outside: every class of bad input exits 2 with one line naming the file
// or key and leaves the output folder as it was; a good deck writes the run folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/run_file.h"
#include "shell.h"

namespace fs = std::filesystem;

namespace {

using vh::test::Result;
Result run(const std::string& args) { return vh::test::vortexhit(args); }

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("vh_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
           std::to_string(::getpid()));  // the pid: other checkouts run the same tests on this machine
    fs::remove_all(dir);
    fs::create_directories(dir);
    out = dir / "run";
  }
  void TearDown() override { fs::remove_all(dir); }

  /// A small valid deck plus `extra` lines appended to its [flow] … sections.
  std::string deck(const std::string& body) {
    const fs::path p = dir / "deck.ini";
    std::ofstream(p) << "# test deck\ndevice = cpu\n[case]\nname = t\nsolver = initial\n" << body;
    return p.string();
  }
  std::string out_arg() const { return " --output.dir=" + out.string(); }

  /// Exit 2, one line of error output mentioning every word in `names`, nothing created.
  void expect_bad(const Result& r, std::initializer_list<std::string> names) {
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    for (const auto& n : names) EXPECT_NE(r.output.find(n), std::string::npos) << n << " not in: " << r.output;
    EXPECT_FALSE(fs::exists(out)) << "output folder created for bad input";
  }

  fs::path dir, out;
};

const std::string kFlow = "[flow]\nRe_lambda = 20\n[domain]\nn = 8\n";

TEST_F(Cli, UnknownKeyInDeckNamesLineAndNearestKey) {
  const auto d = deck(kFlow + "[time]\nt_edn = 1\n");
  expect_bad(run("run " + d + out_arg()), {"deck.ini:11", "time.t_edn", "time.t_end"});
}

TEST_F(Cli, UnknownKeyOnCommandLine) {
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --flow.Re_lamda=3"), {"flow.Re_lamda", "flow.Re_lambda"});
}

TEST_F(Cli, DuplicateKey) {
  expect_bad(run("run " + deck(kFlow + "[domain]\nn = 16\n") + out_arg()), {"duplicate", "domain.n", "deck.ini:"});
}

TEST_F(Cli, MalformedValues) {
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --domain.n=abc"), {"domain.n", "integer"});
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --time.cfl=fast"), {"time.cfl", "real"});
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --output.overwrite=maybe"), {"output.overwrite", "boolean"});
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --case.solver=lbm"), {"case.solver", "allowed"});
}

TEST_F(Cli, ValuesOutOfRange) {
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --domain.n=17"), {"domain.n", "even"});
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --domain.n=6"), {"domain.n", "8"});
  expect_bad(run("run " + deck("[flow]\nnu = -0.1\n") + out_arg()), {"flow.nu", ">= 0"});
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --flow.nu=0.01"), {"flow.Re_lambda", "flow.nu"});
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --time.t_end=0"), {"time.t_end", "> 0"});
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --time.t_end_over_T=-1"), {"time.t_end_over_T"});
}

TEST_F(Cli, MissingAndUnreadableDeck) {
  expect_bad(run("run " + (dir / "nope.ini").string() + out_arg()), {"nope.ini", "no such file"});
  // As root every file is readable, so a folder stands in for an unreadable deck.
  fs::create_directories(dir / "folder.ini");
  expect_bad(run("run " + (dir / "folder.ini").string() + out_arg()), {"folder.ini", "not a regular file"});
}

TEST_F(Cli, ExistingOutputFolderIsLeftAsItWas) {
  fs::create_directories(out);
  std::ofstream(out / "run.h5") << "precious";
  const Result r = run("run " + deck(kFlow) + out_arg());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("output.dir"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("overwrite"), std::string::npos) << r.output;
  std::ifstream in(out / "run.h5");
  std::string s;
  in >> s;
  EXPECT_EQ(s, "precious");
  EXPECT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator()), 1);
}

TEST_F(Cli, HelpListsEveryKeyWithItsDefault) {
  const Result r = run("help");
  EXPECT_EQ(r.status, 0);
  for (const char* k : {"[case]", "solver = both", "[domain]", "n = 32", "[flow]", "# nu =",
                        "[time]", "[output]", "device = auto", "[spectral]"})
    EXPECT_NE(r.output.find(k), std::string::npos) << k;
}

TEST_F(Cli, InitialRunWritesTheRunFolder) {
  const Result r = run("run " + deck(kFlow + "[output]\nfields_at = 0\n") + out_arg() + " --domain.n=16 --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(r.output.empty()) << "--quiet printed: " << r.output;
  for (const char* f : {"run.h5", "summary.txt", "log.txt", "fields_0000.h5", "fields_0000.xdmf", "fields.xdmf"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  const vh::RunData d = vh::RunFile::read((out / "run.h5").string());
  ASSERT_TRUE(d.solvers.count("initial"));
  const auto& s = d.solvers.at("initial");
  EXPECT_NEAR(s.series.at("Re_lambda").at(0), 20.0, 1e-9);
  EXPECT_EQ(s.series.at("t").at(0), 0.0);
  EXPECT_NE(d.deck.find("n = 16"), std::string::npos) << "the command line override is in /deck";
  EXPECT_EQ(d.meta.at("ranks"), "1");
}

TEST_F(Cli, CommandLineOverridesTheDeck) {
  const Result r = run("run " + deck(kFlow) + out_arg() + " --domain.n 12 --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  const vh::RunData d = vh::RunFile::read((out / "run.h5").string());
  EXPECT_EQ(d.solvers.at("initial").k.size(), std::size_t(std::lround(std::sqrt(3.0) * 6)) + 1);
}

TEST_F(Cli, EmptyValueOnTheCommandLineUnsetsADeckKey) {
  // The deck gives Re_lambda; giving nu as well is bad input unless Re_lambda is unset.
  EXPECT_EQ(run("run " + deck(kFlow) + out_arg() + " --flow.nu=0.01 --quiet").status, 2);
  fs::remove_all(out);
  const Result r = run("run " + deck(kFlow) + out_arg() + " --flow.Re_lambda= --flow.nu=0.01 --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  const vh::RunData d = vh::RunFile::read((out / "run.h5").string());
  EXPECT_NE(d.deck.find("nu = 0.01"), std::string::npos);
  EXPECT_NE(d.deck.find("# Re_lambda ="), std::string::npos) << d.deck;
}

TEST_F(Cli, SpectralRunReachesTheEndTime) {
  const Result r = run("run " + deck(kFlow + "[time]\nt_end_over_T = 0.2\noutput_interval_over_T = 0.05\n") +
                       out_arg() + " --case.solver=spectral --domain.n=16 --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  const vh::RunData d = vh::RunFile::read((out / "run.h5").string());
  const auto& s = d.solvers.at("spectral");
  const double T0 = d.solvers.at("initial").series.at("T").at(0);
  EXPECT_EQ(s.outputs(), 5u);
  EXPECT_NEAR(s.series.at("t").back(), 0.2 * T0, 1e-12);
  EXPECT_LT(s.series.at("K").back(), s.series.at("K").front());  // decaying
}

}  // namespace
