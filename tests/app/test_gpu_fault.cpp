// A GPU that fails mid-run: gpu_fault.cu, preloaded into vortexhit, makes a kernel trap on the
// program's GPU once the run's first checkpoint exists, a real sticky fault of its CUDA context
// (as after an Xid; the program's code is not changed for it). The run stops with exit 3 and one
// line naming the fault, where the solvers were and the last good checkpoint; nothing is left
// half-written (no temporary, run.h5 and the checkpoint read and pass their seals); the
// checkpoint continues to the uninterrupted run's series. The R-rank case is in
// tests/mpi/test_mpi_run.cpp. CUDA builds; skipped without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "core/device.h"
#include "io/run_file.h"
#include "gpu_fault_case.h"
#include "shell.h"

namespace fs = std::filesystem;

namespace {

using vh::test::Result;
using vh::test::shell;

const std::string kExe = VH_EXE;

/// Runs `run_case` uninterrupted, then again with a fault set off by the file `trigger` of its
/// folder: exit 3 and the one line, nothing half-written, and the checkpoint it names
/// continues bit for bit (as every GPU restart does) to the uninterrupted run's series.
void expect_fault_stops_and_continues(const std::string& run_case, const std::string& trigger) {
  const fs::path dir = fs::temp_directory_path() / ("vh_gpu_fault_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const fs::path a = dir / "a", b = dir / "b";
  Result r = shell(kExe + run_case + " --output.dir=" + a.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string ckpt = (b / "checkpoint.h5").string();
  r = shell("LD_PRELOAD=" + std::string(VH_GPU_FAULT) + " VH_FAULT_AFTER=" + (b / trigger).string() + " " + kExe +
            run_case + " --output.dir=" + b.string());
  ASSERT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("gpu_fault: a kernel trapped"), std::string::npos) << r.output;
  const std::size_t at = r.output.find("vortexhit: stopped: GPU fault, ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
  std::printf("[ the line ] %s\n", line.c_str());
  EXPECT_NE(line.find(" at step "), std::string::npos) << line;
  // The call that met the fault (a CUDA or a cuFFT one) and the context's sticky error.
  EXPECT_NE(line.find("unspecified launch failure"), std::string::npos) << line;
  EXPECT_NE(line.find("the last good checkpoint is " + ckpt), std::string::npos) << line;
  EXPECT_EQ(r.output.find("vortexhit:"), at) << r.output;  // the program's one line
  EXPECT_EQ(r.output.find("vortexhit:", at + 1), std::string::npos) << r.output;
  for (const auto& e : fs::directory_iterator(b)) EXPECT_NE(e.path().extension(), ".tmp") << e.path();
  // The checkpoint continues (its seal and state checked by the restart) to the end.
  r = shell(kExe + " run --restart " + b.string() + " --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  const vh::RunData da = vh::RunFile::read((a / "run.h5").string()), db = vh::RunFile::read((b / "run.h5").string());
  for (const char* s : {"spectral", "vortex"}) {
    const auto &sa = da.solvers.at(s).series, &sb = db.solvers.at(s).series;
    ASSERT_EQ(sa.size(), sb.size()) << s;
    for (const auto& [key, va] : sa) EXPECT_EQ(sb.at(key), va) << s << " " << key;
  }
  fs::remove_all(dir);
}

TEST(GpuFault, AGpuThatFailsMidRunStopsWithExit3AndItsCheckpointContinues) {
  if (!vh::gpu_available()) GTEST_SKIP() << "no CUDA device";
  expect_fault_stops_and_continues(vh::test::kGpuFaultCase, "checkpoint.h5");
}

// Set off as the second checkpoint begins (checkpoint_prev.h5 appears first): the fault meets
// the copy of the GPU's state for that checkpoint. It is a GPU fault there too, not a failed
// write; the new checkpoint is abandoned, and the first continues.
TEST(GpuFault, AGpuThatFailsDuringACheckpointStopsWithExit3AndThePreviousOneContinues) {
  if (!vh::gpu_available()) GTEST_SKIP() << "no CUDA device";
  expect_fault_stops_and_continues(vh::test::kGpuFaultCheckpointCase, "checkpoint_prev.h5");
}

}  // namespace
