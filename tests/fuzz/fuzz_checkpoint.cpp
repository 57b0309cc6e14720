// libFuzzer harness for the checkpoint reader (scripts/fuzz.sh; tests/fuzz/CMakeLists.txt):
// bytes in → a restored state or a vh::InputError (exit 2), never a crash, hang or abort.
// Each input is read as checkpoint.h5 as it is and resealed (resealed.h); the solvers are
// those of the seed corpus's deck: both, 8³, on the CPU.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app/checkpoint.h"
#include "app/config.h"
#include "app/deck.h"
#include "app/steppers.h"
#include "resealed.h"

namespace {

const std::vector<std::unique_ptr<vh::app::Stepper>>& solvers() {
  static const auto s = [] {
    const vh::Options o = vh::app::parse_deck("[domain]\nn = 8\n[flow]\nnu = 0.01\n", "fuzz deck", {});
    vh::app::RunConfig c = vh::app::make_config("", o);
    std::vector<std::unique_ptr<vh::app::Stepper>> v;
    const vh::Grid g{c.n};
    v.push_back(vh::app::make_spectral(c.spectral, vh::Slab::whole_grid(g, vh::spectral::kept_kmax(c.spectral.dealias, g.n)),
                                       vh::Backend::cpu));
    v.push_back(vh::app::make_vortex(c.vortex, vh::Slab::whole_grid(g), vh::Backend::cpu));
    return v;
  }();
  return s;
}

void restart_from(const std::string& path) {
  const vh::app::CheckpointHeader h = vh::app::read_checkpoint_header(path);
  const vh::app::RunConfig c = vh::app::make_config("", vh::app::parse_deck(h.deck, path + ":/deck", {}));
  // The magnitude checks at the speed cap of an initial field whose max|u_i| is 1.
  vh::app::load_checkpoint(h, solvers(), vh::app::speed_cap(c, vh::Grid{8}.h(), 1.0));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = vh::fuzz::scratch_file("vh_fuzz_checkpoint");
  return vh::fuzz::as_written_and_resealed(data, size, path, restart_from);
}
