#include "app/compare.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <regex>
#include <sstream>

#include "base/error.h"
#include "core/diagnostics.h"
#include "core/fft.h"
#include "core/pdf.h"
#include "io/fields_file.h"
#include "io/run_file.h"

namespace fs = std::filesystem;

namespace vh::app {

const char* const kCompareUsage =
    "       vortexhit compare RUN_DIR [--solvers A,B] [OPTIONS]       solver B vs solver A of one run\n"
    "                                                                 (default --solvers spectral,vortex)\n"
    "       vortexhit compare RUN_A RUN_B [--solver S] [OPTIONS]      one solver, run B vs run A\n"
    "       vortexhit compare RUN_A RUN_B --solvers A,B [OPTIONS]     run B's solver B vs run A's solver A\n"
    "                                                                 (runs of different N: series and the\n"
    "                                                                 shells both hold, e.g. against a finer\n"
    "                                                                 reference run)\n"
    "         --at 1,5,10          t/T (T of the initial field) for spectra, Q fields and PDFs\n"
    "         --spectrum-tol 0.1   |E_B/E_A - 1| that counts as agreement for k_agree\n"
    "         --q-level 1          Q threshold in units of <Q^2>^1/2 for the Jaccard index\n"
    "         --json FILE          also write every number as JSON\n"
    "         checks (exit 1 when exceeded): --K-tol X --epsilon-tol X --Re_lambda-tol X\n"
    "           --L-tol X --T-tol X (max |B/A - 1| over common times), --band-tol X,\n"
    "           --k-agree-min K, --q-corr-min C, --q-jaccard-min J,\n"
    "           --q-pdf-max D, --qr-pdf-max D (distance of the PDFs of Q and of (Q, R))\n";

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
/// Series compared over the common output times, in table order; each has a --<name>-tol.
const std::vector<std::string> kCompared = {"K", "epsilon", "Re_lambda", "L", "T"};

// ---- options -----------------------------------------------------------------------------

struct Options {
  std::vector<std::string> dirs;                 ///< one run folder or two
  std::string solver;                            ///< two-run mode; empty: automatic
  std::string solver_a = "spectral", solver_b = "vortex";  ///< one-run mode
  bool solvers_given = false;
  std::vector<double> at = {1, 5, 10};
  double spectrum_tol = 0.1;
  double q_level = 1.0;
  std::string json;
  std::map<std::string, double> series_tol;  ///< series name → limit on max |B/A − 1|
  double band_tol = kNaN, k_agree_min = kNaN, q_corr_min = kNaN, q_jaccard_min = kNaN;
  double q_pdf_max = kNaN, qr_pdf_max = kNaN;
};

/// "--Re_lambda-tol" → "re-lambda-tol": flag names compare case- and '_'/'-'-insensitively.
std::string norm_flag(std::string s) {
  for (char& c : s) c = c == '_' ? '-' : char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

double parse_number(const std::string& flag, const std::string& v) {
  try {
    std::size_t used = 0;
    const double x = std::stod(v, &used);
    if (used == v.size() && std::isfinite(x)) return x;
  } catch (const std::exception&) {
  }
  throw InputError("command line: " + flag + " '" + v + "' is not a number");
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    out.push_back(item);
  }
  return out;
}

/// The flags that take one number, and the option each sets.
const std::map<std::string, double Options::*>& number_flags() {
  static const std::map<std::string, double Options::*> flags = {
      {"--spectrum-tol", &Options::spectrum_tol}, {"--q-level", &Options::q_level},
      {"--band-tol", &Options::band_tol},         {"--k-agree-min", &Options::k_agree_min},
      {"--q-corr-min", &Options::q_corr_min},     {"--q-jaccard-min", &Options::q_jaccard_min},
      {"--q-pdf-max", &Options::q_pdf_max},       {"--qr-pdf-max", &Options::qr_pdf_max}};
  return flags;
}

/// Sets what `flag` (as given, for messages) says to `value`.
void set_option(Options& o, const std::string& flag, const std::string& value) {
  std::map<std::string, std::string> series_flags;  // normalised flag → series name
  for (const auto& s : kCompared) series_flags[norm_flag("--" + s + "-tol")] = s;
  const std::string f = norm_flag(flag);
  if (const auto it = number_flags().find(f); it != number_flags().end()) {
    o.*(it->second) = parse_number(flag, value);
  } else if (series_flags.count(f)) {
    o.series_tol[series_flags[f]] = parse_number(flag, value);
  } else if (f == "--solvers") {
    const auto v = split(value, ',');
    if (v.size() != 2 || v[0].empty() || v[1].empty() || v[0] == v[1])
      throw InputError("command line: --solvers '" + value +
                       "' (allowed: two different solvers A,B, e.g. initial,spectral)");
    o.solver_a = v[0];
    o.solver_b = v[1];
    o.solvers_given = true;
  } else if (f == "--solver") {
    o.solver = value;
  } else if (f == "--at") {
    o.at.clear();
    for (const auto& v : split(value, ',')) o.at.push_back(parse_number(flag, v));
    if (o.at.empty()) throw InputError("command line: --at is empty (allowed: t/T values, e.g. 1,5,10)");
  } else if (f == "--json") {
    o.json = value;
  } else {
    throw InputError("command line: unknown compare option '" + flag +
                     "' (allowed: --solvers, --solver, --at, --spectrum-tol, --q-level, --json, --K-tol, "
                     "--epsilon-tol, --Re_lambda-tol, --L-tol, --T-tol, --band-tol, --k-agree-min, --q-corr-min, "
                     "--q-jaccard-min, --q-pdf-max, --qr-pdf-max)");
  }
}

/// The words after "compare": run folders, and flags as `--flag value` or `--flag=value`.
Options parse(const std::vector<std::string>& args) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      o.dirs.push_back(a);
      continue;
    }
    std::string flag = a, value;
    if (const auto eq = a.find('='); eq != std::string::npos) {
      flag = a.substr(0, eq);
      value = a.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      throw InputError("command line: " + a + " needs a value");
    }
    set_option(o, flag, value);
  }
  if (o.dirs.empty() || o.dirs.size() > 2)
    throw InputError("command line: compare takes RUN_DIR or RUN_A RUN_B (got " +
                     std::to_string(o.dirs.size()) + " folders)");
  if (o.solvers_given && !o.solver.empty())
    throw InputError("command line: --solver and --solvers together (allowed: --solver S for the same solver of "
                     "two runs, or --solvers A,B)");
  if (o.dirs.size() == 1 && !o.solver.empty())
    throw InputError("command line: --solver is for two runs; with one run use --solvers A,B");
  return o;
}

