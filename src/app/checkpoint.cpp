#include "app/checkpoint.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "app/deck.h"
#include "base/error.h"
#include "io/h5.h"
#include "vortex/solver.h"

namespace fs = std::filesystem;

namespace vh::app {
namespace {
// 2: sealed (io/seal.h), and the state is checked on load.
const char* kFormat = "vortexhit checkpoint 2";
}

void write_checkpoint(const std::string& dir, const std::string& deck, long field_index,
                      const std::vector<std::unique_ptr<Stepper>>& solvers, const Comm& comm) {
  const fs::path path = fs::path(dir) / "checkpoint.h5", prev = fs::path(dir) / "checkpoint_prev.h5";
  RootErrors err;
  auto write = [&](const std::string& tmp) {  // every rank: the solvers' saves are collective
    h5::Handle f;
    err.run(comm, [&] {
      f = h5::create_file(tmp, /*sealed=*/true);
      h5::write_attribute(f, "format", std::string(kFormat));
      h5::write_attribute(f, "git_hash", std::string(VH_GIT_HASH));
      h5::write_attribute(f, "precision", std::string("double"));
      h5::write_attribute(f, "field_index", std::int64_t(field_index));
      h5::write_string(f, "deck", deck);
    });
    for (const auto& st : solvers) {
      h5::Handle g;
      err.run(comm, [&] { g = h5::create_group(f, st->name()); });
      st->save(g, err, comm);
    }
    err.run(comm, [&] { h5::close_file(f, /*seal=*/true); });
    // err.run skips its work once an error was caught: abandon the file here, so that
    // atomic_path removes it instead of putting it under the final name.
    if (comm.root() && err.failed()) throw std::runtime_error("checkpoint abandoned");
  };
  if (comm.root()) {
    err.run(comm, [&] {
      std::error_code ec;
      // Keep the previous checkpoint under its own name (a hard link: no copy, and the rename
      // below replaces checkpoint.h5 atomically; where links are not allowed, a copy written
      // as atomically, so a full disk cannot leave half a checkpoint_prev.h5).
      if (fs::exists(path, ec)) {
        fs::remove(prev, ec);
        fs::create_hard_link(path, prev, ec);
        if (ec) h5::atomic_path(prev.string(), [&](const std::string& tmp) { fs::copy_file(path, tmp); });
      }
      h5::atomic_path(path.string(), write);
    });
  } else {
    write("");
  }
  // A failure on rank 0 (a full disk, a file-size limit: caught inside `write` as it
  // happened) reaches every rank as what it is, a checkpoint that could not be written.
  try {
    err.rethrow(comm);
  } catch (const SharedError& e) {
    throw WriteError(path.string(), h5::write_failure(e));
  }
}

CheckpointHeader read_checkpoint_header(const std::string& where, const Comm& comm) {
  CheckpointHeader h;
  std::error_code ec;
  h.path = fs::is_directory(where, ec) ? (fs::path(where) / "checkpoint.h5").string() : where;
  h.dir = fs::path(h.path).parent_path().string();
  if (h.dir.empty()) h.dir = ".";
  if (!fs::is_regular_file(h.path, ec)) throw InputError(h.path + ": no checkpoint file there (--restart)");
  // The seal (a pass over the whole file) once, on rank 0; its verdict reaches every rank.
  RootErrors err;
  err.run(comm, [&] { h5::check_file_seal(h.path, h5::Seal::required); });
  err.rethrow(comm);
  h5::Handle f = h5::open_file(h.path, h5::Seal::checked);
  if (!h5::has_attribute(f, "format") || h5::read_string_attribute(f, "format") != kFormat)
    throw InputError(h.path + ":/ is not a vortexhit checkpoint (attribute format is not '" +
                     std::string(kFormat) + "')");
  h.deck = h5::read_string(f, "deck");
  for (const char* name : {"spectral", "vortex"})
    if (h5::exists(f, name)) h.solvers.push_back(name);
  h.field_index = long(h5::read_int64_attribute(f, "field_index"));
  // The next fields file's index: a restart removes the fields files from it on.
  if (h.field_index < 0 || h.field_index > 9999999)
    throw InputError(h.path + ":/ attribute field_index = " + std::to_string(h.field_index) +
                     " is out of range (0 … 9999999)");
  return h;
}

void check_checkpoint_case(const CheckpointHeader& h, const RunConfig& c) {
  for (const char* name : {"spectral", "vortex"}) {
    const bool asked = name == std::string("vortex") ? runs_vortex(c.solver) : runs_spectral(c.solver);
    if (asked && std::find(h.solvers.begin(), h.solvers.end(), name) == h.solvers.end()) {
      std::string held;
      for (const auto& s : h.solvers) held += (held.empty() ? "" : " and ") + s;
      throw InputError(h.path + ": holds the state of the " + (held.empty() ? "initial field only" : held + " solver") +
                       ", not the " + name + " solver's that case.solver = " + c.solver +
                       " asks for (allowed: the checkpoint's solvers or fewer)");
    }
  }
  const Options deck = parse_deck(h.deck, h.path + ":/deck", {});
  const long written = deck.integer("domain.n");
  if (written != c.n)
    throw InputError(h.path + ": written at domain.n = " + std::to_string(written) +
                     ", the restart asks for domain.n = " +
                     std::to_string(c.n) + " (allowed: the checkpoint's N; the state is not interpolated)");
  // The particle lattice: refine · N points per direction, the vortex state's size.
  if (runs_vortex(c.solver) && runs_vortex(deck.text("case.solver"))) {
    const int m = vortex::lattice_points_per_direction(deck.real("vortex.refine"), c.n);
    const int want = vortex::lattice_points_per_direction(c.vortex.refine, c.n);
    if (m != want) {
      char refine_text[32];
      std::snprintf(refine_text, sizeof refine_text, "%g", c.vortex.refine);
      throw InputError(h.path + ": written at vortex.refine = " + deck.text("vortex.refine") + " (" +
                       std::to_string(m) + "³ particles), the restart asks for vortex.refine = " +
                       refine_text + " (" + std::to_string(want) +
                       "³; allowed: the checkpoint's particle lattice, the state is not interpolated)");
    }
  }
}

double speed_cap(const RunConfig& c, double h, double u0_max) {
  double component;  // the largest max|u_i| the guards let through
  if (!std::isnan(c.dt))
    component = c.max_cfl * h / c.dt;
  else if (c.stall_fraction > 0)
    component = u0_max / c.stall_fraction;
  else
    return std::numeric_limits<double>::infinity();
  return kStepGrowth * std::sqrt(3.0) * component;
}

void load_checkpoint(const CheckpointHeader& h, const std::vector<std::unique_ptr<Stepper>>& solvers,
                     double speed) {
  h5::Handle f = h5::open_file(h.path, h5::Seal::checked);  // read_checkpoint_header checked it
  for (const auto& st : solvers) {
    h5::Handle g = h5::open_group(f, st->name());
    st->load(g, speed);
  }
}

}  // namespace vh::app
