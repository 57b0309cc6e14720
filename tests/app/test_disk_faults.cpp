// Faults on disk: an output folder the program cannot write, a disk that fills while a fields
// file or a checkpoint is written (a file-size limit, `prlimit --fsize`, and a real full
// tmpfs where this process may mount one), the run folder deleted or moved mid-run. Each
// gives exit 2 (before anything is written) or 3 (mid-run) with one clear line, leaves no
// half-written file under a final name (nor a .tmp), and the previous checkpoint intact: the
// same bytes, and a restart from it runs to the end.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "shell.h"

namespace fs = std::filesystem;

namespace {

using vh::test::Result;
using vh::test::shell;

const std::string kExe = VH_EXE;
const std::string kCommon =
    " --flow.Re_lambda=20 --flow.k_p=2 --device=cpu --time.output_interval_over_T=0.1 --quiet --vortex.refine=1";

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool has_tmp(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".tmp") return true;
  return false;
}

class DiskFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("vh_disk_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
           std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override {
    if (mounted) ::umount2(mounted_at.c_str(), MNT_DETACH);
    shell("chmod -R u+rwX " + dir.string());
    fs::remove_all(dir);
  }
  /// A finished run in `run` to t/T = 0.1 with its checkpoint; `args` picks solver and size.
  void base_run(const fs::path& run, const std::string& args) {
    const Result r = vh::test::vortexhit("run" + kCommon + args + " --output.fields_at= --time.t_end_over_T=0.1" +
                                         " --output.dir=" + run.string());
    ASSERT_EQ(r.status, 0) << r.output;
    ASSERT_TRUE(fs::exists(run / "checkpoint.h5"));
  }
  /// What must hold after a fault: no temporary left, the checkpoint the same bytes as
  /// `before`, and a restart from it that runs to t/T = 0.2.
  void expect_previous_checkpoint_intact(const fs::path& run, const std::string& before) {
    EXPECT_FALSE(has_tmp(run));
    EXPECT_EQ(bytes_of(run / "checkpoint.h5"), before) << "the checkpoint changed";
    const Result r = vh::test::vortexhit("run --restart " + run.string() + " --time.t_end_over_T=0.2 --quiet");
    EXPECT_EQ(r.status, 0) << r.output;
  }
  /// Continues `run` to t/T = 0.2 (with `args`) under a file-size limit of `bytes`: it must
  /// stop with exit 3 at `failing` ("File too large"), leaving the checkpoint as it was.
  void expect_stop_under_size_limit(const fs::path& run, std::size_t bytes, const std::string& args,
                                    const fs::path& failing) {
    const std::string before = bytes_of(run / "checkpoint.h5");
    const Result r = shell("prlimit --fsize=" + std::to_string(bytes) + " " + kExe + " run --restart " +
                           run.string() + " --time.t_end_over_T=0.2 --quiet" + args);
    EXPECT_EQ(r.status, 3) << r.output;
    EXPECT_NE(r.output.find("cannot write " + failing.string() + " (File too large)"), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("the last checkpoint " + (run / "checkpoint.h5").string() + " is intact"),
              std::string::npos)
        << r.output;
    expect_previous_checkpoint_intact(run, before);
  }
  fs::path dir;
  bool mounted = false;
  std::string mounted_at;
};

/// Runs the program as a user who cannot write where root owns (root ignores permission
/// bits), or as this user where it is not root.
std::string as_other_user() { return ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : ""; }

