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
#include <sstream>
#include <string>

#include "io/run_file.h"
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
           std::to_string(::getpid()));
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
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --case.solver=vortex --vortex.velocity=lattice "
                 "--vortex.reinit_every=2"), {"vortex.velocity", "reinit_every = 1"});
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --case.solver=vortex --vortex.diffusion=integrating-factor "
                 "--vortex.reinit_every=2"), {"vortex.diffusion", "integrating-factor", "reinit_every = 1"});
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --time.lcfl=-0.1"), {"time.lcfl", ">= 0"});
  // The default refine 1.5 with an N it does not suit (15 particles per direction): the refines that do.
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --case.solver=vortex --domain.n=10"),
             {"default: vortex.refine = '1.5'", "domain.n = 10", "15 points", "for this n e.g. refine = 1, 2"});
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

// time.lcfl holds the vortex solver's step to lcfl / max |∂u_i/∂x_j| and leaves the spectral
// solver's alone. The Taylor–Green vortex at 16³ has max |∂u_i/∂x_j| = 1 (and max |u_i| = 1) at
// t = 0 and grows a little as the vortex stretches: to t = 0.1 the CFL step 0.5 h = 0.196 is one
// step of each solver (the last step ends at the output time); time.lcfl = 0.03 makes the vortex
// solver's steps ≤ 0.03 / max |∂u_i/∂x_j|, four of them (0.1 / 0.03 = 3.3, and still four while
// max |∂u_i/∂x_j| < 1.2).
TEST_F(Cli, LagrangianCflHoldsBackTheVortexStepOnly) {
  const std::string d = deck("[flow]\nspectrum = taylor-green\nnu = 0.01\n[domain]\nn = 16\n[time]\nt_end = 0.1\n"
                             "output_interval = 0.1\n[output]\nfields_at =\n");
  for (const double lcfl : {0.0, 0.03}) {
    const Result r = run("run " + d + out_arg() + " --case.solver=both --time.cfl=0.5 --time.lcfl=" +
                         std::to_string(lcfl) + " --output.overwrite=true --quiet");
    ASSERT_EQ(r.status, 0) << r.output;
    const vh::RunData rd = vh::RunFile::read((out / "run.h5").string());
    const double vsteps = rd.solvers.at("vortex").series.at("step").back();
    const double ssteps = rd.solvers.at("spectral").series.at("step").back();
    std::printf("time.lcfl = %g: vortex %g steps, spectral %g\n", lcfl, vsteps, ssteps);
    EXPECT_EQ(ssteps, 1) << lcfl;
    if (lcfl == 0)
      EXPECT_EQ(vsteps, 1);
    else
      EXPECT_EQ(vsteps, 4);
  }
}

// The memory check (src/app/memory_estimate.h): a run that cannot fit is refused before anything
// is written, with one line saying what its N needs, what is available and what to change.
// 2048³ with the 3/2 rule needs about 3 TiB of host memory on the CPU.
TEST_F(Cli, RunTooLargeForTheMachineIsRefused) {
  expect_bad(run("run " + deck(kFlow) + out_arg() + " --case.solver=spectral --domain.n=2048"),
             {"domain.n = '2048'", "needs", "TiB of host memory", "available", "allowed here: domain.n <="});
  const Result dry = run("run " + deck(kFlow) + out_arg() + " --case.solver=spectral --domain.n=2048 --dry-run");
  EXPECT_EQ(dry.status, 2) << dry.output;
  EXPECT_FALSE(fs::exists(out));
}

// The limit a user sets with ulimit -v is the real one found (RLIMIT_AS less what the program has
// mapped, a few hundred MiB): under 2 GiB a 192³ spectral run (about 2.8 GiB) is refused naming
// the limit, and a 16³ run goes ahead.
TEST_F(Cli, AddressSpaceLimitIsRespected) {
  if (vh::test::kAddressSanitizer) GTEST_SKIP() << "AddressSanitizer cannot start under ulimit -v";
  const std::string limited = "bash -c 'ulimit -v 2097152 && exec " + std::string(VH_EXE) + " run " + deck(kFlow) + out_arg();
  expect_bad(vh::test::shell(limited + " --case.solver=spectral --domain.n=192'"),
             {"domain.n = '192'", "ulimit -v 2.00 GiB", "allowed here"});
  const Result small = vh::test::shell(limited + " --domain.n=16 --quiet'");
  EXPECT_EQ(small.status, 0) << small.output;
  EXPECT_TRUE(fs::exists(out / "run.h5"));
}

/// The number of bytes of a size printed as "<number> <unit>" right before `tail` in `text`.
double printed_size(const std::string& text, const std::string& tail) {
  const auto at = text.find(tail);
  if (at == std::string::npos) return -1;
  const auto line = text.rfind('\n', at) + 1;
  std::istringstream in(text.substr(line, at - line));
  std::string word, number, unit;
  while (in >> word) number = unit, unit = word;
  const double scale = unit == "KiB" ? 1024.0 : unit == "MiB" ? 1048576.0 : unit == "GiB" ? 1073741824.0 : 1.0;
  return std::stod(number) * scale;
}

// --dry-run checks the deck and the memory, prints the estimate and the sizes of a fields file
// and a checkpoint, and writes nothing; the sizes are those of the files the real run then
// writes (within 2 %: the 3 digits printed and HDF5's headers).
TEST_F(Cli, DryRunPrintsTheEstimateAndWritesNothing) {
  const std::string d = "run " + deck(kFlow + "[output]\nfields_at = 0\n") + out_arg() +
                        " --case.solver=spectral --domain.n=32 --time.t_end_over_T=0.05";
  const Result r = run(d + " --dry-run");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(fs::exists(out)) << "--dry-run created the run folder";
  for (const char* s : {"nothing was written", "N 32", "memory   host", "needed (", "spectral solver", "available ("})
    EXPECT_NE(r.output.find(s), std::string::npos) << s << " not in: " << r.output;
  // 7 doubles per point (velocity, vorticity, Q): 1.75 MiB; 3 × 32·32·17 complex doubles: 816 KiB.
  const double fields = printed_size(r.output, "per fields_<i>.h5"), ckpt = printed_size(r.output, "per checkpoint.h5");
  EXPECT_EQ(fields, 1.75 * 1048576) << r.output;
  EXPECT_EQ(ckpt, 816.0 * 1024) << r.output;

  const Result real = run(d + " --quiet");
  ASSERT_EQ(real.status, 0) << real.output;
  EXPECT_NEAR(double(fs::file_size(out / "fields_0000.h5")), fields, 0.02 * fields);
  EXPECT_NEAR(double(fs::file_size(out / "checkpoint.h5")), ckpt, 0.02 * ckpt);
  // An existing folder is checked as a real run would: refused without output.overwrite.
  EXPECT_EQ(run(d + " --dry-run").status, 2);
}

}  // namespace
