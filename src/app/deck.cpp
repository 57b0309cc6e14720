#include "app/deck.h"

#include <boost/program_options.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "base/error.h"
#include "spectral/solver.h"
#include "vortex/solver.h"

namespace po = boost::program_options;

namespace vh::app {
namespace {

std::vector<OptionSpec> app_options() {
  return {
      {"device", "cpu|gpu|auto", "auto", "", "back end: auto takes the GPU when one is visible"},
      {"case.name", "string", "quick", "", "name of the case; default output folder runs/<name>"},
      {"case.solver", "initial|spectral|vortex|both", "both", "",
       "which solvers run from the initial field; initial writes its diagnostics and fields and stops"},
      {"case.seed", "int", "1", "", "seed of the random initial field (same field on any device)"},
      {"domain.n", "int", "32", "points", "grid points (and lattice particles) per direction, even, >= 8"},
      {"flow.spectrum", "k4exp|pope|taylor-green|abc", "k4exp", "",
       "initial field: random with E = A k^4 exp(-2 (k/k_p)^2) or Pope's model spectrum, or the "
       "Taylor-Green vortex, or the ABC (Beltrami) flow at k = 1"},
      {"flow.k_p", "real", "4", "1/length", "peak wavenumber of k4exp"},
      {"flow.pope_L", "real", "1", "length", "L = k^(3/2)/eps of Pope's model spectrum"},
      {"flow.pope_eta", "real", "0.02", "length", "Kolmogorov scale eta of Pope's model spectrum"},
      {"flow.u_prime", "real", "", "velocity",
       "initial rms velocity u' = sqrt(2K/3); default 1 (random) or V0 = 1 (taylor-green)"},
      {"flow.K0", "real", "", "velocity^2", "initial kinetic energy K = <u.u>/2, instead of u_prime"},
      {"flow.Re_lambda", "real", "", "", "target Taylor-scale Reynolds number: sets nu (give this or nu)"},
      {"flow.nu", "real", "", "length^2/time", "kinematic viscosity (give this or Re_lambda)"},
      {"time.t_end_over_T", "real", "1", "T", "end time in eddy turnovers T = L/u' of the initial field"},
      {"time.t_end", "real", "", "time", "end time, instead of t_end_over_T"},
      {"time.cfl", "real", "0.5", "", "time step from dt = cfl h / max|u| (unless dt is given)"},
      {"time.lcfl", "real", "0.2", "",
       "with cfl, the vortex solver's dt is also at most lcfl / max|du_i/dx_j| at its particles (the Lagrangian "
       "CFL number; 0: no such limit)"},
      {"time.dt", "real", "", "time", "fixed time step, instead of cfl"},
      {"time.output_interval_over_T", "real", "0.1", "T", "diagnostics every this many T"},
      {"time.output_interval", "real", "", "time", "diagnostics interval in time units, instead"},
      {"time.max_cfl", "real", "1.0", "", "the run stops with a checkpoint (exit 3) if dt max|u| / h exceeds this"},
      {"time.stall_fraction", "real", "1e-6", "",
       "the run stops with a checkpoint (exit 3) if a step's dt falls below this fraction of the run's first dt"},
      {"time.max_energy_rise", "real", "0.01", "",
       "the run stops with a checkpoint (exit 3) if K rises above its running minimum by more than this fraction "
       "(these flows are unforced: K only decays)"},
      {"parallel.comm", "auto|mpi|nccl", "auto", "",
       "GPU runs on several ranks: how device buffers travel between the ranks; auto takes NCCL where "
       "the build has it and every rank has its own GPU, else MPI (environment VH_COMM overrides)"},
      {"parallel.share_gpus", "bool", "false", "",
       "GPU runs on several ranks: allow ranks to share a GPU (more ranks than GPUs; they then "
       "exchange through MPI)"},
      {"output.dir", "string", "", "", "run folder; default runs/<case.name>"},
      {"output.fields_at", "list", "0,1", "T",
       "t/T at which velocity, vorticity and Q are written (fields_<index>.h5 + .xdmf)"},
      {"output.overwrite", "bool", "false", "", "replace the files of an existing run folder"},
      {"output.checkpoint_every", "int", "0", "steps",
       "write checkpoint.h5 at the first output after this many steps (0: only at the end)"},
      {"output.checkpoint_minutes", "real", "30", "minutes",
       "write checkpoint.h5 at the first output after this much wall time (0: off)"},
  };
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1] ? 1 : 0)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool known(const std::string& key) {
  const auto& t = option_table();
  return std::any_of(t.begin(), t.end(), [&](const OptionSpec& s) { return s.key == key; });
}

/// Line numbers of the deck's keys; rejects unknown keys, duplicates and malformed lines.
std::map<std::string, int> scan_deck(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::map<std::string, int> lines;
  std::string line, section;
  for (int no = 1; std::getline(in, line); ++no) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const std::string here = name + ":" + std::to_string(no);
    if (line.front() == '[') {
      if (line.back() != ']') throw InputError(here + ": malformed section header '" + line + "'");
      section = trim(line.substr(1, line.size() - 2));
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos)
      throw InputError(here + ": expected 'key = value', found '" + line + "'");
    const std::string key = (section.empty() ? "" : section + ".") + trim(line.substr(0, eq));
    if (!known(key))
      throw InputError(here + ": unknown key '" + key + "' (nearest valid key: '" + nearest_key(key) +
                       "'; `vortexhit help` lists all)");
    if (lines.count(key))
      throw InputError(here + ": duplicate key '" + key + "' (first set at line " +
                       std::to_string(lines[key]) + ")");
    lines[key] = no;
  }
  return lines;
}