// ---- inputs ------------------------------------------------------------------------------

/// One side of the comparison: a run folder, its run.h5 and the solver group compared.
struct Side {
  std::string dir;       ///< run folder
  std::string run_path;  ///< dir/run.h5
  std::string solver;
  const SolverRecord* rec = nullptr;
  int n = 0;  ///< domain.n from /deck (0 when the deck does not say)
  std::string label;  ///< for notes: the solver, or "run B's spectral" when two runs are compared
  std::string where(const std::string& dataset) const { return run_path + ":/" + solver + "/" + dataset; }
};

/// A run folder, or run.h5 itself.
std::string run_dir(const std::string& arg) {
  const fs::path p(arg);
  if (p.extension() == ".h5" && !fs::is_directory(p)) return p.parent_path().empty() ? "." : p.parent_path().string();
  return arg;
}

/// domain.n of a deck text ("[domain]" then "n = 32"), 0 when absent.
int deck_n(const std::string& deck) {
  std::istringstream in(deck);
  std::string line, section;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    line.erase(0, line.find_first_not_of(" \t"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty()) continue;
    if (line.front() == '[') {
      section = line.substr(1, line.find(']') - 1);
    } else if (section == "domain" && line.rfind("n", 0) == 0) {
      const auto eq = line.find('=');
      if (eq == std::string::npos || line.substr(0, eq).find_first_not_of(" \t", 1) != std::string::npos) continue;
      try {
        return std::stoi(line.substr(eq + 1));
      } catch (const std::exception&) {
        return 0;
      }
    }
  }
  return 0;
}

const std::vector<double>& series(const Side& s, const std::string& name) {
  const auto it = s.rec->series.find(name);
  if (it == s.rec->series.end()) throw InputError(s.where("series/" + name) + " is missing");
  return it->second;
}

Side make_side(const std::string& arg, const RunData& data, const std::string& solver) {
  Side s;
  s.dir = run_dir(arg);
  s.run_path = (fs::path(s.dir) / "run.h5").string();
  s.solver = solver;
  const auto it = data.solvers.find(solver);
  if (it == data.solvers.end()) {
    std::string have;
    for (const auto& [name, rec] : data.solvers) have += (have.empty() ? "" : ", ") + name;
    throw InputError(s.run_path + ": no solver group /" + solver + " (has: " + (have.empty() ? "none" : have) + ")");
  }
  s.rec = &it->second;
  s.n = deck_n(data.deck);
  return s;
}

/// T of the initial field of a run, the unit of t/T.
double initial_T(const RunData& d, const std::string& run_path) {
  const auto it = d.solvers.find("initial");
  if (it == d.solvers.end() || !it->second.series.count("T") || it->second.series.at("T").empty())
    throw InputError(run_path + ":/initial/series/T is missing (needed for t/T)");
  const double T = it->second.series.at("T")[0];
  if (!(T > 0) || !std::isfinite(T)) throw InputError(run_path + ":/initial/series/T[0] is not positive");
  return T;
}

/// Runs on different grids (a coarse run against a finer reference) compare their series and
/// the shells both hold; point-by-point measures (the Q fields) need one grid.
bool same_grid(const Side& a, const Side& b) { return !a.n || !b.n || a.n == b.n; }

/// Pairs (i, j) of equal times t_a[i] ≈ t_b[j] (within tol), in order of t_a.
std::vector<std::pair<std::size_t, std::size_t>> common_times(const std::vector<double>& ta,
                                                              const std::vector<double>& tb, double tol) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 0; i < ta.size(); ++i)
    for (std::size_t j = 0; j < tb.size(); ++j)
      if (std::abs(ta[i] - tb[j]) <= tol) {
        out.emplace_back(i, j);
        break;
      }
  return out;
}

// ---- measures ----------------------------------------------------------------------------

double rel(double b, double a) { return std::abs(b / a - 1.0); }

struct Band {
  int lo, hi;
  double rel_diff;
};

/// Bands 1–4, 5–16, 17–64, … (×4), cut at k_cut; a last band cut to less than a quarter of
/// its width joins the one before (N = 256: 1–4, 5–16, 17–85), so no band is a sliver.
std::vector<std::pair<int, int>> bands(int k_cut) {
  std::vector<std::pair<int, int>> out;
  for (int lo = 1, hi = 4; lo <= k_cut; lo = hi + 1, hi *= 4) {
    const int top = std::min(hi, k_cut);
    if (!out.empty() && 4 * (top - lo + 1) < hi - lo + 1)
      out.back().second = top;
    else
      out.emplace_back(lo, top);
  }
  return out;
}

/// A side's shells that hold round-off only: E_A(k) ≤ kEmptyShell Σ_k E_A(k). A double field
/// puts about ε² ≈ 5e-33 of its energy into a shell it does not fill (1e-39 to 4e-37 measured in
/// the spectral solver's Taylor–Green and ABC runs, whose symmetries empty whole shells), and an
/// unstable flow grows it (Taylor–Green's shell 1 at N 64: 4e-34 at t = 0.9, 3e-32 at t = 5.7);
/// a resolved run keeps more than 1e-15 in its last shell (E(k) ~ exp(−5.2 kη) at k_max η ≤ 6).
/// The ratio E_B/E_A on such a shell is a ratio to round-off, so the bands and k_agree leave it
/// out, and the report says how much of its energy B holds there instead.
constexpr double kEmptyShell = 1e-20;

std::vector<bool> empty_shells(const std::vector<double>& ea) {
  double total = 0;
  for (double e : ea) total += e;
  std::vector<bool> empty(ea.size());
  for (std::size_t k = 0; k < ea.size(); ++k) empty[k] = ea[k] <= kEmptyShell * total;
  return empty;
}

/// Σ_band |E_B − E_A| / Σ_band E_A over bands(k_cut), over the shells A does not hold empty
/// (NaN for a band of empty shells only).
std::vector<Band> band_differences(const std::vector<double>& ea, const std::vector<double>& eb,
                                   const std::vector<bool>& empty, int k_cut) {
  std::vector<Band> out;
  for (const auto& [lo, hi] : bands(std::min(k_cut, int(ea.size()) - 1))) {
    double num = 0, den = 0;
    for (int k = lo; k <= hi; ++k) {
      if (empty[k]) continue;
      num += std::abs(eb[k] - ea[k]);
      den += ea[k];
    }
    out.push_back({lo, hi, den > 0 ? num / den : kNaN});
  }
  return out;
}

