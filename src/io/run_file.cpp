#include "io/run_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>

#include "base/error.h"
#include "io/h5.h"

namespace vh {

const std::vector<std::string> kSeriesNames = {"t", "step", "dt", "K", "epsilon", "L",
                                               "T", "lambda", "Re_lambda", "S3"};
const std::vector<std::string> kSolverNames = {"initial", "spectral", "vortex"};

namespace {

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

void check_solver(const std::string& solver) {
  if (std::find(kSolverNames.begin(), kSolverNames.end(), solver) == kSolverNames.end())
    throw std::logic_error("RunFile: unknown solver '" + solver +
                           "' (initial, spectral or vortex)");
}

}  // namespace

bool SolverRecord::operator==(const SolverRecord& o) const {
  if (names != o.names || series.size() != o.series.size() || !same_bits(k, o.k) ||
      !same_bits(spectrum_t, o.spectrum_t) || E.size() != o.E.size())
    return false;
  for (const auto& [name, v] : series) {
    auto it = o.series.find(name);
    if (it == o.series.end() || !same_bits(v, it->second)) return false;
  }
  for (std::size_t i = 0; i < E.size(); ++i)
    if (!same_bits(E[i], o.E[i])) return false;
  return true;
}

bool RunData::operator==(const RunData& o) const {
  return deck == o.deck && meta == o.meta && solvers == o.solvers;
}

RunFile::RunFile(std::string path) : path_(std::move(path)) {}
RunFile::RunFile(std::string path, RunData data) : path_(std::move(path)), data_(std::move(data)) {}

void RunFile::append_series(const std::string& solver,
                            const std::vector<std::pair<std::string, double>>& row) {
  check_solver(solver);
  if (row.empty()) throw std::logic_error("RunFile: empty series row for " + solver);
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& [name, v] : row) {
    if (name.empty() || name.find('/') != std::string::npos || !seen.insert(name).second)
      throw std::logic_error("RunFile: series name '" + name + "' empty, with '/' or repeated");
    names.push_back(name);
  }
  SolverRecord& r = data_.solvers[solver];
  if (r.names.empty()) {
    r.names = names;
  } else if (r.names != names) {
    // Every column must keep one entry per output, or the series stop lining up in time.
    throw std::logic_error("RunFile: series row for " + solver +
                           " has other names than the earlier rows");
  }
  for (const auto& [name, v] : row) r.series[name].push_back(v);
}

void RunFile::append_spectrum(const std::string& solver, double t, const std::vector<double>& E) {
  check_solver(solver);
  if (E.empty()) throw std::logic_error("RunFile: empty spectrum for " + solver);
  SolverRecord& r = data_.solvers[solver];
  if (r.E.empty()) {
    r.k.resize(E.size());
    for (std::size_t n = 0; n < E.size(); ++n) r.k[n] = double(n);
  } else if (E.size() != r.k.size()) {
    throw std::logic_error("RunFile: spectrum of " + std::to_string(E.size()) + " shells for " +
                           solver + ", earlier ones had " + std::to_string(r.k.size()));
  }
  r.spectrum_t.push_back(t);
  r.E.push_back(E);
}

void RunFile::write() const {
  h5::atomic_path(path_, [&](const std::string& tmp) {
    h5::Handle f = h5::create_file(tmp, /*sealed=*/true);
    h5::write_string(f, "/deck", data_.deck);
    h5::Handle meta = h5::create_group(f, "/meta");
    for (const auto& [key, value] : data_.meta) h5::write_attribute(meta, key, value);
    for (const auto& [solver, r] : data_.solvers) {
      if (!r.names.empty()) {
        // Creation order kept so readers list t, step, dt, ... as appended, not sorted.
        h5::Handle series = h5::create_group(f, "/" + solver + "/series", /*track_order=*/true);
        for (const auto& name : r.names) h5::write_doubles(series, name, r.series.at(name));
      }
      if (!r.E.empty()) {
        const std::string s = "/" + solver + "/spectra/";
        h5::write_doubles(f, s + "k", r.k);
        h5::write_doubles(f, s + "t", r.spectrum_t);
        std::vector<double> flat;
        flat.reserve(r.E.size() * r.k.size());
        for (const auto& row : r.E) flat.insert(flat.end(), row.begin(), row.end());
        h5::write_doubles_2d(f, s + "E", flat, r.E.size(), r.k.size());
      }
    }
    h5::close_file(f, /*seal=*/true);
  });
}

