// `mpirun -np R vortexhit run` against the one-rank program (issue 17, Must show): the run
// files of 20 RK4 steps at 32³ (3/2 on 2 ranks, 2/3 on 3), a checkpoint written on 3 ranks
// restarted on 2 and on 1, and the bad input R > N, the seeds' vortex scheme on R > 1 ranks
// and a checkpoint of another N; a damaged checkpoint and a checkpoint that cannot be written
// (issue 19) stop every rank together; both solvers on 2 and 3 ranks and a vortex checkpoint
// of 3 ranks restarted on 2 and 1, and a rank killed mid-run (issue 25). Runs mpirun itself
// (VH_MPIRUN, tests/mpi/CMakeLists.txt); label mpi.
//
// Tolerances (as test_spectral_mpi.cpp): the R-rank solver runs the one-rank transforms in
// the same order and differs by the order of reductions only, ~1e-16 per operation; the
// issue's bounds, 1e-12 on the state and 1e-13 on diagnostics, hold with a margin of 10 or
// more. divergence_rel and helicity are round-off-sized sums of cancelling terms (~1e-16
// and ~1e-15 here), so they are compared against their scales (1 and √(2K·2Ω)), not
// against themselves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "../app/gpu_fault_case.h"
#include "../app/shell.h"
#include "core/device.h"
#include "io/fields_file.h"
#include "io/h5.h"
#include "io/run_file.h"

namespace fs = std::filesystem;

namespace {

using vh::test::Result;
using vh::test::shell;

const std::string kExe = VH_EXE;
/// 20 steps of Δt = 0.005 to t = 0.1, outputs every 0.025, fields of the initial field.
const std::string kCase =
    " run --case.solver=spectral --flow.Re_lambda=30 --flow.k_p=3 --device=cpu --time.dt=0.005"
    " --time.output_interval=0.025 --output.fields_at=0 --output.checkpoint_minutes=0 --quiet";

std::string on(int ranks) { return std::string(VH_MPIRUN) + " " + std::to_string(ranks) + " " + VH_MPIRUN_FLAGS + " "; }

class MpiRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("vh_mpirun_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;

  /// kCase with another case.solver.
  static std::string case_of(const std::string& solver) {
    std::string c = kCase;
    c.replace(c.find("--case.solver=spectral"), 22, "--case.solver=" + solver);
    return c;
  }

  /// Runs the case (kCase, or `with` the solver of another case.solver) into dir/name on `ranks`
  /// ranks (1: no mpirun) with extra options.
  void run(const std::string& name, int ranks, const std::string& extra, const std::string& solver = "spectral") {
    const std::string cmd = (ranks > 1 ? on(ranks) : std::string()) + kExe + case_of(solver) +
                            " --output.dir=" + (dir / name).string() + " " + extra;
    const Result r = shell(cmd);
    ASSERT_EQ(r.status, 0) << cmd << "\n" << r.output;
  }
};

/// The number the log's "vortex   initial particles: … rel. L2 X" line gives (NaN if none).
double initial_particles_l2(const fs::path& run) {
  std::ifstream in(run / "log.txt");
  const std::string key = "vortex   initial particles: ", value = "rel. L2 ";
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(line.rfind(value) + value.size()));
  return std::nan("");
}

/// The spectral state of a checkpoint: relative L2 difference of b against a.
double state_difference(const fs::path& a, const fs::path& b) {
  auto read = [](const fs::path& p) {
    vh::h5::Handle f = vh::h5::open_file((p / "checkpoint.h5").string());
    return vh::h5::read_doubles(f, "spectral/u");
  };
  const std::vector<double> u = read(a), v = read(b);
  EXPECT_EQ(u.size(), v.size());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < std::min(u.size(), v.size()); ++i) {
    num += (u[i] - v[i]) * (u[i] - v[i]);
    den += u[i] * u[i];
  }
  return std::sqrt(num / den);
}