/// Largest k with |E_B/E_A − 1| ≤ tol on every shell 1 … k that A does not hold empty (0 when
/// shell 1 already differs); a shell A holds empty neither breaks nor extends the agreement.
int agreement_k(const std::vector<double>& ea, const std::vector<double>& eb, const std::vector<bool>& empty,
                double tol) {
  int k = 0;
  for (std::size_t i = 1; i < ea.size(); ++i) {
    if (empty[i]) continue;
    if (!(rel(eb[i], ea[i]) <= tol)) break;
    k = int(i);
  }
  return k;
}

/// A fields file holding the compared solver, and the solver's output time there.
struct FieldsAt {
  std::string path;
  double t;
};

/// fields_*.h5 of `dir` that hold `solver`, by index.
std::vector<FieldsAt> fields_of(const std::string& dir, const std::string& solver,
                                std::map<std::string, std::map<std::string, double>>& cache) {
  static const std::regex name(R"(fields_(\d+)\.h5)");
  std::vector<std::pair<long, std::string>> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string f = e.path().filename().string();
    if (std::regex_match(f, m, name)) files.emplace_back(std::stol(m[1]), e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<FieldsAt> out;
  for (const auto& [idx, path] : files) {
    if (!cache.count(path)) cache[path] = fields_solvers(path);
    const auto& groups = cache[path];
    if (const auto it = groups.find(solver); it != groups.end()) out.push_back({path, it->second});
  }
  return out;
}

/// What is measured on one pair of fields files.
struct QMeasures {
  double correlation, jaccard;
  double q_pdf_distance, qr_pdf_distance;  ///< total variation of the two PDFs
  double q_w_mean_a, q_w_mean_b;           ///< ⟨Q_W⟩ = ⟨ω·ω⟩/4 of each side
};

struct QResult {
  double requested, t_over_T;
  std::string file_a, file_b;
  QMeasures m;
};

/// Bins of the PDF of Q/⟨Q²⟩^½ and of the joint PDF of (Q/⟨Q_W⟩, R/⟨Q_W⟩^{3/2}); the end bins
/// take the tails (core/pdf.h). quick.ini at t/T = 1 (32³, Re_λ ≈ 20) spans −5 … 8.3 in
/// Q/⟨Q²⟩^½ and −6.5 … 9 in the (Q, R) units, so the ±10 range holds it; wider tails of
/// stronger turbulence count in the end bins. Finer bins would raise the sampling floor of the
/// distance (more bins, fewer points each); coarser ones would blur the teardrop's shape.
const Bins kQBins{-10.0, 10.0, 200};
const Bins kQRBins{-10.0, 10.0, 80};

/// Joint histogram on kQRBins × kQRBins of (Q/⟨Q_W⟩, R/⟨Q_W⟩^{3/2}) of the velocity gradient
/// of /<solver>/velocity in a fields file, and that field's ⟨Q_W⟩.
std::vector<double> qr_histogram(const std::string& path, const std::string& solver, double& q_w_mean) {
  const VectorField u = read_vector_field(path, solver, "velocity");
  Fft3d fft(u.grid.n);
  SpectralVector c(u.grid);
  fft.forward(u, c);
  const GradientInvariants inv = gradient_invariants(c, fft);
  q_w_mean = inv.q_w_mean;
  return histogram2d(inv.q.v, inv.q_w_mean, inv.r.v, std::pow(inv.q_w_mean, 1.5), kQRBins, kQRBins);
}

double rms(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s / double(v.size()));
}

/// Correlation coefficient and Jaccard index of {Q > q rms} of two Q fields on one grid.
void q_measures(const ScalarField& a, const ScalarField& b, double q, double& corr, double& jaccard) {
  const std::size_t n = a.v.size();
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ma += a.v[i];
    mb += b.v[i];
  }
  ma /= double(n);
  mb /= double(n);
  double sab = 0, saa = 0, sbb = 0, qa2 = 0, qb2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sab += (a.v[i] - ma) * (b.v[i] - mb);
    saa += (a.v[i] - ma) * (a.v[i] - ma);
    sbb += (b.v[i] - mb) * (b.v[i] - mb);
    qa2 += a.v[i] * a.v[i];
    qb2 += b.v[i] * b.v[i];
  }
  corr = (saa > 0 && sbb > 0) ? sab / std::sqrt(saa * sbb) : kNaN;
  // Each field against its own ⟨Q²⟩^½: the overlap measures where the structures are, while
  // their amplitude is already in the K, ε and spectrum ratios.
  const double la = q * std::sqrt(qa2 / double(n)), lb = q * std::sqrt(qb2 / double(n));
  std::size_t both = 0, either = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const bool ia = a.v[i] > la, ib = b.v[i] > lb;
    both += ia && ib;
    either += ia || ib;
  }
  jaccard = either ? double(both) / double(either) : kNaN;
}

// ---- output ------------------------------------------------------------------------------