TEST_F(DiskFaults, OutputFolderNotWritableIsBadInputAndNothingIsWritten) {
  if (shell(as_other_user() + kExe + " help").status != 0)
    GTEST_SKIP() << "user 65534 cannot run " << kExe << " (a folder on its path is not readable)";
  const fs::path out = dir / "readonly";
  fs::create_directories(out);
  fs::permissions(out, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                           fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  Result r = shell(as_other_user() + kExe + " run" + kCommon + " --domain.n=12 --output.overwrite=true --output.dir=" +
                   out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("output.dir"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("is not writable: Permission denied"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::is_empty(out));

  // A restart into a folder it cannot write: refused before a byte is written there.
  const fs::path run = dir / "run";
  base_run(run, " --domain.n=12 --case.solver=both");
  shell("chmod a-w " + run.string());
  const std::string before = bytes_of(run / "checkpoint.h5");
  const auto files = std::distance(fs::directory_iterator(run), {});
  r = shell(as_other_user() + kExe + " run --restart " + run.string() + " --time.t_end_over_T=0.2 --quiet");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("the run folder " + run.string() + " of " + (run / "checkpoint.h5").string() +
                          " is not writable"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(std::distance(fs::directory_iterator(run), {}), files);
  shell("chmod u+w " + run.string());
  expect_previous_checkpoint_intact(run, before);
}

TEST_F(DiskFaults, FileSizeLimitWhileWritingAFieldsFileStopsWithExit3) {
  // Spectral at 16³: checkpoint 110 kB, run.h5 30 kB, a fields file 230 kB; the limit of
  // 160 kB stops the fields file only.
  const fs::path run = dir / "run";
  base_run(run, " --domain.n=16 --case.solver=spectral");
  expect_stop_under_size_limit(run, 160000, " --output.fields_at=0.2", run / "fields_0000.h5");
  EXPECT_FALSE(fs::exists(run / "fields_0000.h5"));
}

TEST_F(DiskFaults, FileSizeLimitWhileWritingACheckpointStopsWithExit3) {
  // Both solvers at 12³: checkpoint 160 kB, run.h5 40 kB; the limit of 100 kB stops the
  // checkpoint at the end of the continued run.
  const fs::path run = dir / "run";
  base_run(run, " --domain.n=12 --case.solver=both");
  expect_stop_under_size_limit(run, 100000, "", run / "checkpoint.h5");
}

TEST_F(DiskFaults, FullFileSystemWhileWritingACheckpointStopsWithExit3) {
  const fs::path mnt = dir / "mnt";
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1m") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (needs CAP_SYS_ADMIN): the file-size-limit tests cover this";
  mounted = true;
  mounted_at = mnt.string();
  const fs::path run = mnt / "run";
  base_run(run, " --domain.n=16 --case.solver=spectral");
  const std::string before = bytes_of(run / "checkpoint.h5");
  // Fill the file system but for room for run.h5 (rewritten at each output) and 40 kB: the
  // 110 kB checkpoint cannot fit.
  const auto keep = fs::file_size(run / "run.h5") + 40000;
  const auto avail = fs::space(mnt).available;
  ASSERT_GT(avail, keep);
  {
    std::ofstream filler(mnt / "filler", std::ios::binary);
    const std::string block(4096, 'x');
    for (std::uintmax_t n = 0; n + block.size() <= avail - keep; n += block.size()) filler << block;
  }
  const Result r = vh::test::vortexhit("run --restart " + run.string() + " --time.t_end_over_T=0.2 --quiet");
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("(No space left on device)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("nothing was left half-written"), std::string::npos) << r.output;
  fs::remove(mnt / "filler");
  expect_previous_checkpoint_intact(run, before);
}

/// Starts a long run (a checkpoint at every output), waits for its first checkpoint, applies
/// `fault` (a shell command on $D, the run folder), and returns how the run ended.
Result run_with_fault(const fs::path& run, const std::string& fault) {
  const std::string script =
      "D=" + run.string() + "; " + kExe + " run" + kCommon +
      " --domain.n=12 --case.solver=both --output.fields_at= --time.t_end_over_T=50 --output.checkpoint_every=1"
      " --output.dir=$D > $D.log 2>&1 & pid=$!; "
      "for i in $(seq 600); do [ -f $D/checkpoint.h5 ] && break; sleep 0.1; done; " +
      fault + "; wait $pid; echo \"exit status $?\"; cat $D.log";
  return shell("bash -c '" + script + "'");
}

TEST_F(DiskFaults, RunFolderMovedMidRunStopsAndItsCheckpointRestarts) {
  const fs::path run = dir / "run", moved = dir / "moved";
  const Result r = run_with_fault(run, "mv $D " + moved.string());
  EXPECT_NE(r.output.find("exit status 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the run folder " + run.string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("deleted or moved away during the run"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(run)) << "the run folder was made anew";
  EXPECT_FALSE(has_tmp(moved));
  const Result c = vh::test::vortexhit("run --restart " + moved.string() + " --time.t_end_over_T=0.2 --quiet");
  EXPECT_EQ(c.status, 0) << c.output;
}

TEST_F(DiskFaults, RunFolderDeletedMidRunStops) {
  const fs::path run = dir / "run";
  const Result r = run_with_fault(run, "rm -rf $D");
  EXPECT_NE(r.output.find("exit status 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("deleted or moved away during the run"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(run)) << "the run folder was made anew";
}

}  // namespace
