// Deck keys: one table that the parser, the validator and `vortexhit help` all read.
//
// Each module describes its keys as OptionSpec rows and reads its parameters back from the
// parsed Options (dotted key → text) through the typed getters below, which throw
// vh::InputError naming the key, the bad text and what is allowed. The deck parser
// (src/app/deck) fills Options from the INI file and the command line.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace vh {

struct OptionSpec {
  std::string key;        ///< dotted name, e.g. "spectral.dealias"
  std::string type;       ///< "int", "real", "bool", "string", "list", or "a|b|c" for a choice
  std::string fallback;   ///< default as text; "" means "not set" (optional key)
  std::string unit;       ///< physical unit, "" for none
  std::string help;       ///< one line: what the key does
};

/// Parsed deck: every key of the table, with its default where the deck did not set it.
/// `origin` says where each explicit value came from ("deck.ini:12" or "command line").
struct Options {
  std::map<std::string, std::string> value;
  std::map<std::string, std::string> origin;

  bool has(const std::string& key) const;  ///< set explicitly or by a non-empty default
  std::string text(const std::string& key) const;
  long integer(const std::string& key) const;
  double real(const std::string& key) const;        ///< NaN when unset
  bool boolean(const std::string& key) const;       ///< true/false/yes/no/on/off/1/0
  std::vector<double> reals(const std::string& key) const;  ///< comma-separated list
  /// One of `allowed`; throws naming them otherwise.
  std::string choice(const std::string& key, const std::vector<std::string>& allowed) const;
  /// "where: key = value" for messages.
  std::string where(const std::string& key) const;
};

}  // namespace vh