std::string num(double v, const char* f = "%.6g") {
  if (std::isnan(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// A JSON number (NaN and infinities as null, as JSON has no such numbers).
std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string jstr(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += c;
    }
  }
  return o + "\"";
}

struct Check {
  std::string name;
  double limit, value;
  bool is_max;  ///< value must be ≤ limit (true) or ≥ limit (false)
  std::string note;
  bool passed() const { return is_max ? value <= limit : value >= limit; }  // NaN fails
};

/// The band-wise differences and k_agree at one requested t/T.
struct SpecResult {
  double requested, t_over_T;
  std::vector<Band> bands;
  int k_agree;
  double kmax_a, kmax_b;  ///< each side's k_max at that output (NaN: not in its run.h5)
  std::vector<int> empty;  ///< shells 1 … k_max that A holds empty (empty_shells)
  double b_in_empty = 0;   ///< the largest share of B's energy in one of them
  int apart = 0;           ///< the shell that ends k_agree (0: none, every shell A fills agrees)
  double apart_ratio = std::nan(""), apart_share = std::nan("");  ///< its E_B/E_A and A's share there
};

/// Everything compare measures, for the text report, the checks and --json.
struct Report {
  double T0 = 0, T0b = 0;                 ///< T of the initial field of run A (the unit of t/T), of run B
  std::map<std::string, double> max_rel;  ///< series name → max |B/A − 1| over the common times
  std::string series_json;                ///< one JSON object per common output time
  int k_max = 0;                          ///< the largest shell of A's spectra
  double kmax_a = kNaN, kmax_b = kNaN;    ///< each side's solver k_max at its last output (NaN: not recorded)
  std::vector<SpecResult> spectra;        ///< one per --at time (none without common spectra)
  std::vector<QResult> q;                 ///< likewise for the Q fields
  std::vector<Check> checks;
  int failed = 0;                         ///< checks that failed
};

// ---- the report, section by section --------------------------------------------------------

/// The run files, read before anything is printed, so bad input gives one line.
std::vector<RunData> read_runs(const Options& o) {
  std::vector<RunData> data;
  for (const auto& d : o.dirs) {
    const std::string dir = run_dir(d);
    if (!fs::is_directory(dir)) throw InputError(d + ": not a run folder");
    data.push_back(RunFile::read((fs::path(dir) / "run.h5").string()));
  }
  return data;
}

/// A and B: two solvers of one run, solver A of run A and solver B of run B (--solvers A,B), or
/// one solver of two runs (--solver, else the first of spectral, vortex, initial that both
/// hold). The sides point into `data`.
std::pair<Side, Side> make_sides(const Options& o, const std::vector<RunData>& data) {
  if (o.dirs.size() == 1) {
    std::pair<Side, Side> ab{make_side(o.dirs[0], data[0], o.solver_a), make_side(o.dirs[0], data[0], o.solver_b)};
    ab.first.label = ab.first.solver;
    ab.second.label = ab.second.solver;
    return ab;
  }
  if (o.solvers_given) {
    Side a = make_side(o.dirs[0], data[0], o.solver_a), b = make_side(o.dirs[1], data[1], o.solver_b);
    a.label = "run A's " + a.solver;
    b.label = "run B's " + b.solver;
    return {a, b};
  }
  std::string s = o.solver;
  if (s.empty()) {
    for (const char* c : {"spectral", "vortex", "initial"})
      if (data[0].solvers.count(c) && data[1].solvers.count(c)) {
        s = c;
        break;
      }
    if (s.empty()) s = "spectral";  // make_side names what is missing
  }
  Side a = make_side(o.dirs[0], data[0], s), b = make_side(o.dirs[1], data[1], s);
  a.label = "run A's " + s;
  b.label = "run B's " + s;
  return {a, b};
}

void print_header(const Side& a, const Side& b, bool two_runs, const Report& r, std::ostream& out) {
  out << "compare  A: " << a.run_path << " /" << a.solver << "   B: " << b.run_path << " /" << b.solver << "\n";
  out << "N " << (a.n ? std::to_string(a.n) : "?");
  if (!same_grid(a, b)) out << " (run A), " << b.n << " (run B): series and the shells both hold; no Q fields";
  out << "   T = " << num(r.T0) << " (" << a.run_path
      << ":/initial/series/T[0]; t/T below in this unit)";
  if (two_runs && rel(r.T0b, r.T0) > 1e-6) out << "   note: T of run B = " << num(r.T0b);
  out << "\n\n";
}

/// The series over the common output times: K and ε ratios, Re_λ, L and T of both sides, and
/// the largest |B/A − 1| of each compared series.
void compare_series(const Side& a, const Side& b, double t_tol, Report& r, std::ostream& out) {
  const auto& ta = series(a, "t");
  const auto& tb = series(b, "t");
  const auto pairs = common_times(ta, tb, t_tol);
  if (pairs.empty())
    throw InputError("no common output times in " + a.where("series/t") + " and " + b.where("series/t"));
  for (const auto& s : kCompared) r.max_rel[s] = 0.0;
  char line[256];
  out << "series at " << pairs.size() << " common output times (ratios B/A)\n";
  std::snprintf(line, sizeof line, "%8s %10s %10s %9s %9s %9s %9s %9s %9s\n", "t/T", "K ratio", "eps ratio",
                "Re_l A", "Re_l B", "L A", "L B", "T A", "T B");
  out << line;
  std::ostringstream js_series;
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    // Not a structured binding: C++17 lambdas cannot capture one (Clang refuses it).
    const std::size_t i = pairs[p].first, j = pairs[p].second;
    auto va = [&](const std::string& s) { return series(a, s).at(i); };
    auto vb = [&](const std::string& s) { return series(b, s).at(j); };
    for (const auto& s : kCompared) {
      const double d = rel(vb(s), va(s));
      r.max_rel[s] = std::isnan(d) || std::isnan(r.max_rel[s]) ? kNaN : std::max(r.max_rel[s], d);
    }
    const double kr = vb("K") / va("K"), er = vb("epsilon") / va("epsilon");
    std::snprintf(line, sizeof line, "%8.4f %10.6f %10.6f %9.4g %9.4g %9.4g %9.4g %9.4g %9.4g\n", ta[i] / r.T0, kr,
                  er, va("Re_lambda"), vb("Re_lambda"), va("L"), vb("L"), va("T"), vb("T"));
    out << line;
    js_series << (p ? ",\n    " : "") << "{\"t\": " << jnum(ta[i]) << ", \"t_over_T\": " << jnum(ta[i] / r.T0)
              << ", \"K_ratio\": " << jnum(kr) << ", \"epsilon_ratio\": " << jnum(er);
    for (const char* s : {"Re_lambda", "L", "T"})
      js_series << ", \"" << s << "_a\": " << jnum(va(s)) << ", \"" << s << "_b\": " << jnum(vb(s));
    js_series << "}";
  }
  r.series_json = js_series.str();
  out << "max |B/A - 1|:";
  for (const auto& s : kCompared) out << "  " << s << " " << num(r.max_rel[s], "%.3g");
  out << "\n\n";
}

/// A side's solver k_max (the largest wavenumber it keeps: spectral::resolved_kmax,
/// vortex::resolved_kmax) at the output nearest t, from its run.h5 series kmax; NaN for a run
/// file written before the series was.
double kmax_at(const Side& s, double t) {
  const auto it = s.rec->series.find("kmax");
  if (it == s.rec->series.end() || it->second.empty()) return kNaN;
  const auto& ts = series(s, "t");  // as long as kmax (RunFile::read checks)
  std::size_t best = 0;
  for (std::size_t i = 1; i < ts.size(); ++i)
    if (std::abs(ts[i] - t) < std::abs(ts[best] - t)) best = i;
  return it->second[best];
}

