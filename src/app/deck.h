// Input decks: INI files read with Boost.Program_options, overridden from the command line.
//
// `[section] key = value` is the key `section.key`; keys before any section have no dot
// (`device`). `#` anywhere starts a comment; quotes are not stripped. The command line is
// parsed before the deck because Boost's store() keeps the first value it sees: that is how
// `--section.key=value` wins over the deck. Unknown and duplicate keys are rejected with
// file:line and the nearest valid key.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/options.h"

namespace vh::app {

/// Every key the program knows: the app's own, then each module's (spectral.*, fmm.*, …).
const std::vector<OptionSpec>& option_table();

/// Reads `deck_path` (may be empty: defaults only) and the `--key=value` overrides; `--key=`
/// with no value unsets a key (e.g. the deck's flow.Re_lambda, to give flow.nu instead).
/// Throws vh::InputError with one line naming the file/line or key on any problem.
Options read_deck(const std::string& deck_path, const std::vector<std::string>& overrides);

/// The same for a deck given as text; `name` stands for the file in messages.
Options parse_deck(const std::string& text, const std::string& name, const std::vector<std::string>& overrides);

/// Pairs of keys that say the same thing in different units (time.t_end and
/// time.t_end_over_T, …): at most one of each may be set explicitly (make_config checks).
const std::vector<std::pair<std::string, std::string>>& exclusive_keys();

/// The deck after overrides, as INI text (stored in run.h5:/deck and checkpoints). A key left
/// at its default while its exclusive partner is set is written commented out, so that the
/// text parses back to the same configuration (a restart reads it).
std::string deck_text(const Options& o);

/// A fully commented deck of every key, grouped by section (`vortexhit help`).
std::string help_text();

/// The key of the table nearest to `key` (edit distance), for "did you mean" messages.
std::string nearest_key(const std::string& key);

}  // namespace vh::app
