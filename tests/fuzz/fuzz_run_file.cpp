// libFuzzer harness for the run-file reader (scripts/fuzz.sh; tests/fuzz/CMakeLists.txt):
// bytes in → the run's record or a vh::InputError (exit 2), never a crash, hang or abort.
//
// Each input is read as run.h5 as it is and resealed (resealed.h); a record that passes
// check_restart_record is then trimmed and read as the restart does (run.cpp).
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/run_file.h"
#include "resealed.h"

namespace {

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
  static const std::string path = vh::fuzz::scratch_file("vh_fuzz_run_file");
  return vh::fuzz::as_written_and_resealed(data, size, path, restart_from);
}