/// Every series and spectrum of run.h5 (solvers "initial" and "spectral") within the
/// diagnostics tolerance; returns the largest relative difference seen.
double expect_same_run_files(const fs::path& a, const fs::path& b, double tol) {
  const vh::RunData da = vh::RunFile::read((a / "run.h5").string()), db = vh::RunFile::read((b / "run.h5").string());
  double worst = 0;
  for (const char* solver : {"initial", "spectral"}) {
    const vh::SolverRecord &x = da.solvers.at(solver), &y = db.solvers.at(solver);
    EXPECT_EQ(x.names, y.names) << solver;
    const double K = x.series.at("K")[0], Om = x.series.at("enstrophy")[0];
    for (const auto& name : x.names) {
      const auto &p = x.series.at(name), &q = y.series.at(name);
      EXPECT_EQ(p.size(), q.size()) << solver << "/" << name;
      double scale = 0;
      for (double v : p) scale = std::max(scale, std::fabs(v));
      if (name == "divergence_rel" || scale == 0) scale = 1;  // (t, step, dt of the initial field: 0)
      if (name == "helicity") scale = std::sqrt(2 * K * 2 * Om);
      for (std::size_t i = 0; i < std::min(p.size(), q.size()); ++i) {
        const double d = std::fabs(p[i] - q[i]) / scale;
        worst = std::max(worst, d);
        EXPECT_LE(d, tol) << solver << "/series/" << name << "[" << i << "]: " << p[i] << " vs " << q[i];
      }
    }
    EXPECT_EQ(x.spectrum_t, y.spectrum_t) << solver;
    EXPECT_EQ(x.k, y.k) << solver;
    EXPECT_EQ(x.E.size(), y.E.size()) << solver;
    for (std::size_t o = 0; o < std::min(x.E.size(), y.E.size()); ++o)
      for (std::size_t k = 0; k < std::min(x.E[o].size(), y.E[o].size()); ++k) {
        const double d = std::fabs(x.E[o][k] - y.E[o][k]) / K;
        worst = std::max(worst, d);
        EXPECT_LE(d, tol) << solver << "/spectra/E[" << o << "][" << k << "]";
      }
  }
  return worst;
}

// Must show: every run.h5 dataset of R ranks equals the one-rank run's (3/2 on 2 ranks, 2/3
// on 3), the state after 20 steps too, and the fields file of R ranks holds one array per
// quantity equal to the one-rank file's.
TEST_F(MpiRun, RunFilesEqualOneRank) {
  for (auto [dealias, ranks] : {std::pair<const char*, int>{"3/2", 2}, {"2/3", 3}}) {
    const std::string opt = std::string("--domain.n=32 --time.t_end=0.1 --spectral.dealias=") + dealias;
    const std::string one = std::string("one") + (ranks == 2 ? "32" : "23"), many = "r" + std::to_string(ranks);
    run(one, 1, opt);
    run(many, ranks, opt);
    const double worst = expect_same_run_files(dir / one, dir / many, 1e-13);
    const double state = state_difference(dir / one, dir / many);
    EXPECT_LT(state, 1e-12) << dealias;
    const std::string f1 = (dir / one / "fields_0000.h5").string(), fr = (dir / many / "fields_0000.h5").string();
    double fields = 0;
    for (const char* q : {"velocity", "vorticity"}) {
      const vh::VectorField a = vh::read_vector_field(f1, "spectral", q), b = vh::read_vector_field(fr, "spectral", q);
      for (int c = 0; c < 3; ++c)
        for (std::size_t i = 0; i < a.c[c].size(); ++i) fields = std::max(fields, std::fabs(a.c[c][i] - b.c[c][i]));
    }
    const vh::ScalarField qa = vh::read_scalar_field(f1, "spectral"), qb = vh::read_scalar_field(fr, "spectral");
    for (std::size_t i = 0; i < qa.v.size(); ++i) fields = std::max(fields, std::fabs(qa.v[i] - qb.v[i]));
    EXPECT_LT(fields, 1e-12) << dealias;
    std::printf("[%s on %d ranks] run.h5 worst %.2e, state after 20 steps %.2e, fields %.2e\n", dealias, ranks, worst,
                state, fields);
  }
}