RunData RunFile::read(const std::string& path, bool require_seal) {
  h5::Handle f = h5::open_file(path, require_seal ? h5::Seal::required : h5::Seal::if_present);
  RunData d;
  d.deck = h5::read_string(f, "/deck");
  d.meta = h5::read_string_attributes(h5::open_group(f, "/meta"));
  const std::vector<std::string> top = h5::children(f, "/");
  for (const auto& solver : kSolverNames) {
    if (std::find(top.begin(), top.end(), solver) == top.end()) continue;
    SolverRecord r;
    const std::string series = "/" + solver + "/series";
    if (h5::exists(f, series)) {
      r.names = h5::children(f, series);
      for (const auto& name : r.names) {
        const std::string p = series + "/" + name;
        h5::Shape s;
        r.series[name] = h5::read_doubles(f, p, &s);
        if (s.size() != 1) throw InputError(h5::where(f, p) + ": expected a 1-D series");
        if (r.series[name].size() != r.series[r.names[0]].size())
          throw InputError(h5::where(f, p) + ": " + std::to_string(s[0]) + " entries but " +
                           series + "/" + r.names[0] + " has " +
                           std::to_string(r.series[r.names[0]].size()));
      }
    }
    const std::string spectra = "/" + solver + "/spectra";
    if (h5::exists(f, spectra)) {
      h5::Shape sk, st;
      r.k = h5::read_doubles(f, spectra + "/k", &sk);
      r.spectrum_t = h5::read_doubles(f, spectra + "/t", &st);
      if (sk.size() != 1) throw InputError(h5::where(f, spectra + "/k") + ": expected 1-D");
      if (st.size() != 1) throw InputError(h5::where(f, spectra + "/t") + ": expected 1-D");
      // E must be [len(t)][len(k)]: read_doubles names the file and dataset when it is not.
      const std::vector<double> flat =
          h5::read_doubles(f, spectra + "/E", h5::Shape{st[0], sk[0]});
      r.E.resize(st[0]);
      for (std::size_t i = 0; i < st[0]; ++i)
        r.E[i].assign(flat.begin() + std::ptrdiff_t(i * sk[0]),
                      flat.begin() + std::ptrdiff_t((i + 1) * sk[0]));
    }
    d.solvers[solver] = std::move(r);
  }
  return d;
}

void check_restart_record(const RunData& d, const std::string& path, const std::string& solver, double t) {
  const std::string group = path + ":/" + solver;
  const auto it = d.solvers.find(solver);
  if (it == d.solvers.end())
    throw InputError(group + ": missing (the checkpoint holds this solver's state, the run file no record of it)");
  const SolverRecord& r = it->second;
  for (const auto& name : kSeriesNames)
    if (!r.series.count(name)) throw InputError(group + "/series/" + name + ": dataset missing");
  const std::vector<double>& ts = r.series.at("t");
  std::size_t upto = 0;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (!std::isfinite(ts[i]) || (i > 0 && ts[i] < ts[i - 1]))
      throw InputError(group + "/series/t: entry " + std::to_string(i) + " is " + std::to_string(ts[i]) +
                       " (allowed: finite, not below the one before)");
    if (ts[i] <= t * (1 + 1e-12)) ++upto;
  }
  if (upto == 0)
    throw InputError(group + "/series/t: no output at or before the checkpoint's t = " + std::to_string(t) +
                     " (run file and checkpoint are not of one run)");
}

}  // namespace vh
