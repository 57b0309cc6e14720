// run.h5: the time series and spectra of one run (docs/design.md, "Files a run writes").
//
//   /deck                      scalar string: the deck after overrides
//   /meta                      group; one string attribute per entry (version, git hash, ...)
//   /<solver>/series/<name>    1-D double, one entry per diagnostic output; names in the
//                              order first appended (the group tracks creation order):
//                              t, step, dt, K, epsilon, L, T, lambda, Re_lambda, S3, extras
//                              (the run driver's: enstrophy, divergence_rel, helicity, kmax,
//                              kmax_eta, the solver's monitors; older files lack some)
//   /<solver>/spectra/k        1-D double, shell wavenumbers 0 … nmax
//   /<solver>/spectra/t        1-D double, output times
//   /<solver>/spectra/E        2-D double [output][shell], E(k) with Σ_k E(k) = K
//
// <solver> is "initial", "spectral" or "vortex"; a solver group exists only when something
// was appended for it, and its spectra group only when a spectrum was. Units are the code's
// (box 2π, time as integrated), not normalised by T or K0.
//
// The file is small, so RunFile keeps everything in memory and rewrites the whole file on
// each write(), atomically (h5::atomic_path): a crash leaves the previous complete file. It
// carries an integrity seal (io/seal.h), which a restart requires and every read checks.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace vh {

/// Standard series names every solver appends, in this order (extras may follow).
extern const std::vector<std::string> kSeriesNames;
/// The solver groups a run file may hold.
extern const std::vector<std::string> kSolverNames;

/// What one solver has recorded.
struct SolverRecord {
  std::vector<std::string> names;                     ///< series names, in column order
  std::map<std::string, std::vector<double>> series;  ///< name → one value per output
  std::vector<double> k;                              ///< shell wavenumbers 0 … nmax
  std::vector<double> spectrum_t;                     ///< time of each spectrum
  std::vector<std::vector<double>> E;                 ///< E[output][shell]

  std::size_t outputs() const { return names.empty() ? 0 : series.at(names[0]).size(); }
  /// Bitwise equality of every value (so a NaN written is a NaN read: round-trip checks).
  bool operator==(const SolverRecord& o) const;
};

/// Everything a run file holds.
struct RunData {
  std::string deck;
  std::map<std::string, std::string> meta;
  std::map<std::string, SolverRecord> solvers;  ///< keyed by solver name

  bool operator==(const RunData& o) const;
};

class RunFile {
 public:
  /// A run file to be written at `path` (nothing is written before write()).
  explicit RunFile(std::string path);
  /// Continues `data` (e.g. RunFile::read() on restart); the caller trims it as needed.
  RunFile(std::string path, RunData data);

  void set_deck(const std::string& deck) { data_.deck = deck; }
  /// Replaces /meta (string attributes).
  void set_meta(const std::map<std::string, std::string>& meta) { data_.meta = meta; }
  void set_meta(const std::string& key, const std::string& value) { data_.meta[key] = value; }

  /// Adds one output row of (name, value) to `solver`'s series. Every row of a solver must
  /// carry the same names in the same order (std::logic_error otherwise, also for an unknown
  /// solver, an empty row or a repeated name).
  void append_series(const std::string& solver,
                     const std::vector<std::pair<std::string, double>>& row);
  /// Adds the spectrum E[n], n = 0 … nmax (shells of width 1 centred on n), at time t. The
  /// first spectrum fixes k = 0 … nmax; later ones must have the same length (logic_error).
  void append_spectrum(const std::string& solver, double t, const std::vector<double>& E);

  /// Rewrites the whole file atomically. Throws vh::LibraryError on I/O failure, leaving any
  /// previous file untouched.
  void write() const;

  const std::string& path() const { return path_; }
  const RunData& data() const { return data_; }

  /// Reads a run file back. Throws vh::InputError naming the file and dataset when it is
  /// missing, not HDF5, damaged (its seal does not match; with `require_seal` also when it has
  /// none), or malformed (missing /deck, series of unequal length, spectra whose t, k and E do
  /// not match). Unknown top-level groups are ignored.
  static RunData read(const std::string& path, bool require_seal = false);

 private:
  std::string path_;
  RunData data_;
};

/// Whether `d`, read from `path`, can continue `solver` from its checkpoint time `t`: its
/// record exists with every standard series, finite times in non-decreasing order, and at
/// least one output at or before t. vh::InputError naming the file and dataset otherwise.
void check_restart_record(const RunData& d, const std::string& path, const std::string& solver, double t);

}  // namespace vh