// Must show: a checkpoint written on 3 ranks restarts on 2 and on 1 with the result of the
// uninterrupted run (16³: slabs of 6, 5, 5 planes and 5 kept ky each on 3 ranks, 8 and 8
// planes on 2).
TEST_F(MpiRun, CheckpointOfThreeRanksRestartsOnTwoAndOne) {
  run("full", 3, "--domain.n=16 --time.t_end=0.1");
  run("half", 3, "--domain.n=16 --time.t_end=0.05");
  fs::copy(dir / "half", dir / "on2", fs::copy_options::recursive);
  fs::copy(dir / "half", dir / "on1", fs::copy_options::recursive);
  const Result r2 = shell(on(2) + kExe + " run --restart " + (dir / "on2").string() + " --time.t_end=0.1 --quiet");
  ASSERT_EQ(r2.status, 0) << r2.output;
  const Result r1 = shell(kExe + " run --restart " + (dir / "on1").string() + " --time.t_end=0.1 --quiet");
  ASSERT_EQ(r1.status, 0) << r1.output;
  for (const char* d : {"on2", "on1"}) {
    const double state = state_difference(dir / "full", dir / d);
    const double worst = expect_same_run_files(dir / "full", dir / d, 1e-13);
    std::printf("[3 ranks to t = 0.05, restart %s to 0.1] state %.2e, run.h5 worst %.2e\n", d, state, worst);
    EXPECT_LT(state, 1e-12) << d;
  }
}

/// How often `line` occurs in `text`.
int count(const std::string& text, const std::string& line) {
  int n = 0;
  for (auto p = text.find(line); p != std::string::npos; p = text.find(line, p + 1)) ++n;
  return n;
}

// Must show: R > N, the seeds' vortex scheme (reinit_from = blobs) on R > 1 ranks and a
// checkpoint of another N are refused at start with exit 2 and one line, nothing written.
TEST_F(MpiRun, BadInputIsRefusedWithOneLine) {
  const std::string base = " run --flow.Re_lambda=30 --device=cpu --quiet --output.dir=";
  Result r = shell(on(2) + kExe + base + (dir / "v").string() +
                   " --case.solver=vortex --domain.n=16 --vortex.reinit_from=blobs");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(count(r.output, "vortexhit: error:"), 1) << r.output;
  EXPECT_EQ(count(r.output, "the seeds' scheme runs on one rank (allowed on R > 1 ranks: points)"), 1) << r.output;
  EXPECT_FALSE(fs::exists(dir / "v"));

  r = shell(on(9) + kExe + base + (dir / "n").string() + " --case.solver=spectral --domain.n=8");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(count(r.output, "vortexhit: error: mpirun -np 9: 9 ranks for"), 1) << r.output;
  EXPECT_FALSE(fs::exists(dir / "n"));

  const Result c =
      shell(kExe + base + (dir / "c").string() + " --case.solver=spectral --domain.n=16 --time.t_end_over_T=0.02");
  ASSERT_EQ(c.status, 0) << c.output;
  const auto before = fs::last_write_time(dir / "c" / "checkpoint.h5");
  for (int ranks : {1, 2}) {
    r = shell((ranks > 1 ? on(ranks) : std::string()) + kExe + " run --restart " + (dir / "c").string() +
              " --domain.n=32 --quiet");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(count(r.output, "vortexhit: error:"), 1) << r.output;
    EXPECT_EQ(count(r.output, "written at domain.n = 16, the restart asks for domain.n = 32"), 1) << r.output;
  }
  EXPECT_EQ(fs::last_write_time(dir / "c" / "checkpoint.h5"), before);
}