/// The first shell beyond k_max: shells are centred on integers, k > k_max.
int first_beyond(double kmax) { return int(std::floor(kmax)) + 1; }

/// The first shell beyond the smaller known k_max of the two (INT_MAX when neither is known).
int first_beyond(double ka, double kb) {
  int f = std::numeric_limits<int>::max();
  for (double k : {ka, kb})
    if (!std::isnan(k)) f = std::min(f, first_beyond(k));
  return f;
}

/// "shells 11-16", "shell 16".
std::string shell_range(int lo, int hi) {
  return lo == hi ? "shell " + std::to_string(lo) : "shells " + std::to_string(lo) + "-" + std::to_string(hi);
}

/// "shell 1", "shells 2-35", "shells 1, 3, 5-9": sorted shells, runs joined.
std::string shell_list(const std::vector<int>& shells) {
  std::string runs;
  for (std::size_t i = 0; i < shells.size();) {
    std::size_t j = i;
    while (j + 1 < shells.size() && shells[j + 1] == shells[j] + 1) ++j;
    runs += (i ? ", " : "") + std::to_string(shells[i]) + (j > i ? "-" + std::to_string(shells[j]) : "");
    i = j + 1;
  }
  return (shells.size() == 1 ? "shell " : "shells ") + runs;
}

/// Which of the shells 1 … max_shell lie beyond each side's k_max: "shells 11-16 lie beyond
/// vortex k_max = 10.67, shell 16 beyond spectral k_max = 15"; a side without the series is
/// named as such.
std::string beyond_note(const Side& a, double ka, const Side& b, double kb, int max_shell) {
  std::vector<std::pair<double, std::string>> known;  // (k_max, label), smallest first
  std::string unknown;
  for (const auto& [k, side] : {std::make_pair(ka, &a), std::make_pair(kb, &b)}) {
    if (std::isnan(k)) {
      unknown += (unknown.empty() ? "" : " and ") + side->label;
    } else if (!known.empty() && known[0].first == k) {
      known[0].second += " and " + side->label;
    } else {
      known.emplace_back(k, side->label);
    }
  }
  std::sort(known.begin(), known.end());
  std::string note;
  for (const auto& [k, label] : known) {
    const int f = first_beyond(k);
    note += note.empty() ? "" : ", ";
    note += f > max_shell ? "no shell lies beyond " + label + " k_max = " + num(k, "%.4g")
                          : shell_range(f, max_shell) + (note.empty() ? " lie" : "") + " beyond " + label +
                                " k_max = " + num(k, "%.4g");
  }
  if (!unknown.empty())
    note += (note.empty() ? "" : "; ") + std::string("no k_max recorded for ") + unknown +
            " (run.h5 written before the series kmax): cannot say which shells lie beyond it";
  return note;
}

void print_spectra(const std::vector<SpecResult>& spec, const Side& a, const Side& b, double spectrum_tol,
                   const Report& r, const std::string& note, std::ostream& out) {
  char line[256];
  out << "spectra: sum_band |E_B - E_A| / sum_band E_A; k_agree: largest k with |E_B/E_A - 1| <= " << num(spectrum_tol)
      << " on every shell 1..k\n  (shells A holds empty, < " << num(kEmptyShell)
      << " of its energy, are left out of both)\n";
  // k_max: the largest wavenumber each solver keeps (run.h5 series kmax); shells beyond it are
  // cut by that solver, wholly or in part, so agreement there says little about its accuracy.
  out << "k_max (largest wavenumber kept): " << beyond_note(a, r.kmax_a, b, r.kmax_b, r.k_max) << "\n";
  const int beyond = first_beyond(r.kmax_a, r.kmax_b);
  std::snprintf(line, sizeof line, "%8s %8s", "t/T req", "t/T");
  out << line;
  bool marked = false;
  for (const auto& bd : spec.front().bands) {
    const bool m = bd.hi >= beyond;
    marked = marked || m;
    std::snprintf(line, sizeof line, " %10s",
                  ("k " + std::to_string(bd.lo) + "-" + std::to_string(bd.hi) + (m ? "*" : "")).c_str());
    out << line;
  }
  out << "  k_agree\n";
  for (const auto& s : spec) {
    std::snprintf(line, sizeof line, "%8.4g %8.4f", s.requested, s.t_over_T);
    out << line;
    for (const auto& bd : s.bands) {
      std::snprintf(line, sizeof line, " %10s", std::isnan(bd.rel_diff) ? "empty" : num(bd.rel_diff, "%.4g").c_str());
      out << line;
    }
    out << "  " << s.k_agree << " of " << r.k_max;
    // The agreement to k_agree counts shells that a solver has cut: say which.
    const int f = first_beyond(s.kmax_a, s.kmax_b);
    if (s.k_agree >= f) {
      const bool by_a = !std::isnan(s.kmax_a) && first_beyond(s.kmax_a) == f;
      const bool by_b = !std::isnan(s.kmax_b) && first_beyond(s.kmax_b) == f;
      const std::string who = by_a && by_b ? a.label + " and " + b.label : by_a ? a.label : b.label;
      const double k = by_a ? s.kmax_a : s.kmax_b;
      out << " (" << shell_range(f, s.k_agree) << " beyond " << who << " k_max = " << num(k, "%.4g") << ")";
    }
    // Where the agreement ends, and how much of A's energy that shell holds (a shell at a
    // symmetry's noise floor ends it as surely as one in the dissipation range).
    if (s.apart > 0)
      out << "; shell " << s.apart << ": E_B/E_A " << num(s.apart_ratio, "%.4g") << ", " << num(s.apart_share, "%.2g")
          << " of A's energy";
    out << "\n";
  }
  if (marked) out << "* the band holds shells beyond a k_max\n";
  // Shells A holds empty (a symmetry's zeros, round-off) where B holds something: named, with
  // B's share there (the ratio is left out of the bands and k_agree).
  for (const SpecResult& s : spec) {
    if (s.b_in_empty > 0)
      out << "t/T " << num(s.t_over_T, "%.4f") << ": " << shell_list(s.empty) << " empty in " << a.label << " (< "
          << num(kEmptyShell) << " of its energy), left out of the bands and k_agree; " << b.label << " holds at most "
          << num(s.b_in_empty, "%.2g") << " of its energy in one of them\n";
  }
  out << note << "\n";
}

