// Checkpoints that cannot lie: a restart refuses, with exit status 2 and one line naming the
// file and the dataset, every checkpoint or run file whose bytes are not those written
// (the seal, io/seal.h) and every state the solvers would not have produced (the checks
// after a good seal: vortex/validate.h, the spectral load, the run file's record). The damage
// past the seal is made here with the raw HDF5 C API and the file resealed, as a buggy writer
// or another program would leave it. The random-damage experiment (≥ 500 cases) is
// tests/fuzz/corrupt_checkpoints.py.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

#include "io/run_file.h"
#include "io/seal.h"
#include "shell.h"

namespace fs = std::filesystem;

namespace {

using vh::test::Result;

const std::string kExe = VH_EXE;
// Both solvers at 8³ (8³ particles, refine 1), a checkpoint at t/T = 0.1 (two steps of the CFL
// number alone, time.lcfl = 0; with an AB2 history).
const std::string kCase =
    " --domain.n=8 --flow.Re_lambda=20 --flow.k_p=2 --device=cpu --case.solver=both"
    " --time.output_interval_over_T=0.1 --output.fields_at= --vortex.reinit_every=100 --quiet"
    " --time.t_end_over_T=0.1 --time.lcfl=0 --vortex.refine=1";

class CheckpointChecks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    base_ = fs::temp_directory_path() / ("vh_ckpt_checks_" + std::to_string(::getpid()));
    fs::remove_all(base_);
    const Result r = vh::test::vortexhit("run" + kCase + " --output.dir=" + (base_ / "run").string());
    ASSERT_EQ(r.status, 0) << r.output;
  }
  static void TearDownTestSuite() { fs::remove_all(base_); }
  void SetUp() override {
    dir_ = base_ / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::copy(base_ / "run", dir_);
  }
  /// A restart from the copy; `expect` must appear in its output, with exit status 2.
  void expect_refused(const std::string& expect, const std::string& overrides = "") {
    const Result r = vh::test::vortexhit("run --restart " + dir_.string() + " --time.t_end_over_T=0.2 --quiet" + overrides);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find(expect), std::string::npos) << "expected: " << expect << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << "one line:\n" << r.output;
  }
  std::string ckpt() const { return (dir_ / "checkpoint.h5").string(); }

  static fs::path base_;
  fs::path dir_;
};
fs::path CheckpointChecks::base_;

/// `v` as the program prints a time it refuses (17 significant digits).
std::string digits17(double v) {
  std::ostringstream o;
  o << std::setprecision(17) << v;
  return o.str();
}

/// Sets element `index` of double dataset `name` of `file` to `value`, then reseals the file.
void poke(const std::string& file, const char* name, std::size_t index, double value) {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0) << file;
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
  ASSERT_GE(d, 0) << name;
  hid_t s = H5Dget_space(d);
  std::vector<double> v(std::size_t(H5Sget_simple_extent_npoints(s)));
  ASSERT_GE(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  v.at(index) = value;
  ASSERT_GE(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  H5Sclose(s);
  H5Dclose(d);
  H5Fclose(f);
  vh::seal_file(file);
}

/// Sets the int64 or double attribute `attr` of object `obj` of `file`, then reseals the file.
template <class T>
void poke_attribute(const std::string& file, const char* obj, const char* attr, T value) {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0) << file;
  hid_t o = H5Oopen(f, obj, H5P_DEFAULT);
  ASSERT_GE(o, 0) << obj;
  hid_t a = H5Aopen(o, attr, H5P_DEFAULT);
  ASSERT_GE(a, 0) << obj << " " << attr;
  ASSERT_GE(H5Awrite(a, std::is_same_v<T, double> ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64, &value), 0);
  H5Aclose(a);
  H5Oclose(o);
  H5Fclose(f);
  vh::seal_file(file);
}