/// The vortex records of two run.h5 files: the flow's series and every spectrum within `tol`
/// of their scale (the series' largest value; E against K₀); returns the largest difference.
/// The monitors that are sums of cancelling terms (Σ strengths, divergences) are left out: their
/// round-off carries no information.
double vortex_difference(const fs::path& a, const fs::path& b, double tol) {
  const vh::RunData da = vh::RunFile::read((a / "run.h5").string()), db = vh::RunFile::read((b / "run.h5").string());
  const vh::SolverRecord &x = da.solvers.at("vortex"), &y = db.solvers.at("vortex");
  const double K0 = x.series.at("K")[0];
  double worst = 0;
  for (const char* name : {"t", "step", "K", "epsilon", "L", "T", "lambda", "Re_lambda", "S3", "enstrophy", "max_omega",
                           "core_ratio", "reinits"}) {
    const auto &p = x.series.at(name), &q = y.series.at(name);
    EXPECT_EQ(p.size(), q.size()) << name;
    double scale = 0;
    for (double v : p) scale = std::max(scale, std::fabs(v));
    if (scale == 0) scale = 1;
    for (std::size_t i = 0; i < std::min(p.size(), q.size()); ++i) {
      const double d = std::fabs(p[i] - q[i]) / scale;
      worst = std::max(worst, d);
      EXPECT_LE(d, tol) << "vortex/series/" << name << "[" << i << "]: " << p[i] << " vs " << q[i];
    }
  }
  EXPECT_EQ(x.E.size(), y.E.size());
  for (std::size_t o = 0; o < std::min(x.E.size(), y.E.size()); ++o)
    for (std::size_t k = 0; k < std::min(x.E[o].size(), y.E[o].size()); ++k) {
      const double d = std::fabs(x.E[o][k] - y.E[o][k]) / K0;
      worst = std::max(worst, d);
      EXPECT_LE(d, tol) << "vortex/spectra/E[" << o << "][" << k << "]";
    }
  return worst;
}

// Must show (issue 25): both solvers on 2 and 3 ranks (the vortex solver's particles split by
// lattice z-slabs: 10 planes, 5/5 and 4/3/3) give the one-rank run's vortex series and spectra
// within the FMM tolerance and the spectral ones to round-off; a checkpoint written on 3 ranks
// restarts on 2 and on 1 with the same result. Tolerance: fmm.tolerance 1e-4 (the row of p 12;
// tests/mpi/test_vortex_mpi.cpp measured 1.6e-5 on the grid velocity after ten steps), applied
// to the diagnostics, which are quadratic in it; the spectral records as RunFilesEqualOneRank.
TEST_F(MpiRun, BothSolversOnTwoAndThreeRanksEqualOneRankAndRestartAcross) {
  // N = 10 (the uneven splits 4/3/3 and 5/5) with one particle per grid point: the default
  // refine 1.5 needs N divisible by 4.
  const std::string opt = "--domain.n=10 --spectral.dealias=2/3 --fmm.tolerance=1e-4 --vortex.refine=1 ";
  run("one", 1, opt + "--time.t_end=0.05", "both");
  run("r2", 2, opt + "--time.t_end=0.05", "both");
  run("half3", 3, opt + "--time.t_end=0.025", "both");
  fs::copy(dir / "half3", dir / "on2", fs::copy_options::recursive);
  fs::copy(dir / "half3", dir / "on1", fs::copy_options::recursive);
  const Result r2 = shell(on(2) + kExe + " run --restart " + (dir / "on2").string() + " --time.t_end=0.05 --quiet");
  ASSERT_EQ(r2.status, 0) << r2.output;
  const Result r1 = shell(kExe + " run --restart " + (dir / "on1").string() + " --time.t_end=0.05 --quiet");
  ASSERT_EQ(r1.status, 0) << r1.output;
  // The banner's check of the initial particles is over the whole field on every rank count
  // (it once took rank 0's slab only: inf at 512³, where that slab's modes are all but zero).
  // The initial particles reproduce the field to round-off (the lattice field's own velocity).
  for (const char* d : {"one", "r2", "half3"})
    EXPECT_LE(initial_particles_l2(dir / d), 1e-12) << d << ": rel. L2 of the initial particles' velocity";
  for (const char* d : {"r2", "on2", "on1"}) {
    const double v = vortex_difference(dir / "one", dir / d, 1e-4);
    const double s = expect_same_run_files(dir / "one", dir / d, 1e-12);
    std::printf("[both, %s against one rank] vortex worst %.2e, spectral and initial worst %.2e\n", d, v, s);
  }
}