/// "t/T 5, 10 requested: the nearest output is the one shown for an earlier --at time" (a run
/// shorter than the defaults 1,5,10 would otherwise repeat its last row); "" when none.
std::string repeated_note(const std::vector<double>& repeated) {
  if (repeated.empty()) return "";
  std::string list;
  for (double t : repeated) list += (list.empty() ? "" : ", ") + num(t, "%.4g");
  return "t/T " + list + " requested: the nearest output is the one shown for an earlier --at time\n";
}

/// The spectra at the common spectrum time nearest each requested t/T: band-wise differences
/// up to k = N/3 and k_agree, with each side's k_max there; on the shells both sides hold (the
/// coarser run's when the grids differ).
void compare_spectra(const Side& a, const Side& b, const Options& o, double t_tol, Report& r, std::ostream& out) {
  r.k_max = int(std::min(a.rec->k.size(), b.rec->k.size())) - 1;
  r.kmax_a = kmax_at(a, series(a, "t").empty() ? 0.0 : series(a, "t").back());
  r.kmax_b = kmax_at(b, series(b, "t").empty() ? 0.0 : series(b, "t").back());
  const int n = a.n && b.n ? std::min(a.n, b.n) : a.n ? a.n : b.n;
  const int k_cut = n ? std::min(n / 3, r.k_max) : r.k_max;
  const auto spairs = common_times(a.rec->spectrum_t, b.rec->spectrum_t, t_tol);
  if (spairs.empty()) {
    out << "spectra: no common spectrum times in " << a.where("spectra/t") << " and " << b.where("spectra/t")
        << "\n\n";
    return;
  }
  std::vector<double> repeated;  // requests whose nearest output an earlier one took
  for (double want : o.at) {
    const auto best = *std::min_element(spairs.begin(), spairs.end(), [&](const auto& x, const auto& y) {
      return std::abs(a.rec->spectrum_t[x.first] / r.T0 - want) < std::abs(a.rec->spectrum_t[y.first] / r.T0 - want);
    });
    const double t_over_T = a.rec->spectrum_t[best.first] / r.T0;
    if (std::any_of(r.spectra.begin(), r.spectra.end(), [&](const SpecResult& x) { return x.t_over_T == t_over_T; })) {
      repeated.push_back(want);
      continue;
    }
    const auto& fa = a.rec->E.at(best.first);
    const auto& fb = b.rec->E.at(best.second);
    const std::vector<double> ea(fa.begin(), fa.begin() + r.k_max + 1), eb(fb.begin(), fb.begin() + r.k_max + 1);
    const std::vector<bool> empty = empty_shells(ea);
    SpecResult s{want,
                 t_over_T,
                 band_differences(ea, eb, empty, k_cut),
                 agreement_k(ea, eb, empty, o.spectrum_tol),
                 kmax_at(a, a.rec->spectrum_t[best.first]),
                 kmax_at(b, b.rec->spectrum_t[best.second]),
                 {},
                 0.0};
    double total_a = 0, total_b = 0;
    for (double e : ea) total_a += e;
    for (double e : eb) total_b += e;
    // The shell that ends the agreement: the first one past k_agree that A fills.
    for (int k = s.k_agree + 1; k <= r.k_max && s.apart == 0; ++k)
      if (!empty[k]) {
        s.apart = k;
        s.apart_ratio = eb[k] / ea[k];
        s.apart_share = ea[k] / total_a;
      }
    for (int k = 1; k <= r.k_max; ++k)
      if (empty[k]) {
        s.empty.push_back(k);
        if (total_b > 0) s.b_in_empty = std::max(s.b_in_empty, eb[k] / total_b);
      }
    r.spectra.push_back(s);
  }
  print_spectra(r.spectra, a, b, o.spectrum_tol, r, repeated_note(repeated), out);
}

/// The fields files of A's and of B's solver at a common time, in A's order.
std::vector<std::pair<FieldsAt, FieldsAt>> q_field_pairs(const Side& a, const Side& b, double t_tol) {
  std::map<std::string, std::map<std::string, double>> cache;
  const auto fa = fields_of(a.dir, a.solver, cache);
  const auto fb = fields_of(b.dir, b.solver, cache);
  std::vector<std::pair<FieldsAt, FieldsAt>> fpairs;
  for (const auto& x : fa)
    for (const auto& y : fb)
      if (std::abs(x.t - y.t) <= t_tol) {
        fpairs.emplace_back(x, y);
        break;
      }
  return fpairs;
}

/// Correlation, Jaccard index and the distances of the Q and (Q, R) PDFs of one pair of
/// fields files (InputError when their grids differ).
QMeasures measure_q(const std::pair<FieldsAt, FieldsAt>& f, const Side& a, const Side& b, double q_level) {
  const ScalarField qa = read_scalar_field(f.first.path, a.solver);
  const ScalarField qb = read_scalar_field(f.second.path, b.solver);
  if (qa.grid.n != qb.grid.n)
    throw InputError("different N: " + f.first.path + ":/" + a.solver + "/Q is " + std::to_string(qa.grid.n) +
                     "^3, " + f.second.path + ":/" + b.solver + "/Q is " + std::to_string(qb.grid.n) + "^3");
  QMeasures m{};
  q_measures(qa, qb, q_level, m.correlation, m.jaccard);
  m.q_pdf_distance = total_variation(histogram(qa.v, rms(qa.v), kQBins), histogram(qb.v, rms(qb.v), kQBins));
  m.qr_pdf_distance = total_variation(qr_histogram(f.first.path, a.solver, m.q_w_mean_a),
                                      qr_histogram(f.second.path, b.solver, m.q_w_mean_b));
  return m;
}

