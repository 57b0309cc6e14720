// libFuzzer harness for the checkpoint reader (scripts/fuzz.sh; tests/fuzz/CMakeLists.txt):
// bytes in → a restored state or a vh::InputError (exit 2), never a crash, hang or abort.
//
// Each input is tried twice, as a restart would read it from checkpoint.h5:
//  1. as it is: the integrity seal (core/seal.h) must refuse it unless it is intact;
//  2. resealed (the first 512 bytes replaced by a seal of the rest): HDF5, the readers and the
//     state checks then see the fuzzed bytes, as from a buggy writer or another program.
// The solvers are those of the seed corpus's deck: both, 8³, on the CPU.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "app/checkpoint.h"
#include "app/config.h"
#include "app/deck.h"
#include "app/steppers.h"
#include "core/error.h"
#include "core/seal.h"

namespace {

const std::vector<std::unique_ptr<vh::app::Stepper>>& solvers() {
  static const auto s = [] {
    const vh::Options o = vh::app::parse_deck("[domain]\nn = 8\n[flow]\nnu = 0.01\n", "fuzz deck", {});
    vh::app::RunConfig c = vh::app::make_config("", o);
    std::vector<std::unique_ptr<vh::app::Stepper>> v;
    v.push_back(vh::app::make_spectral(c.spectral, vh::Grid{c.n}, vh::Backend::cpu));
    v.push_back(vh::app::make_vortex(c.vortex, vh::Grid{c.n}, vh::Backend::cpu));
    return v;
  }();
  return s;
}

std::string scratch() {
  const std::filesystem::path shm("/dev/shm");
  std::error_code ec;
  const auto dir = std::filesystem::is_directory(shm, ec) ? shm : std::filesystem::temp_directory_path();
  return (dir / ("vh_fuzz_checkpoint_" + std::to_string(::getpid()) + ".h5")).string();
}

void restart_from(const std::string& path) {
  const vh::app::CheckpointHeader h = vh::app::read_checkpoint_header(path);
  vh::app::make_config("", vh::app::parse_deck(h.deck, path + ":/deck", {}));
  vh::app::load_checkpoint(h, solvers());
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