// The memory check on R ranks (issue 24): the estimate is one rank's part, printed by
// --dry-run once with "(memory per rank, R ranks)", against the node's memory shared by its
// ranks, nothing written; a run too large for the
// machine even on R ranks is refused by every rank with one line, exit 2, nothing written. The
// solver's arrays are slabs, so 4 ranks need about half of what each of 2 ranks needs (not the
// one-rank figure halved: the slab passes hold z, y and x lines and two message buffers where one
// rank transforms in place, more memory at R = 2 than one rank's at 256³).
/// The host figure of a run's "memory   host 1.23 GiB needed (...)" line, in MiB (0 if none).
double host_mib(const std::string& out) {
  const auto p = out.find("memory   host ");
  if (p == std::string::npos) return 0.0;
  const double v = std::stod(out.substr(p + 14));
  const std::string unit = out.substr(out.find(' ', p + 14) + 1, 3);
  return v * (unit == "GiB" ? 1024.0 : unit == "MiB" ? 1.0 : unit == "TiB" ? 1048576.0 : 1.0 / 1024);
}

TEST_F(MpiRun, MemoryIsCheckedPerRank) {
  const std::string base = " run --flow.Re_lambda=30 --device=cpu --case.solver=spectral --output.dir=";
  Result r = shell(on(2) + kExe + base + (dir / "d").string() + " --domain.n=256 --dry-run");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count(r.output, "dry run: the deck is valid; nothing was written"), 1) << r.output;
  EXPECT_EQ(count(r.output, "(memory per rank, 2 ranks)"), 1) << r.output;
  // The node's memory is both ranks': each counts on half of it (app::shared_by).
  EXPECT_EQ(count(r.output, " shared by 2 ranks of this node)"), 1) << r.output;
  EXPECT_FALSE(fs::exists(dir / "d"));
  const Result four = shell(on(4) + kExe + base + (dir / "d").string() + " --domain.n=256 --dry-run");
  ASSERT_EQ(four.status, 0) << four.output;
  const double h2 = host_mib(r.output), h4 = host_mib(four.output);
  EXPECT_GT(h4, 0) << four.output;
  EXPECT_LT(h4, 0.6 * h2) << "4 ranks " << h4 << " MiB a rank against 2 ranks' " << h2 << " MiB";
  EXPECT_GT(h4, 0.4 * h2);
  r = shell(on(2) + kExe + base + (dir / "big").string() + " --domain.n=4096 --quiet");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(count(r.output, "vortexhit: error:"), 1) << r.output;
  EXPECT_EQ(count(r.output, "of host memory"), 1) << r.output;
  EXPECT_FALSE(fs::exists(dir / "big"));
}