void print_q_fields(const std::vector<QResult>& qres, double q_level, bool two_runs, const std::string& note,
                    std::ostream& out) {
  char line[256];
  out << "Q fields: correlation coefficient; Jaccard index of Q > " << num(q_level) << " <Q^2>^1/2\n";
  std::snprintf(line, sizeof line, "%8s %8s %12s %9s  %s\n", "t/T req", "t/T", "correlation", "Jaccard", "files");
  out << line;
  for (const auto& q : qres) {
    std::snprintf(line, sizeof line, "%8.4g %8.4f %12s %9s  ", q.requested, q.t_over_T,
                  num(q.m.correlation, "%.6f").c_str(), num(q.m.jaccard, "%.6f").c_str());
    out << line << (two_runs ? q.file_a + " | " + q.file_b : fs::path(q.file_a).filename().string());
    out << "\n";
  }
  out << "\n";
  out << "Q statistics: distance 1/2 sum |p_A - p_B| of the PDFs of Q/<Q^2>^1/2 and of (Q/<Q_W>, "
         "R/<Q_W>^3/2),\n  R = -det grad u, <Q_W> = <|omega|^2>/4 of each field (0 same PDF, 1 disjoint)\n";
  std::snprintf(line, sizeof line, "%8s %8s %12s %12s %12s %12s\n", "t/T req", "t/T", "Q pdf", "(Q,R) pdf",
                "<Q_W> A", "<Q_W> B");
  out << line;
  for (const auto& q : qres) {
    std::snprintf(line, sizeof line, "%8.4g %8.4f %12s %12s %12s %12s\n", q.requested, q.t_over_T,
                  num(q.m.q_pdf_distance, "%.6f").c_str(), num(q.m.qr_pdf_distance, "%.6f").c_str(),
                  num(q.m.q_w_mean_a, "%.6g").c_str(), num(q.m.q_w_mean_b, "%.6g").c_str());
    out << line;
  }
  out << note << "\n";
}

/// The Q fields nearest each requested t/T that both sides hold at the same time, each pair
/// measured once.
void compare_q_fields(const Side& a, const Side& b, const Options& o, double t_tol, bool two_runs, Report& r,
                      std::ostream& out) {
  if (!same_grid(a, b)) {
    out << "Q fields: not compared: the runs' grids differ (N = " << a.n << " and " << b.n
        << "); correlation, Jaccard index and PDFs are taken point by point on one grid\n\n";
    return;
  }
  const auto fpairs = q_field_pairs(a, b, t_tol);
  if (fpairs.empty()) {
    out << "Q fields: no fields_*.h5 with /" << a.solver << "/Q and /" << b.solver << "/Q at a common time\n\n";
    return;
  }
  std::map<std::size_t, QMeasures> measured;
  std::vector<double> repeated;  // requests whose nearest fields an earlier one took
  for (double want : o.at) {
    std::size_t best = 0;
    for (std::size_t p = 1; p < fpairs.size(); ++p)
      if (std::abs(fpairs[p].first.t / r.T0 - want) < std::abs(fpairs[best].first.t / r.T0 - want)) best = p;
    if (measured.count(best)) {
      repeated.push_back(want);
      continue;
    }
    measured[best] = measure_q(fpairs[best], a, b, o.q_level);
    r.q.push_back({want, fpairs[best].first.t / r.T0, fpairs[best].first.path, fpairs[best].second.path,
                   measured[best]});
  }
  print_q_fields(r.q, o.q_level, two_runs, repeated_note(repeated), out);
}

/// The worst of `v`: the largest (or smallest); NaN when any is NaN or `v` is empty.
double worst(const std::vector<double>& v, bool largest) {
  if (v.empty()) return kNaN;
  double w = v[0];
  for (double x : v) w = (std::isnan(x) || std::isnan(w)) ? kNaN : (largest ? std::max(w, x) : std::min(w, x));
  return w;
}

/// The checks whose flags were given, each on the worst value over the --at times.
std::vector<Check> make_checks(const Options& o, const Report& r) {
  std::vector<Check> checks;
  for (const auto& [s, limit] : o.series_tol)
    checks.push_back({"--" + s + "-tol", limit, r.max_rel.at(s), true, "max |" + s + " B/A - 1|"});
  if (!std::isnan(o.band_tol)) {
    std::vector<double> v;
    for (const auto& s : r.spectra)
      for (const auto& bd : s.bands)
        if (!std::isnan(bd.rel_diff)) v.push_back(bd.rel_diff);  // NaN: a band A holds empty
    checks.push_back({"--band-tol", o.band_tol, worst(v, true), true, "largest band difference of E(k)"});
  }
  if (!std::isnan(o.k_agree_min)) {
    std::vector<double> v;
    for (const auto& s : r.spectra) v.push_back(s.k_agree);
    checks.push_back({"--k-agree-min", o.k_agree_min, worst(v, false), false, "smallest k_agree"});
  }
  // The Q-field checks: the worst over the --at times of one of the QMeasures.
  auto q_check = [&](const char* name, double limit, double QMeasures::*field, bool is_max, const char* note) {
    if (std::isnan(limit)) return;
    std::vector<double> v;
    for (const auto& q : r.q) v.push_back(q.m.*field);
    checks.push_back({name, limit, worst(v, is_max), is_max, note});
  };
  q_check("--q-corr-min", o.q_corr_min, &QMeasures::correlation, false, "smallest Q correlation");
  q_check("--q-jaccard-min", o.q_jaccard_min, &QMeasures::jaccard, false, "smallest Q Jaccard index");
  q_check("--q-pdf-max", o.q_pdf_max, &QMeasures::q_pdf_distance, true, "largest distance of the Q PDFs");
  q_check("--qr-pdf-max", o.qr_pdf_max, &QMeasures::qr_pdf_distance, true, "largest distance of the (Q,R) PDFs");
  return checks;
}

/// One line per check and the verdict; returns the number of failed checks.
int print_checks(const std::vector<Check>& checks, std::ostream& out) {
  int failed = 0;
  for (const auto& c : checks) {
    failed += !c.passed();
    out << "check " << c.name << " " << num(c.limit) << ": " << c.note << " = " << num(c.value)
        << (c.passed() ? "  ok" : std::isnan(c.value) ? "  FAILED (not measured)" : "  FAILED") << "\n";
  }
  if (checks.empty())
    out << "no checks requested (give e.g. --K-tol 0.05 to make the exit status say whether they agree)\n";
  else if (failed)
    out << "compare: " << failed << " of " << checks.size() << " checks failed\n";
  else
    out << "compare: all " << checks.size() << " checks passed\n";
  return failed;
}

std::string json_bins(const Bins& b) {
  return "{\"lo\": " + jnum(b.lo) + ", \"hi\": " + jnum(b.hi) + ", \"n\": " + std::to_string(b.n) + "}";
}