TEST_F(CheckpointChecks, TheUntouchedCopyRestarts) {
  const Result r = vh::test::vortexhit("run --restart " + dir_.string() + " --time.t_end_over_T=0.2 --quiet");
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST_F(CheckpointChecks, DamagedOrUnsealedFilesAreRefusedBeforeHdf5ReadsThem) {
  std::string bytes;
  {
    std::ifstream in(ckpt(), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[bytes.size() / 3] ^= 0x10;
  std::ofstream(ckpt(), std::ios::binary | std::ios::trunc) << bytes;
  expect_refused(ckpt() + ": damaged: its bytes do not match its integrity seal");
  // A file without the seal: written by an older vortexhit or another program.
  std::fill(bytes.begin(), bytes.begin() + vh::kSealSize, '\0');
  std::ofstream(ckpt(), std::ios::binary | std::ios::trunc) << bytes;
  expect_refused(ckpt() + ": no integrity seal");
}

TEST_F(CheckpointChecks, CoreRadiusNotPositiveIsRefusedNamingSigma) {
  poke(ckpt(), "/vortex/sigma", 5, -0.25);
  expect_refused(ckpt() + ":/vortex: sigma[5] = -0.25 is not a core radius");
}

TEST_F(CheckpointChecks, NonFinitePositionIsRefusedNamingX) {
  poke(ckpt(), "/vortex/x", 3 * 7 + 1, std::numeric_limits<double>::quiet_NaN());
  expect_refused(ckpt() + ":/vortex: x[7][1] = nan is not finite");
}

TEST_F(CheckpointChecks, PositionOutsideTheBoxIsRefused) {
  poke(ckpt(), "/vortex/x", 0, 7.0);
  expect_refused(ckpt() + ":/vortex: x[0][0] = 7 is outside the box");
}

TEST_F(CheckpointChecks, NonFiniteHistoryIsRefused) {
  poke(ckpt(), "/vortex/dalpha_prev", 11, std::numeric_limits<double>::infinity());
  expect_refused(ckpt() + ":/vortex: dalpha_prev[3][2] = inf is not finite");
}

TEST_F(CheckpointChecks, NonFinitePointStrengthIsRefused) {
  poke(ckpt(), "/vortex/gamma", 3 * 2, -std::numeric_limits<double>::infinity());
  expect_refused(ckpt() + ":/vortex: gamma[2][0] = -inf is not finite");
  fs::remove_all(dir_);
  fs::copy(base_ / "run", dir_);
  poke(ckpt(), "/vortex/dgamma_prev", 3 * 4 + 1, std::numeric_limits<double>::quiet_NaN());
  expect_refused(ckpt() + ":/vortex: dgamma_prev[4][1] = nan is not finite");
}

TEST_F(CheckpointChecks, ReinitialisationTimeAfterTheCheckpointsIsRefused) {
  // t_reinit sets the lattice diffusion still due (ν (t − t_reinit)): it must lie in [0, t].
  poke_attribute(ckpt(), "/vortex", "t_reinit", 1e3);
  expect_refused(ckpt() + ":/vortex: attribute t_reinit = 1000 is out of range (allowed: 0 ... t)");
}

TEST_F(CheckpointChecks, NonFiniteSpectralCoefficientIsRefused) {
  poke(ckpt(), "/spectral/u", 42, std::numeric_limits<double>::quiet_NaN());
  expect_refused(ckpt() + ":/spectral/u: holds values that are not finite");
}

TEST_F(CheckpointChecks, NegativeStepCountsAreRefused) {
  poke_attribute(ckpt(), "/vortex", "steps", std::int64_t(-3));
  expect_refused(ckpt() + ":/vortex: attribute steps = -3 is out of range");
  fs::remove_all(dir_);
  fs::copy(base_ / "run", dir_);
  poke_attribute(ckpt(), "/spectral", "steps", std::int64_t(-1));
  expect_refused(ckpt() + ":/spectral: attributes t = ");
  fs::remove_all(dir_);
  fs::copy(base_ / "run", dir_);
  poke_attribute(ckpt(), "/", "field_index", std::int64_t(-1));
  expect_refused(ckpt() + ":/ attribute field_index = -1 is out of range");
}

// Finite values no run could have written (issue 28: a strength of 1e300 restarted and wrote
// a last row with t = inf and K = 0, exit 0): each is larger than a field of the run's largest
// speed can hold at a point (vortex/validate.h; the speed: src/app/checkpoint.h, speed_cap).
TEST_F(CheckpointChecks, ImpossiblyLargeStrengthIsRefused) {
  poke(ckpt(), "/vortex/alpha", 3 * 17 + 2, 1e300);
  expect_refused(ckpt() + ":/vortex: |alpha[17]| = 1e+300 is larger than a field of the run's largest speed can hold");
}

TEST_F(CheckpointChecks, ImpossiblyLargePointStrengthOrHistoryIsRefused) {
  // 1e20: far below overflow, far above the bound (about 4e9 for gamma at 8^3).
  poke(ckpt(), "/vortex/gamma", 3 * 5, 1e20);
  expect_refused(ckpt() + ":/vortex: |gamma[5]| = 1e+20 is larger than");
  fs::remove_all(dir_);
  fs::copy(base_ / "run", dir_);
  poke(ckpt(), "/vortex/u_prev", 3 * 9 + 1, -1e300);
  expect_refused(ckpt() + ":/vortex: |u_prev[9]| = 1e+300 is larger than");
}

TEST_F(CheckpointChecks, ImpossiblyLargeSpectralCoefficientIsRefused) {
  poke(ckpt(), "/spectral/u", 42, 1e300);
  expect_refused(ckpt() + ":/spectral/u: holds a coefficient |u_k| = 1e+300, larger than a field of the run's "
                          "largest speed can hold");
}

// The solvers advance to each output in turn: a checkpoint holds their times within one
// output interval of each other and of their last output in run.h5 (run.cpp,
// check_checkpoint_times). Issue 28: a vortex time far past the spectral one restarted and
// wrote a row at that time.
TEST_F(CheckpointChecks, SolverTimesMoreThanAnOutputIntervalApartAreRefused) {
  hid_t f = H5Fopen(ckpt().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  double t = 0;
  hid_t a = H5Aopen_by_name(f, "/vortex", "t", H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(H5Aread(a, H5T_NATIVE_DOUBLE, &t), 0);
  H5Aclose(a);
  H5Fclose(f);
  ASSERT_GT(t, 0);
  poke_attribute(ckpt(), "/vortex", "t", 10 * t);
  expect_refused(ckpt() + ":/vortex: attribute t = " + digits17(10 * t) +
                 " is more than one output interval from /spectral attribute t = " + digits17(t));
  // Both moved on together: past their last output in run.h5.
  poke_attribute(ckpt(), "/spectral", "t", 10 * t);
  expect_refused(ckpt() + ":/spectral: attribute t = " + digits17(10 * t) +
                 " is more than one output interval after the solver's last output");
}

TEST_F(CheckpointChecks, StepCountThatDisagreesWithTheRunFileIsRefused) {
  // Written at an output: the count of that output's row (2), not 7.
  poke_attribute(ckpt(), "/vortex", "steps", std::int64_t(7));
  expect_refused(ckpt() + ":/vortex: attribute steps = 7 disagrees with " + (dir_ / "run.h5").string() +
                 ":/vortex/series/step = 2");
}

/// Rewrites the deck stored in `file` with domain.n = `n`, then reseals the file.
void set_stored_n(const std::string& file, int n) {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0) << file;
  hid_t d = H5Dopen2(f, "/deck", H5P_DEFAULT);
  hid_t type = H5Dget_type(d);
  std::string deck(H5Tget_size(type), '\0');
  ASSERT_GE(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, deck.data()), 0);
  H5Tclose(type);
  H5Dclose(d);
  const auto at = deck.find("\nn = ");
  ASSERT_NE(at, std::string::npos) << deck;
  deck = deck.substr(0, at) + "\nn = " + std::to_string(n) + deck.substr(deck.find('\n', at + 1));
  deck.resize(std::strlen(deck.c_str()));
  ASSERT_GE(H5Ldelete(f, "/deck", H5P_DEFAULT), 0);
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, deck.size());
  hid_t space = H5Screate(H5S_SCALAR);
  d = H5Dcreate2(f, "/deck", t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, deck.data()), 0);
  H5Dclose(d);
  H5Sclose(space);
  H5Tclose(t);
  H5Fclose(f);
  vh::seal_file(file);
}

TEST_F(CheckpointChecks, SizesMustBeThoseOfTheDecksGrid) {
  // A restart at another N is refused before the state is read ...
  expect_refused(ckpt() + ": written at domain.n = 8, the restart asks for domain.n = 16", " --domain.n=16");
  // ... so is one on another particle lattice (vortex.refine · N points per direction) ...
  expect_refused(ckpt() + ": written at vortex.refine = 1 (8³ particles), the restart asks for vortex.refine = 2 "
                          "(16³; allowed: the checkpoint's particle lattice, the state is not interpolated)",
                 " --vortex.refine=2");
  // ... and a checkpoint whose deck says 16³ over 8³ arrays, at the arrays.
  set_stored_n(ckpt(), 16);
  expect_refused(ckpt() + ":/spectral/u: coefficients of N = 8, the run has domain.n = 16");
  expect_refused(ckpt() + ":/vortex/x: shape [512 3], expected [4096 3]", " --case.solver=vortex");
}

TEST_F(CheckpointChecks, RunFileWithoutTheSolversRecordIsRefused) {
  const std::string run_h5 = (dir_ / "run.h5").string();
  vh::RunData d = vh::RunFile::read(run_h5);
  d.solvers.erase("vortex");
  vh::RunFile(run_h5, d).write();
  expect_refused(run_h5 + ":/vortex: missing");
  // Times that do not reach back to the checkpoint's: not the run of this checkpoint.
  d = vh::RunFile::read((base_ / "run" / "run.h5").string());
  for (auto& t : d.solvers.at("spectral").series.at("t")) t += 100;
  vh::RunFile(run_h5, d).write();
  expect_refused(run_h5 + ":/spectral/series/t: no output at or before the checkpoint's t");
}

TEST_F(CheckpointChecks, InputsThatCrashHdf5AreRefusedAtTheSeal) {
  // tests/fuzz/*/hdf5/: inputs on which HDF5 1.10 itself crashes or loops once they carry a
  // valid seal (fuzzing resealed them, tests/fuzz/FINDINGS.md). As they are, a restart must
  // refuse them at the seal, before HDF5 reads a byte.
  int inputs = 0;
  for (const char* harness : {"checkpoint", "run_file"}) {
    const fs::path dir = fs::path(VH_SOURCE_DIR) / "tests" / "fuzz" / harness / "hdf5";
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      fs::remove_all(dir_);
      fs::copy(base_ / "run", dir_);
      const fs::path target = dir_ / (std::string(harness) == "checkpoint" ? "checkpoint.h5" : "run.h5");
      fs::copy_file(e.path(), target, fs::copy_options::overwrite_existing);
      SCOPED_TRACE(e.path().string());
      const Result r = vh::test::vortexhit("run --restart " + dir_.string() + " --time.t_end_over_T=0.2 --quiet");
      EXPECT_EQ(r.status, 2) << r.output;
      EXPECT_TRUE(r.output.find(target.string() + ": damaged") != std::string::npos ||
                  r.output.find(target.string() + ": no integrity seal") != std::string::npos)
          << r.output;
      ++inputs;
    }
  }
  EXPECT_GT(inputs, 0);
}

}  // namespace
