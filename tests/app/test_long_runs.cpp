// Long runs on the CPU (label "long": tens of minutes on 2 cores, outside the default set;
// ctest -L long -R LongRun): the spectral solver at 64³ for 10⁴ steps and the vortex solver at
// 32³ for 2 000 steps with a reinitialisation every 10. Each must end normally with every
// diagnostic finite and its memory flat: the resident set sampled from /proc every 0.5 s,
// median over 10–20 % of the run against median over the last 10 %. Printed for the record:
// RSS, the energy-balance residual between outputs and, for the vortex run, the drift of the
// total strength Σα (the sum_strength_* monitors).
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "io/run_file.h"

extern char** environ;
namespace fs = std::filesystem;

namespace {

struct Sampled {
  int status = -1;
  double wall_s = 0;
  std::vector<std::pair<double, double>> rss_mb;  ///< (seconds since start, VmRSS in MB)
};

double vm_rss_mb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return NAN;
}

/// Runs vortexhit with `args`, sampling its resident set every 0.5 s.
Sampled run_sampled(const std::vector<std::string>& args) {
  std::vector<std::string> argv_s = {VH_EXE};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  Sampled s;
  pid_t pid = 0;
  if (posix_spawn(&pid, VH_EXE, nullptr, nullptr, argv.data(), environ) != 0) return s;
  const auto t0 = std::chrono::steady_clock::now();
  int st = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &st, WNOHANG);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r == pid) {
      s.wall_s = t;
      break;
    }
    const double rss = vm_rss_mb(pid);
    if (std::isfinite(rss)) s.rss_mb.emplace_back(t, rss);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  s.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return s;
}