/// The "spectra" array of --json.
std::string json_spectra(const std::vector<SpecResult>& spec) {
  std::ostringstream j;
  for (std::size_t i = 0; i < spec.size(); ++i) {
    j << (i ? "," : "") << "\n    {\"t_over_T_requested\": " << jnum(spec[i].requested)
      << ", \"t_over_T\": " << jnum(spec[i].t_over_T) << ", \"k_agree\": " << spec[i].k_agree
      << ", \"solver_kmax_a\": " << jnum(spec[i].kmax_a) << ", \"solver_kmax_b\": " << jnum(spec[i].kmax_b)
      << ", \"first_shell_beyond_kmax\": "
      << (std::isnan(spec[i].kmax_a) && std::isnan(spec[i].kmax_b)
              ? "null"
              : std::to_string(first_beyond(spec[i].kmax_a, spec[i].kmax_b)))
      << ", \"empty_shells_a\": [";
    for (std::size_t k = 0; k < spec[i].empty.size(); ++k) j << (k ? ", " : "") << spec[i].empty[k];
    j << "], \"b_in_empty_shells\": " << jnum(spec[i].b_in_empty)
      << ", \"shell_apart\": " << (spec[i].apart > 0 ? std::to_string(spec[i].apart) : "null")
      << ", \"ratio_apart\": " << jnum(spec[i].apart_ratio) << ", \"a_share_apart\": " << jnum(spec[i].apart_share)
      << ", \"bands\": [";
    for (std::size_t k = 0; k < spec[i].bands.size(); ++k)
      j << (k ? ", " : "") << "{\"k_lo\": " << spec[i].bands[k].lo << ", \"k_hi\": " << spec[i].bands[k].hi
        << ", \"rel_diff\": " << jnum(spec[i].bands[k].rel_diff) << "}";
    j << "]}";
  }
  return j.str();
}

/// The "q_fields" array of --json.
std::string json_q_fields(const std::vector<QResult>& qres) {
  std::ostringstream j;
  for (std::size_t i = 0; i < qres.size(); ++i)
    j << (i ? "," : "") << "\n    {\"t_over_T_requested\": " << jnum(qres[i].requested)
      << ", \"t_over_T\": " << jnum(qres[i].t_over_T) << ", \"file_a\": " << jstr(qres[i].file_a)
      << ", \"file_b\": " << jstr(qres[i].file_b) << ", \"correlation\": " << jnum(qres[i].m.correlation)
      << ", \"jaccard\": " << jnum(qres[i].m.jaccard) << ", \"q_pdf_distance\": " << jnum(qres[i].m.q_pdf_distance)
      << ", \"qr_pdf_distance\": " << jnum(qres[i].m.qr_pdf_distance)
      << ", \"q_w_mean_a\": " << jnum(qres[i].m.q_w_mean_a) << ", \"q_w_mean_b\": " << jnum(qres[i].m.q_w_mean_b)
      << "}";
  return j.str();
}

/// The "checks" array of --json.
std::string json_checks(const std::vector<Check>& checks) {
  std::ostringstream j;
  for (std::size_t i = 0; i < checks.size(); ++i)
    j << (i ? "," : "") << "\n    {\"name\": " << jstr(checks[i].name) << ", \"limit\": " << jnum(checks[i].limit)
      << ", \"value\": " << jnum(checks[i].value) << ", \"passed\": " << (checks[i].passed() ? "true" : "false")
      << "}";
  return j.str();
}

/// --json FILE: every number of the report.
void write_json(const Options& o, const Side& a, const Side& b, bool two_runs, const Report& r) {
  std::ostringstream j;
  j << "{\n  \"mode\": " << jstr(two_runs ? "runs" : "solvers") << ",\n";
  for (const Side* s : {&a, &b})
    j << "  \"" << (s == &a ? 'a' : 'b') << "\": {\"run\": " << jstr(s->run_path) << ", \"solver\": "
      << jstr(s->solver) << ", \"N\": " << (s->n ? std::to_string(s->n) : "null") << "},\n";
  j << "  \"T0\": " << jnum(r.T0) << ",\n  \"T0_b\": " << jnum(r.T0b) << ",\n";
  j << "  \"series\": [\n    " << r.series_json << "\n  ],\n  \"series_max_rel_diff\": {";
  for (std::size_t i = 0; i < kCompared.size(); ++i)
    j << (i ? ", " : "") << jstr(kCompared[i]) << ": " << jnum(r.max_rel.at(kCompared[i]));
  j << "},\n  \"spectrum_tol\": " << jnum(o.spectrum_tol) << ",\n  \"k_max\": " << r.k_max
    << ",\n  \"solver_kmax_a\": " << jnum(r.kmax_a) << ",\n  \"solver_kmax_b\": " << jnum(r.kmax_b)
    << ",\n  \"spectra\": [" << json_spectra(r.spectra);
  j << "\n  ],\n  \"q_level\": " << jnum(o.q_level) << ",\n  \"q_pdf_bins\": " << json_bins(kQBins)
    << ",\n  \"qr_pdf_bins\": " << json_bins(kQRBins) << ",\n  \"q_fields\": [" << json_q_fields(r.q);
  j << "\n  ],\n  \"checks\": [" << json_checks(r.checks);
  j << "\n  ],\n  \"passed\": " << (r.failed ? "false" : "true") << "\n}\n";
  std::ofstream f(o.json);
  f << j.str();
  if (!f.good()) throw InputError("--json " + o.json + ": cannot be written");
}

}  // namespace

int compare(const std::vector<std::string>& args) {
  const Options o = parse(args);
  const bool two_runs = o.dirs.size() == 2;
  const std::vector<RunData> data = read_runs(o);
  const auto sides = make_sides(o, data);
  const Side& a = sides.first;
  const Side& b = sides.second;
  Report r;
  r.T0 = initial_T(data[0], a.run_path);
  r.T0b = two_runs ? initial_T(data[1], b.run_path) : r.T0;
  const double t_tol = 1e-6 * r.T0;

  std::ostringstream out;
  print_header(a, b, two_runs, r, out);
  compare_series(a, b, t_tol, r, out);
  compare_spectra(a, b, o, t_tol, r, out);
  compare_q_fields(a, b, o, t_tol, two_runs, r, out);
  r.checks = make_checks(o, r);
  r.failed = print_checks(r.checks, out);
  std::cout << out.str() << std::flush;
  if (!o.json.empty()) write_json(o, a, b, two_runs, r);
  return r.failed ? 1 : 0;
}

}  // namespace vh::app