/// Stores the command line's `--key=value` overrides in `vm`, before the deck: store() keeps
/// the first value it sees, so these win. Returns how often each key was given (once); keys
/// given as `--key=` go to `unset` instead.
std::map<std::string, int> store_overrides(const std::vector<std::string>& overrides,
                                           const po::options_description& desc, po::variables_map& vm,
                                           std::vector<std::string>& unset) {
  std::vector<std::string> args;
  for (const auto& o : overrides) {
    if (o.rfind("--", 0) != 0 || o.find('=') == std::string::npos)
      throw InputError("command line: '" + o + "' is not of the form --section.key=value");
    const std::string key = o.substr(2, o.find('=') - 2);
    if (!known(key))
      throw InputError("command line: unknown key '" + key + "' (nearest valid key: '" +
                       nearest_key(key) + "')");
    args.push_back(o);
  }
  std::map<std::string, int> cmd_count;
  for (const auto& a : args)
    if (++cmd_count[a.substr(2, a.find('=') - 2)] > 1)
      throw InputError("command line: key '" + a.substr(2, a.find('=') - 2) + "' given twice");
  args.erase(std::remove_if(args.begin(), args.end(),
                            [&](const std::string& a) {
                              // Only "--key=": "--key=a=" sets key to "a=" (found by fuzzing:
                              // it was taken for the unset of a key "key=a", i.e. ignored).
                              if (a.find('=') != a.size() - 1) return false;
                              unset.push_back(a.substr(2, a.size() - 3));
                              return true;
                            }),
             args.end());
  try {
    po::store(po::command_line_parser(args).options(desc).style(po::command_line_style::unix_style)
                  .run(), vm);
  } catch (const po::error& e) {
    throw InputError(std::string("command line: ") + e.what());
  }
  return cmd_count;
}

/// Stores the deck `text` (`name` in messages) in `vm` after the command line; returns the
/// line of each key (scan_deck() rejects unknown and duplicate keys first).
std::map<std::string, int> store_deck(const std::string& text, const std::string& name,
                                      const po::options_description& desc, po::variables_map& vm) {
  if (text.empty()) return {};
  std::map<std::string, int> lines = scan_deck(text, name);
  std::istringstream in(text);
  try {
    po::store(po::parse_config_file(in, desc, false), vm);
  } catch (const po::error& e) {
    throw InputError(name + ": " + e.what());
  }
  return lines;
}

}  // namespace

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> table = [] {
    std::vector<OptionSpec> t = app_options();
    for (auto& s : spectral::option_specs()) t.push_back(s);
    for (auto& s : vortex::option_specs()) t.push_back(s);
    return t;
  }();
  return table;
}

std::string nearest_key(const std::string& key) {
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const auto& s : option_table()) {
    const std::size_t d = edit_distance(key, s.key);
    if (d < best_d) best_d = d, best = s.key;
  }
  return best;
}

Options read_deck(const std::string& deck_path, const std::vector<std::string>& overrides) {
  if (deck_path.empty()) return parse_deck("", "", overrides);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(deck_path, ec))
    throw InputError(deck_path + ": cannot open the deck (" +
                     (std::filesystem::exists(deck_path, ec) ? "not a regular file" : "no such file") + ")");
  std::ifstream in(deck_path);
  std::ostringstream text;
  if (!(in && text << in.rdbuf()) && in.bad())
    throw InputError(deck_path + ": cannot open the deck (unreadable file)");
  return parse_deck(text.str(), deck_path, overrides);
}