// Issue 25: a CPU rank of the vortex solver holds its share of the particles and copies of its
// neighbours' (src/app/memory_estimate.cpp, vortex_rank_particles), not all of them: the estimate
// a rank falls with R (96³ at refine 1.5: 4 ranks against 2), and bounds rank 0's peak
// RSS of a real run on 2 ranks (quick.ini at 40³, refine 1.5, one step: 95.5 MiB against 131 on
// 2026-12-01) without being far above it (the factor of the one-rank test, test_memory_estimate).
TEST_F(MpiRun, VortexMemoryIsEstimatedPerRankAndBoundsThePeak) {
  const std::string base = " run --flow.Re_lambda=30 --device=cpu --case.solver=vortex --output.dir=";
  const Result two = shell(on(2) + kExe + base + (dir / "d").string() + " --domain.n=96 --dry-run");
  const Result four = shell(on(4) + kExe + base + (dir / "d").string() + " --domain.n=96 --dry-run");
  ASSERT_EQ(two.status, 0) << two.output;
  ASSERT_EQ(four.status, 0) << four.output;
  const double h2 = host_mib(two.output), h4 = host_mib(four.output);
  EXPECT_LT(h4, 0.6 * h2) << "4 ranks " << h4 << " MiB a rank against 2 ranks' " << h2 << " MiB";
  EXPECT_GT(h4, 0.4 * h2);

  const Result r = shell(on(2) + kExe + " run " + VH_SOURCE_DIR + "/inputs/quick.ini --case.solver=vortex" +
                         " --domain.n=40 --time.t_end_over_T=0.006 --output.fields_at= --quiet --output.dir=" +
                         (dir / "v").string());
  ASSERT_EQ(r.status, 0) << r.output;
  std::ifstream in(dir / "v" / "log.txt");
  const std::regex re(R"(peak RSS ([0-9.]+) MiB \(estimated ([0-9.]+) MiB\))");
  std::smatch m;
  bool found = false;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, re)) {
      found = true;
      const double peak = std::stod(m[1]), estimate = std::stod(m[2]);
      EXPECT_GE(estimate, peak);
      EXPECT_LE(estimate, 1.6 * peak);
    }
  EXPECT_TRUE(found) << "no memory line in MiB in " << (dir / "v" / "log.txt");
}

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Issue 19 on R ranks: rank 0 writes and seals the checkpoint (the state gathered to it), and
// every rank of a restart checks the seal before reading its part: a damaged file is refused
// by all ranks together, one line, exit 2. A checkpoint that rank 0 cannot write stops every
// rank with exit 3, names the file and why, and leaves the previous checkpoint as it was and
// restartable. (Not a file-size limit here: Open MPI's shared-memory segments exceed it and
// MPI_Init dies of SIGXFSZ; test_disk_faults has those on one rank.)
TEST_F(MpiRun, DamagedOrUnwritableCheckpointStopsEveryRank) {
  run("c", 3, "--domain.n=16 --time.t_end=0.05");
  fs::copy(dir / "c", dir / "d", fs::copy_options::recursive);
  std::string bytes = bytes_of(dir / "d" / "checkpoint.h5");
  bytes[bytes.size() / 2] ^= 0x04;
  std::ofstream(dir / "d" / "checkpoint.h5", std::ios::binary | std::ios::trunc) << bytes;
  Result r = shell(on(2) + kExe + " run --restart " + (dir / "d").string() + " --time.t_end=0.1 --quiet");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(count(r.output, "vortexhit: error:"), 1) << r.output;
  EXPECT_EQ(count(r.output, (dir / "d" / "checkpoint.h5").string() + ": damaged: its bytes do not match"), 1)
      << r.output;

  // Rank 0 cannot create the checkpoint's temporary (a folder is in its way: a fault on rank 0
  // only, while the other ranks send it their planes) at the end of the continued run.
  const std::string before = bytes_of(dir / "c" / "checkpoint.h5");
  fs::create_directories(dir / "c" / "checkpoint.h5.tmp" / "in_the_way");
  r = shell(on(2) + kExe + " run --restart " + (dir / "c").string() + " --time.t_end=0.1 --quiet");
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_EQ(count(r.output, "vortexhit: stopped: cannot write " + (dir / "c" / "checkpoint.h5").string() +
                                " (Is a directory)"),
            1)
      << r.output;
  EXPECT_EQ(count(r.output, "is intact"), 1) << r.output;
  EXPECT_EQ(bytes_of(dir / "c" / "checkpoint.h5"), before);
  fs::remove_all(dir / "c" / "checkpoint.h5.tmp");
  r = shell(on(2) + kExe + " run --restart " + (dir / "c").string() + " --time.t_end=0.1 --quiet");
  EXPECT_EQ(r.status, 0) << r.output;
}

