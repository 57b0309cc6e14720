// Checkpoint and restart: 2n steps in one go and n + restart + n give bit-identical run.h5
// series and spectra (both solvers, CPU); every guard stops the run with exit 3 and a
// checkpoint that a restart can read: of the state it stopped at, or, where that state is
// broken (not finite, or a flow collapsed to rest), the last good one, untouched; a foreign or
// truncated checkpoint is bad input, as are a restart to an end before the checkpoint and one
// from another initial field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "io/run_file.h"
#include "shell.h"

namespace fs = std::filesystem;

namespace {

using vh::test::Result;
Result sh(const std::string& cmd) { return vh::test::shell(cmd); }

const std::string kExe = VH_EXE;
// refine 1 (one particle per grid point) in every vortex case here: the mechanics under test do
// not depend on it, and the default 1.5 would take 3.4x as long.
const std::string kCommon =
    " --domain.n=12 --flow.Re_lambda=20 --flow.k_p=2 --device=cpu --vortex.refine=1"
    " --time.output_interval_over_T=0.1 --output.fields_at=0,0.2 --vortex.reinit_every=3 --quiet";
const std::string kCase = kCommon + " --case.solver=both";
const std::string kSpectral = kCommon + " --case.solver=spectral";

class Restart : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("vh_restart_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
           std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

/// A file's bytes (to show that a file was left as it was).
std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Series and spectra of both solvers, bit for bit (meta differs: start time, argv).
void expect_same_records(const vh::RunData& a, const vh::RunData& b) {
  for (const char* s : {"initial", "spectral", "vortex"}) {
    ASSERT_TRUE(a.solvers.count(s) && b.solvers.count(s)) << s;
    EXPECT_TRUE(a.solvers.at(s) == b.solvers.at(s)) << s << " differs";
  }
}

// Each part on another number of threads: every sum runs in an order fixed by the data, not
// by the threads (core/diagnostics.cpp, base/ordered_sum.h), so the records are the same bits
// on any machine. (An OpenMP reduction on more than two threads changed T₀, hence every output
// time and step, in the last bit from process to process.)
TEST_F(Restart, OneGoEqualsHalfPlusRestartPlusHalfBitForBit) {
  const fs::path a = dir / "a", b = dir / "b";
  Result r =
      sh("OMP_NUM_THREADS=5 " + kExe + " run" + kCase + " --output.dir=" + a.string() + " --time.t_end_over_T=0.4");
  ASSERT_EQ(r.status, 0) << r.output;
  r = sh("OMP_NUM_THREADS=1 " + kExe + " run" + kCase + " --output.dir=" + b.string() + " --time.t_end_over_T=0.2");
  ASSERT_EQ(r.status, 0) << r.output;
  r = sh("OMP_NUM_THREADS=3 " + kExe + " run --restart " + b.string() + " --time.t_end_over_T=0.4 --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto da = vh::RunFile::read((a / "run.h5").string()), db = vh::RunFile::read((b / "run.h5").string());
  EXPECT_EQ(da.solvers.at("vortex").outputs(), 5u);
  expect_same_records(da, db);
  EXPECT_TRUE(fs::exists(b / "checkpoint_prev.h5"));
  EXPECT_TRUE(db.meta.count("restarted_from"));
}

// A run given in time units (time.t_end, time.dt, time.output_interval; not the defaults in
// t/T and by CFL) restarts to a later time.t_end: its stored deck must not set both keys of
// a pair (it did: every such restart was refused).
TEST_F(Restart, RunGivenInTimeUnitsRestartsToALaterEnd) {
  const fs::path a = dir / "a", b = dir / "b";
  const std::string run = kExe + " run --domain.n=12 --flow.Re_lambda=20 --flow.k_p=2 --device=cpu --quiet"
                          " --case.solver=spectral --time.dt=0.01 --time.output_interval=0.02 --output.dir=";
  ASSERT_EQ(sh(run + a.string() + " --time.t_end=0.08").status, 0);
  ASSERT_EQ(sh(run + b.string() + " --time.t_end=0.04").status, 0);
  const Result r = sh(kExe + " run --restart " + b.string() + " --time.t_end=0.08 --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto da = vh::RunFile::read((a / "run.h5").string()), db = vh::RunFile::read((b / "run.h5").string());
  EXPECT_TRUE(da.solvers.at("spectral") == db.solvers.at("spectral"));
  EXPECT_EQ(db.solvers.at("spectral").outputs(), 5u);
}

// A restart asked to end before the checkpoint's time (a t_end mistyped) has nothing it could
// do: bad input, one line naming where that end comes from, nothing written. At the
// checkpoint's own time it is a finished run: exit 0, as before.
TEST_F(Restart, AnEndBeforeTheCheckpointIsRefused) {
  const fs::path b = dir / "b";
  ASSERT_EQ(sh(kExe + " run" + kCase + " --output.dir=" + b.string() + " --time.t_end_over_T=0.2").status, 0);
  const std::string ckpt = bytes_of(b / "checkpoint.h5"), run_h5 = bytes_of(b / "run.h5");
  const std::string fields = bytes_of(b / "fields_0001.h5");
  const Result r = sh(kExe + " run --restart " + b.string() + " --time.t_end_over_T=0.1 --quiet");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.find("vortexhit: error: " + (b / "checkpoint.h5").string() + ": the run is at t/T 0.2"), 0u)
      << r.output;
  EXPECT_NE(r.output.find("(allowed: an end at or after the checkpoint's"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  EXPECT_EQ(bytes_of(b / "checkpoint.h5"), ckpt);
  EXPECT_EQ(bytes_of(b / "run.h5"), run_h5);
  EXPECT_EQ(bytes_of(b / "fields_0001.h5"), fields);
  const Result same = sh(kExe + " run --restart " + b.string() + " --time.t_end_over_T=0.2 --quiet");
  EXPECT_EQ(same.status, 0) << same.output;
}

// A checkpoint stores the deck the run goes on with, a restart's overrides applied: a plain
// restart of a continued run goes on as it was continued. (Checkpoints stored the first deck:
// the end went back to the first one, and was refused, the viscosity silently.) Two legs with
// another Re_λ, the second restarted without it, equal one leg with it bit for bit (the first
// leg ends at t/T 0.3, which is not 3 × 0.1 to the last bit); run.h5's meta keeps a line for
// each restart.
TEST_F(Restart, ARestartsOverridesGoOnIntoTheNextRestart) {
  const fs::path a = dir / "a", b = dir / "b";
  for (const fs::path& d : {a, b})
    ASSERT_EQ(sh(kExe + " run" + kCase + " --output.dir=" + d.string() + " --time.t_end_over_T=0.2").status, 0);
  const std::string restart = kExe + " run --quiet --restart ";
  Result r = sh(restart + a.string() + " --flow.Re_lambda=30 --time.t_end_over_T=0.4");
  ASSERT_EQ(r.status, 0) << r.output;
  r = sh(restart + b.string() + " --flow.Re_lambda=30 --time.t_end_over_T=0.3");
  ASSERT_EQ(r.status, 0) << r.output;
  r = sh(restart + b.string() + " --time.t_end_over_T=0.4");
  ASSERT_EQ(r.status, 0) << r.output;
  r = sh(restart + b.string());  // at the stored end 0.4: a finished run, nothing to do
  EXPECT_EQ(r.status, 0) << r.output;
  const auto da = vh::RunFile::read((a / "run.h5").string()), db = vh::RunFile::read((b / "run.h5").string());
  EXPECT_EQ(db.solvers.at("vortex").outputs(), 5u);
  expect_same_records(da, db);
  const std::string& lines = db.meta.at("restarted_from");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 2) << lines;
  EXPECT_NE(lines.find("--flow.Re_lambda=30 --time.t_end_over_T=0.3\n"), std::string::npos) << lines;
}

// The restart makes its deck's initial field again (T₀, the unit of every t/T, and the guards'
// first speed): another spectrum, peak or u' would make it another flow's, and the run would go on
// in another time unit than run.h5's (a checkpoint at t/T 0.2 read as 0.41 with k_p 3 for 2).
// Refused, nothing written; another viscosity (Re_λ) leaves the field and T₀ as they are.
TEST_F(Restart, AnotherInitialFieldIsRefused) {
  const fs::path b = dir / "b";
  ASSERT_EQ(sh(kExe + " run" + kSpectral + " --output.dir=" + b.string() + " --time.t_end_over_T=0.2").status, 0);
  const std::string ckpt = bytes_of(b / "checkpoint.h5"), run_h5 = bytes_of(b / "run.h5");
  for (const char* flow : {"--flow.k_p=3", "--flow.u_prime=2", "--flow.spectrum=pope"}) {
    const Result r = sh(kExe + " run --restart " + b.string() + " --time.t_end_over_T=0.4 --quiet " + flow);
    EXPECT_EQ(r.status, 2) << flow << "\n" << r.output;
    EXPECT_EQ(r.output.find("vortexhit: error: " + (b / "checkpoint.h5").string() +
                            ": the restart's initial field is not the run's (K "),
              0u)
        << flow << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
  EXPECT_EQ(bytes_of(b / "checkpoint.h5"), ckpt);
  EXPECT_EQ(bytes_of(b / "run.h5"), run_h5);
  const Result nu = sh(kExe + " run --restart " + b.string() + " --time.t_end_over_T=0.3 --flow.Re_lambda=40 --quiet");
  EXPECT_EQ(nu.status, 0) << nu.output;
}

// A restart may run fewer solvers than the checkpoint holds, not one whose state it lacks: one
// line naming both, before anything is printed or written (it was "checkpoint.h5:/vortex: group
// missing", after the banner).
TEST_F(Restart, ASolverTheCheckpointDoesNotHoldIsRefused) {
  const fs::path b = dir / "b";
  ASSERT_EQ(sh(kExe + " run" + kSpectral + " --output.dir=" + b.string() + " --time.t_end_over_T=0.1").status, 0);
  const std::string ckpt = bytes_of(b / "checkpoint.h5"), run_h5 = bytes_of(b / "run.h5");
  for (const char* solver : {"both", "vortex"}) {
    const Result r = sh(kExe + " run --restart " + b.string() + " --time.t_end_over_T=0.2 --case.solver=" + solver);
    EXPECT_EQ(r.status, 2) << solver << "\n" << r.output;
    EXPECT_EQ(r.output, "vortexhit: error: " + (b / "checkpoint.h5").string() +
                            ": holds the state of the spectral solver, not the vortex solver's that case.solver = " +
                            solver + " asks for (allowed: the checkpoint's solvers or fewer)\n");
  }
  EXPECT_EQ(bytes_of(b / "checkpoint.h5"), ckpt);
  EXPECT_EQ(bytes_of(b / "run.h5"), run_h5);
}

TEST_F(Restart, StopFileStopsWithExit3AndARestartableCheckpoint) {
  const fs::path a = dir / "a", b = dir / "b";
  fs::create_directories(b);
  std::ofstream(b / "STOP") << "";
  const Result r = sh(kExe + " run" + kCase + " --output.dir=" + b.string() +
                      " --output.overwrite=true --time.t_end_over_T=0.2");
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("STOP file"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("checkpoint"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(b / "STOP"));
  // The checkpoint was taken in the middle of an output interval; the continued run must
  // still equal the one that never stopped.
  const Result c = sh(kExe + " run --restart " + (b / "checkpoint.h5").string() + " --quiet");
  ASSERT_EQ(c.status, 0) << c.output;
  ASSERT_EQ(sh(kExe + " run" + kCase + " --output.dir=" + a.string() + " --time.t_end_over_T=0.2").status, 0);
  expect_same_records(vh::RunFile::read((a / "run.h5").string()), vh::RunFile::read((b / "run.h5").string()));
}

TEST_F(Restart, SignalStopsWithExit3) {
  const fs::path b = dir / "b";
  // A run far too long to finish: SIGTERM after 2 s; --preserve-status hands back our code.
  const Result r = sh("timeout --preserve-status -s TERM 2 " + kExe + " run" + kCase + " --output.dir=" +
                      b.string() + " --time.t_end_over_T=50");
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("SIGTERM"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(b / "checkpoint.h5"));
}

TEST_F(Restart, CflGuardStopsWithExit3) {
  const fs::path b = dir / "b";
  const Result r = sh(kExe + " run" + kSpectral + " --output.dir=" + b.string() +
                      " --time.dt=0.5 --time.max_cfl=1");
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("CFL number"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("step 0"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(b / "checkpoint.h5"));
}

// The vortex solver without its filter on a rough 12^3 field: aliasing at the lattice's high
// wavenumbers makes K grow within a few outputs (issue 14's blow-up). The energy guard stops it;
// with the energy guard lifted the CFL step collapses and the stall guard does. Either
// checkpoint restarts (and stops again: exit 3, not bad input).
// The CFL step alone (time.lcfl = 0): the Lagrangian limit would shrink the steps with the growing
// gradients, and the instability would take minutes to show.
const std::string kUnstable =
    " --case.solver=vortex --domain.n=12 --flow.k_p=2 --flow.Re_lambda=30 --device=cpu --quiet --vortex.refine=1"
    " --vortex.filter=none --fmm.tolerance=1e-2 --output.fields_at= --time.output_interval_over_T=0.05"
    " --time.lcfl=0";

TEST_F(Restart, EnergyRiseGuardStopsWithExit3) {
  const fs::path b = dir / "b";
  const Result r = sh(kExe + " run" + kUnstable + " --output.dir=" + b.string());
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("above its running minimum"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("vortex.filter"), std::string::npos) << r.output;  // names the likely cause
  ASSERT_TRUE(fs::exists(b / "checkpoint.h5"));
  const Result again = sh(kExe + " run --restart " + b.string() + " --quiet");
  EXPECT_EQ(again.status, 3) << again.output;
}

TEST_F(Restart, StallGuardStopsWithExit3) {
  const fs::path b = dir / "b";
  const Result r = sh(kExe + " run" + kUnstable + " --time.max_energy_rise=1e9 --time.max_cfl=1e9 --output.dir=" +
                      b.string());
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("has stalled"), std::string::npos) << r.output;
  ASSERT_TRUE(fs::exists(b / "checkpoint.h5"));
  const Result again = sh(kExe + " run --restart " + b.string() + " --quiet");
  EXPECT_EQ(again.status, 3) << again.output;
}

TEST_F(Restart, NonFiniteVelocityStopsWithExit3WithoutSavingIt) {
  const fs::path b = dir / "b";
  // Inviscid, with a step 10⁴ times the stable one and the CFL guard lifted: RK4 overflows.
  // A checkpoint of that state could not be continued (a restart refuses non-finite values):
  // none is written (there was none before it either).
  const Result r = sh(kExe + " run --case.solver=spectral --domain.n=12 --flow.k_p=2 --flow.nu=0 --quiet"
                      " --output.fields_at=0 --time.t_end=1e4 --time.output_interval=1e4 --output.dir=" + b.string() +
                      " --time.dt=50 --time.max_cfl=1e300");
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("is not finite"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("this state is not saved: no checkpoint had been written yet"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(b / "checkpoint.h5"));
  EXPECT_TRUE(fs::exists(b / "run.h5"));
}

// A flow that collapses to rest (issue 28: its CFL step, h / max|u| = inf, took t to infinity
// and the run ended with exit 0 and a last row at t = inf, K = 0). A restart with a viscosity
// 10³⁰ times the deck's (flow.Re_lambda = 1e-30) damps every mode to exactly 0 in one step:
// with CFL steps the next step has no finite length, with a fixed step the next output's K is
// 0. Either stops the run with exit 3, leaving the checkpoint it restarted from untouched; that
// checkpoint restarts.
TEST_F(Restart, CollapsedFlowStopsWithExit3KeepingTheLastGoodCheckpoint) {
  const std::string small =
      " --domain.n=8 --flow.Re_lambda=20 --flow.k_p=2 --device=cpu --quiet --output.fields_at= --vortex.refine=1";
  struct Case {
    std::string solver, steps, end, later, expect;
  };
  const Case cases[] = {
      {"spectral", " --time.output_interval_over_T=0.1", " --time.t_end_over_T=0.1", " --time.t_end_over_T=0.3",
       "the flow has come to rest"},
      {"vortex", " --time.output_interval_over_T=0.1", " --time.t_end_over_T=0.1", " --time.t_end_over_T=0.3",
       "the flow has come to rest"},
      {"spectral", " --time.dt=0.05 --time.output_interval=0.1", " --time.t_end=0.1", " --time.t_end=0.3",
       "K = 0 has collapsed to zero"},
      {"vortex", " --time.dt=0.05 --time.output_interval=0.1", " --time.t_end=0.1", " --time.t_end=0.3",
       "K = 0 has collapsed to zero"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.solver + c.steps);
    const fs::path b = dir / ("b_" + std::to_string(&c - cases));
    Result r = sh(kExe + " run" + small + " --case.solver=" + c.solver + c.steps + c.end + " --output.dir=" + b.string());
    ASSERT_EQ(r.status, 0) << r.output;
    const std::string good = bytes_of(b / "checkpoint.h5");
    r = sh(kExe + " run --restart " + b.string() + c.later + " --flow.Re_lambda=1e-30 --quiet");
    EXPECT_EQ(r.status, 3) << r.output;
    EXPECT_NE(r.output.find(c.solver + ": " ), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("this state is not saved: the last good checkpoint is " + (b / "checkpoint.h5").string()),
              std::string::npos)
        << r.output;
    EXPECT_TRUE(bytes_of(b / "checkpoint.h5") == good) << "the last good checkpoint was overwritten";
    EXPECT_FALSE(fs::exists(b / "checkpoint_prev.h5"));
    // Nothing past the last good output in run.h5 either: no row at t = inf or with K = 0.
    const auto d = vh::RunFile::read((b / "run.h5").string());
    for (double K : d.solvers.at(c.solver).series.at("K")) EXPECT_GT(K, 0);
    for (double t : d.solvers.at(c.solver).series.at("t")) EXPECT_TRUE(std::isfinite(t));
    r = sh(kExe + " run --restart " + b.string() + c.later + " --quiet");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(vh::RunFile::read((b / "run.h5").string()).solvers.at(c.solver).outputs(), 4u);
  }
}

TEST_F(Restart, KeysEmptiedOnTheCommandLineStayEmpty) {
  // The stored deck once wrote an emptied key as "# key =", which reads back as its default:
  // a run with --output.fields_at= (no fields) wrote fields at t/T = 1 after a restart (found
  // by fuzzing the deck parser).
  const fs::path b = dir / "b";
  Result r = sh(kExe + " run --case.solver=spectral --domain.n=12 --flow.Re_lambda=20 --flow.k_p=2 --device=cpu --quiet"
                " --output.fields_at= --time.t_end_over_T=0.1 --output.dir=" + b.string());
  ASSERT_EQ(r.status, 0) << r.output;
  r = sh(kExe + " run --restart " + b.string() + " --time.t_end_over_T=1.1 --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const auto& e : fs::directory_iterator(b))
    EXPECT_NE(e.path().filename().string().rfind("fields_", 0), 0u) << e.path();
}

TEST_F(Restart, ForeignOrTruncatedCheckpointIsBadInput) {
  const fs::path b = dir / "b";
  ASSERT_EQ(sh(kExe + " run" + kSpectral + " --output.dir=" + b.string() +
               " --time.t_end_over_T=0.1").status, 0);
  // run.h5 is HDF5 but no checkpoint.
  Result r = sh(kExe + " run --restart " + (b / "run.h5").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("not a vortexhit checkpoint"), std::string::npos) << r.output;
  // A checkpoint cut in half.
  const auto size = fs::file_size(b / "checkpoint.h5");
  fs::resize_file(b / "checkpoint.h5", size / 2);
  r = sh(kExe + " run --restart " + b.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("checkpoint.h5"), std::string::npos) << r.output;
}

}  // namespace