Options parse_deck(const std::string& text, const std::string& name, const std::vector<std::string>& overrides) {
  po::options_description desc;
  for (const auto& s : option_table())
    desc.add_options()(s.key.c_str(), po::value<std::string>(), s.help.c_str());

  po::variables_map vm;
  std::vector<std::string> unset;  // --key= with nothing after '=': unsets a key the deck sets
  const std::map<std::string, int> cmd_count = store_overrides(overrides, desc, vm, unset);
  std::map<std::string, int> lines = store_deck(text, name, desc, vm);
  po::notify(vm);

  Options o;
  for (const auto& key : unset) {
    o.value[key] = "";
    o.origin[key] = "command line";
  }
  for (const auto& s : option_table()) {
    if (o.value.count(s.key)) continue;  // unset on the command line
    if (vm.count(s.key)) {
      o.value[s.key] = trim(vm[s.key].as<std::string>());
      o.origin[s.key] = cmd_count.count(s.key) ? "command line"
                                               : name + ":" + std::to_string(lines[s.key]);
    } else {
      o.value[s.key] = s.fallback;
    }
  }
  return o;
}

namespace {

/// Writes the table as an INI deck: a [section] header where the section changes, then per
/// key what `comment` says (may be empty) and `key = value`; `# key =` (left out) for no value
/// (std::nullopt) or an empty one where the default is empty too.
std::string write_ini(const std::function<std::string(const OptionSpec&)>& comment,
                      const std::function<std::optional<std::string>(const OptionSpec&)>& value) {
  std::ostringstream out;
  std::string section = "\x01";
  for (const auto& s : option_table()) {
    const auto dot = s.key.find('.');
    const std::string sec = dot == std::string::npos ? "" : s.key.substr(0, dot);
    const std::string name = dot == std::string::npos ? s.key : s.key.substr(dot + 1);
    if (sec != section) {
      if (!sec.empty()) out << "\n[" << sec << "]\n";
      section = sec;
    }
    out << comment(s);
    const std::optional<std::string> v = value(s);
    // "# key =" leaves a key out, i.e. at its default: for no value, and for an empty one only
    // when the default is empty too. An emptied key with a default (output.fields_at =: no
    // fields) must stay "key =", or a restart reads the default back (found by fuzzing the deck).
    if (!v || (v->empty() && s.fallback.empty()))
      out << "# " << name << " =\n";
    else if (v->empty())
      out << name << " =\n";
    else
      out << name << " = " << *v << "\n";
  }
  return out.str();
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& exclusive_keys() {
  static const std::vector<std::pair<std::string, std::string>> pairs = {
      {"time.t_end", "time.t_end_over_T"},
      {"time.dt", "time.cfl"},
      {"time.output_interval", "time.output_interval_over_T"}};
  return pairs;
}

std::string deck_text(const Options& o) {
  auto set = [&](const std::string& k) { return o.origin.count(k) && o.has(k); };
  auto shadowed = [&](const std::string& k) {  // a default its exclusive partner overrides
    for (const auto& [a, b] : exclusive_keys())
      if ((k == a && set(b) && !set(a)) || (k == b && set(a) && !set(b))) return true;
    return false;
  };
  // A shadowed default is left out (std::nullopt), not emptied: its partner decides (found by
  // fuzzing the deck: "t_end_over_T =" beside t_end = 20 read back as an emptied key).
  return write_ini([](const OptionSpec&) { return std::string(); },
                   [&](const OptionSpec& s) -> std::optional<std::string> {
                     if (shadowed(s.key)) return std::nullopt;
                     return o.value.at(s.key);
                   });
}

std::string help_text() {
  return "# vortexhit deck keys: every key with its type, default, unit and meaning.\n"
         "# `[section] key = value` sets section.key; `--section.key=value` on the command line\n"
         "# overrides the deck. A commented-out key (# key =) has no default: it is optional.\n" +
         write_ini(
             [](const OptionSpec& s) {
               return "# " + s.help + "\n#   type: " + s.type + (s.unit.empty() ? "" : ", unit: " + s.unit) + "\n";
             },
             [](const OptionSpec& s) -> std::optional<std::string> { return s.fallback; });
}

}  // namespace vh::app