// Issue 25's "ranks that lose a GPU" once the run has started: a rank that dies (killed, its GPU or
// node gone) cannot say so; mpirun ends the job (and names the rank). What the program owes is that
// nothing is lost: every file under a final name is whole (each is written under a temporary name
// and renamed), and the last checkpoint continues on another rank count with the series of a run
// that never stopped. Here one rank of three is killed (SIGKILL, no handler can run) as soon as the
// first checkpoint exists (output.checkpoint_every = 1: one at every output, each 5 steps), at
// whatever point of a step or of a file's writing the others then are; the run continues on 2
// ranks. Tolerances as BothSolversOnTwoAndThreeRanksEqualOneRankAndRestartAcross.
TEST_F(MpiRun, RankKilledMidRunLeavesACheckpointThatContinues) {
  const std::string opt = "--domain.n=10 --spectral.dealias=2/3 --fmm.tolerance=1e-4 --vortex.refine=1 ";
  run("one", 1, opt + "--time.t_end=0.1", "both");
  const std::string d = (dir / "k").string();
  // The ranks' command lines begin with the program (mpirun's with mpirun): -n picks the newest.
  // (timeout: should no rank be found, the job would otherwise run to t = 50.)
  const std::string job = "timeout -s KILL 300 env " + on(3) + kExe + case_of("both") + " --output.dir=" + d + " " +
                          opt + "--time.t_end=50 --output.checkpoint_every=1 > " + d + ".out 2>&1";
  const Result r = shell("(" + job + "; echo $? > " + d + ".rc) & " + "for i in $(seq 3000); do [ -e " + d +
                         "/checkpoint.h5 ] && break; sleep 0.01; done; pkill -KILL -n -f '^" + kExe +
                         " run .*--output.dir=" + d + " '; wait; cat " + d + ".out; exit $(cat " + d + ".rc)");
  EXPECT_NE(r.status, 0) << r.output;  // mpirun's (137 from Open MPI), which names the rank unless run -q
  for (const auto& e : fs::directory_iterator(dir / "k")) {  // the files a run writes, or temporaries
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name == "run.h5" || name == "log.txt" || name == "checkpoint.h5" || name == "checkpoint_prev.h5" ||
                name.rfind("fields", 0) == 0 || e.path().extension() == ".tmp")
        << name;
  }
  EXPECT_NO_THROW(vh::RunFile::read((dir / "k" / "run.h5").string()));
  const Result on2 = shell(on(2) + kExe + " run --restart " + d + " --time.t_end=0.1 --quiet");
  ASSERT_EQ(on2.status, 0) << on2.output;
  const double v = vortex_difference(dir / "one", dir / "k", 1e-4);
  const double s = expect_same_run_files(dir / "one", dir / "k", 1e-12);
  std::printf("[killed on 3 ranks, continued on 2, against one rank] vortex worst %.2e, spectral worst %.2e\n", v, s);
}

