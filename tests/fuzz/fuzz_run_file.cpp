// libFuzzer harness for the run-file reader (scripts/fuzz.sh; tests/fuzz/CMakeLists.txt):
// bytes in → the run's record or a vh::InputError (exit 2), never a crash, hang or abort.
//
// As fuzz_checkpoint.cpp: each input is read as it is (the seal must refuse it) and resealed
// (the reader and the restart's checks see the fuzzed bytes). A record that passes
// check_restart_record is then trimmed and read as the restart does (run.cpp).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/run_file.h"
#include "core/seal.h"

namespace {

std::string scratch() {
  const std::filesystem::path shm("/dev/shm");
  std::error_code ec;
  const auto dir = std::filesystem::is_directory(shm, ec) ? shm : std::filesystem::temp_directory_path();
  return (dir / ("vh_fuzz_run_file_" + std::to_string(::getpid()) + ".h5")).string();
}

void restart_from(const std::string& path) {
  vh::RunData d = vh::RunFile::read(path, /*require_seal=*/true);
  for (const auto& solver : {"spectral", "vortex"}) {
    const double t = 0.05;  // a checkpoint time inside the seed run's outputs
    vh::check_restart_record(d, path, solver, t);
    // What the restart then relies on (run.cpp: trim_after, the last K, ε, Re_λ).
    vh::SolverRecord& r = d.solvers.at(solver);
    std::size_t keep = 0;
    const auto& ts = r.series.at("t");
    while (keep < ts.size() && ts[keep] <= t * (1 + 1e-12)) ++keep;
    for (auto& [name, v] : r.series) v.resize(keep);
    volatile double last = r.series.at("K").back() + r.series.at("epsilon").back() + r.series.at("Re_lambda").back();
    (void)last;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = scratch();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), std::streamsize(size));
  try {
    restart_from(path);
  } catch (const vh::InputError&) {
  }
  if (size >= vh::kSealSize) {
    vh::seal_file(path);
    try {
      restart_from(path);
    } catch (const vh::InputError&) {
    }
  }
  return 0;
}