/// Median RSS over the samples in [a, b) of the run's wall time (fractions).
double median_rss(const Sampled& s, double a, double b) {
  std::vector<double> v;
  for (const auto& [t, mb] : s.rss_mb)
    if (t >= a * s.wall_s && t < b * s.wall_s) v.push_back(mb);
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Largest |(K_i − K_{i−1})/(t_i − t_{i−1}) + (ε_i + ε_{i−1})/2| / ((ε_i + ε_{i−1})/2) over
/// the outputs: how far the energy lost between outputs is from the dissipation (trapezoid).
double energy_balance_residual(const vh::SolverRecord& r) {
  const auto &t = r.series.at("t"), &K = r.series.at("K"), &eps = r.series.at("epsilon");
  double worst = 0;
  for (std::size_t i = 1; i < t.size(); ++i) {
    const double mean_eps = 0.5 * (eps[i] + eps[i - 1]);
    worst = std::max(worst, std::abs((K[i] - K[i - 1]) / (t[i] - t[i - 1]) + mean_eps) / mean_eps);
  }
  return worst;
}

void expect_all_finite(const vh::SolverRecord& r, const std::string& solver) {
  for (const auto& [name, v] : r.series)
    for (std::size_t i = 0; i < v.size(); ++i)
      ASSERT_TRUE(std::isfinite(v[i])) << solver << " " << name << "[" << i << "] = " << v[i];
}

fs::path run_dir(const char* name) {
  const fs::path d = fs::temp_directory_path() / (std::string("vh_long_") + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

/// RSS at the start and the end, printed and compared: a leak of 1 kB a step would add 10 MB
/// over 10⁴ steps; allocator noise (glibc arenas of the OpenMP threads) stays below 4 MB.
void expect_flat_memory(const Sampled& s, const char* what) {
  const double start = median_rss(s, 0.1, 0.2), end = median_rss(s, 0.9, 1.0);
  std::printf("%s: wall %.0f s, RSS %.1f MB at 10-20 %% of the run, %.1f MB over the last 10 %% (%zu samples)\n",
              what, s.wall_s, start, end, s.rss_mb.size());
  ASSERT_TRUE(std::isfinite(start) && std::isfinite(end)) << "too few RSS samples";
  EXPECT_LT(end - start, 4.0) << "resident set grew by " << end - start << " MB";
}

TEST(LongRun, Spectral64CubedTenThousandSteps) {
  const fs::path d = run_dir("spectral64");
  // dt = 0.004: CFL number ≈ 0.15 at the start (max|u| ≈ 3.6, h = 0.098), 10⁴ steps to t = 40
  // (about 30 T); 100 outputs, every 100 steps, so the trapezoid rule of the energy balance
  // is accurate to ~1e-4 of ε.
  const Sampled s = run_sampled({"run", VH_SOURCE_DIR "/inputs/quick.ini", "--quiet", "--case.solver=spectral",
                                 "--domain.n=64", "--time.dt=0.004", "--time.t_end=40", "--time.output_interval=0.4",
                                 "--time.t_end_over_T=", "--time.cfl=", "--time.output_interval_over_T=",
                                 "--output.fields_at=", "--output.checkpoint_minutes=0",
                                 "--output.dir=" + d.string()});
  ASSERT_EQ(s.status, 0);
  const vh::RunData data = vh::RunFile::read((d / "run.h5").string());
  const vh::SolverRecord& r = data.solvers.at("spectral");
  EXPECT_EQ(r.series.at("step").back(), 10000.0);
  expect_all_finite(r, "spectral");
  expect_flat_memory(s, "spectral 64^3, 10^4 steps");
  const double res = energy_balance_residual(r);
  std::printf("spectral 64^3: K/K0 at the end %.4g, largest energy-balance residual between outputs %.2e\n",
              r.series.at("K").back() / r.series.at("K").front(), res);
  // The integrating-factor RK4 with the 3/2 rule loses energy only by ν k² (exactly ε); the
  // residual is the trapezoid's O(Δt²) error, Δt = 0.4, and RK4's: below 1e-3 is generous.
  EXPECT_LT(res, 1e-3);
  fs::remove_all(d);
}

TEST(LongRun, Vortex32CubedTwoThousandStepsWithReinitialisations) {
  const fs::path d = run_dir("vortex32");
  // quick.ini's vortex settings; dt = 0.02 (CFL ≈ 0.35 at the start, h = 0.196), 2 000 steps
  // to t = 40, a reinitialisation every 10 steps (200 in all), 100 outputs.
  const Sampled s = run_sampled({"run", VH_SOURCE_DIR "/inputs/quick.ini", "--quiet", "--case.solver=vortex",
                                 "--domain.n=32", "--time.dt=0.02", "--time.t_end=40", "--time.output_interval=0.4",
                                 "--vortex.reinit_every=10", "--time.t_end_over_T=", "--time.cfl=",
                                 "--time.output_interval_over_T=", "--output.fields_at=", "--output.checkpoint_minutes=0",
                                 "--output.dir=" + d.string()});
  ASSERT_EQ(s.status, 0);
  const vh::RunData data = vh::RunFile::read((d / "run.h5").string());
  const vh::SolverRecord& r = data.solvers.at("vortex");
  EXPECT_EQ(r.series.at("step").back(), 2000.0);
  EXPECT_EQ(r.series.at("reinits").back(), 200.0);
  expect_all_finite(r, "vortex");
  expect_flat_memory(s, "vortex 32^3, 2000 steps");
  double drift = 0;
  for (const char* c : {"sum_strength_x", "sum_strength_y", "sum_strength_z"}) {
    const auto& a = r.series.at(c);
    for (double v : a) drift = std::max(drift, std::abs(v - a.front()));
  }
  std::printf("vortex 32^3: K/K0 at the end %.4g, largest |sum(strength) - sum(strength)(0)| %.2e, largest "
              "energy-balance residual between outputs %.2e\n",
              r.series.at("K").back() / r.series.at("K").front(), drift, energy_balance_residual(r));
  // Σα is the integral of ω times the particle volume, zero for a periodic field: the
  // stretching and the reinitialisations keep it only approximately, and its drift is
  // reported, not bounded here beyond being finite (expect_all_finite).
  fs::remove_all(d);
}

}  // namespace