#ifdef VH_GPU_FAULT
/// The faulted run of `gpu_case` into `d` on 2 ranks, against the one-rank run `one`: a GPU rank
/// whose GPU fails (tests/app/gpu_fault.cu, preloaded into rank `rank`: a kernel trap, a sticky
/// fault of its CUDA context, once `trigger` appears in the run folder) says why in one line and
/// ends the job with exit 3; the folder holds the run's files only (no temporary: a fault during
/// a checkpoint on rank 1 kills rank 0 inside its write, so the faulting rank removes the
/// temporary first), and the last good checkpoint continues on 2 ranks to the one-rank run's
/// series: the spectral solver's K and ε to round-off (its times too: a CFL step's max|u|
/// differs in the last bits between rank counts on the GPU, so they are not compared bit for bit
/// here), the vortex solver's within the FMM tolerance (the deck's 1e-5; measured on an H100:
/// 2.6e-7 to 3.9e-7 at 32³). Ranks may share the GPU.
void expect_rank_fault_ends_the_job(const fs::path& one, const fs::path& d, const std::string& gpu_case,
                                    const std::string& trigger, int rank) {
  const std::string ckpt = (d / "checkpoint.h5").string();
  Result r = shell(on(2) + "-x LD_PRELOAD=" + VH_GPU_FAULT + " -x VH_FAULT_AFTER=" + (d / trigger).string() +
                   " -x VH_FAULT_RANK=" + std::to_string(rank) + " " + kExe + gpu_case + d.string());
  EXPECT_EQ(r.status, 3) << r.output;
  const std::size_t at = r.output.find("vortexhit: stopped on rank " + std::to_string(rank) + ": GPU fault, ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
  std::printf("[ the line ] %s\n", line.c_str());
  EXPECT_NE(line.find("unspecified launch failure"), std::string::npos) << line;
  EXPECT_NE(line.find("the last good checkpoint is " + ckpt), std::string::npos) << line;
  for (const auto& e : fs::directory_iterator(d)) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name == "run.h5" || name == "log.txt" || name == "checkpoint.h5" || name == "checkpoint_prev.h5")
        << name;
  }
  r = shell(on(2) + kExe + " run --restart " + d.string() + " --parallel.share_gpus=true --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  const double v = vortex_difference(one, d, 1e-5);
  const vh::RunData da = vh::RunFile::read((one / "run.h5").string());
  const vh::RunData db = vh::RunFile::read((d / "run.h5").string());
  double s = 0;
  for (const char* name : {"t", "K", "epsilon"}) {
    const auto &p = da.solvers.at("spectral").series.at(name), &q = db.solvers.at("spectral").series.at(name);
    ASSERT_EQ(p.size(), q.size()) << name;
    for (std::size_t i = 1; i < p.size(); ++i) s = std::max(s, std::fabs(q[i] / p[i] - 1));
  }
  EXPECT_LE(s, 1e-12);
  std::printf("[GPU failed on rank %d of 2 after %s appeared, continued on 2, against one rank] vortex worst %.2e, "
              "spectral worst %.2e\n",
              rank, trigger.c_str(), v, s);
}

/// Runs `run_case` on one rank (sharing the GPU), then expect_rank_fault_ends_the_job with the
/// fault on each of `ranks`, against that one run.
void expect_rank_faults_end_the_job(const fs::path& dir, const std::string& run_case, const std::string& trigger,
                                    std::initializer_list<int> ranks) {
  const std::string gpu_case = run_case + " --parallel.share_gpus=true --output.dir=";
  const Result one = shell(kExe + gpu_case + (dir / "one").string());
  ASSERT_EQ(one.status, 0) << one.output;
  for (int rank : ranks) {
    SCOPED_TRACE("fault on rank " + std::to_string(rank));
    expect_rank_fault_ends_the_job(dir / "one", dir / ("f" + std::to_string(rank)), gpu_case, trigger, rank);
  }
}

// Between checkpoints: the fault meets rank 1's steps.
TEST_F(MpiRun, GpuRankWhoseGpuFailsEndsTheJobWithExit3) {
  if (!vh::gpu_available()) GTEST_SKIP() << "no CUDA device";
  expect_rank_faults_end_the_job(dir, vh::test::kGpuFaultCase, "checkpoint.h5", {1});
}

// Inside the second checkpoint (set off as checkpoint_prev.h5 appears): on rank 0, the writer,
// the fault meets its copy of the state inside the write; on rank 1 its part of the state, which
// rank 0 waits for inside the write.
TEST_F(MpiRun, GpuRankWhoseGpuFailsDuringACheckpointEndsTheJobWithExit3) {
  if (!vh::gpu_available()) GTEST_SKIP() << "no CUDA device";
  expect_rank_faults_end_the_job(dir, vh::test::kGpuFaultCheckpointCase, "checkpoint_prev.h5", {0, 1});
}
#endif

}  // namespace
