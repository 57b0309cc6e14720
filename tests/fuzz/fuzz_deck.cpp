// libFuzzer harness for the deck parser (scripts/fuzz.sh; tests/fuzz/CMakeLists.txt):
// text in → a valid configuration or a vh::InputError, never a crash, hang or abort.
//
// The input is a deck; a first line that starts with "--" holds command-line overrides
// (space-separated), so the override path is fuzzed too. A valid configuration must also
// survive what a run does with it: its deck text (run.h5:/deck, checkpoint.h5:/deck) parses
// back to the same options, as a restart reads it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "app/config.h"
#include "app/deck.h"
#include "base/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  if (text.rfind("--", 0) == 0) {
    const auto eol = text.find('\n');
    std::istringstream first(text.substr(0, eol));
    for (std::string o; first >> o;) overrides.push_back(o);
    text = eol == std::string::npos ? "" : text.substr(eol + 1);
  }
  try {
    const vh::Options o = vh::app::parse_deck(text, "fuzz.ini", overrides);
    vh::app::make_config("fuzz.ini", o);
    const std::string stored = vh::app::deck_text(o);
    const vh::Options back = vh::app::parse_deck(stored, "stored deck", {});
    if (back.value != o.value) {
      std::cerr << "fuzz_deck: the stored deck does not parse back to the same options:\n" << stored;
      std::abort();
    }
  } catch (const vh::InputError&) {
    // a user error with its one-line message: the expected outcome for most inputs
  }
  return 0;
}
