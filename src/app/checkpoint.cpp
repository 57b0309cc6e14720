#include "app/checkpoint.h"

#include <chrono>
#include <filesystem>

#include "core/error.h"
#include "core/h5.h"

namespace fs = std::filesystem;

namespace vh::app {
namespace {
// 2: sealed (core/seal.h), and the state is checked on load.
const char* kFormat = "vortexhit checkpoint 2";
}

void write_checkpoint(const std::string& dir, const std::string& deck, long field_index,
                      const std::vector<std::unique_ptr<Stepper>>& solvers) {
  const fs::path path = fs::path(dir) / "checkpoint.h5", prev = fs::path(dir) / "checkpoint_prev.h5";
  std::error_code ec;
  // Keep the previous checkpoint under its own name (a hard link: no copy, and the rename
  // below replaces checkpoint.h5 atomically; where links are not allowed, a copy written as
  // atomically, so a full disk cannot leave half a checkpoint_prev.h5).
  if (fs::exists(path, ec)) {
    fs::remove(prev, ec);
    fs::create_hard_link(path, prev, ec);
    if (ec)
      h5::atomic_path(prev.string(), [&](const std::string& tmp) { fs::copy_file(path, tmp); });
  }
  h5::atomic_path(path.string(), [&](const std::string& tmp) {
    h5::Handle f = h5::create_file(tmp, /*sealed=*/true);
    h5::write_attribute(f, "format", std::string(kFormat));
    h5::write_attribute(f, "git_hash", std::string(VH_GIT_HASH));
    h5::write_attribute(f, "precision", std::string("double"));
    h5::write_attribute(f, "field_index", std::int64_t(field_index));
    h5::write_string(f, "deck", deck);
    for (const auto& st : solvers) {
      h5::Handle g = h5::create_group(f, st->name());
      st->save(g);
    }
    h5::close_file(f, /*seal=*/true);
  });
}

CheckpointHeader read_checkpoint_header(const std::string& where) {
  CheckpointHeader h;
  std::error_code ec;
  h.path = fs::is_directory(where, ec) ? (fs::path(where) / "checkpoint.h5").string() : where;
  h.dir = fs::path(h.path).parent_path().string();
  if (h.dir.empty()) h.dir = ".";
  if (!fs::is_regular_file(h.path, ec)) throw InputError(h.path + ": no checkpoint file there (--restart)");
  h5::Handle f = h5::open_file(h.path, h5::Seal::required);
  if (!h5::has_attribute(f, "format") || h5::read_string_attribute(f, "format") != kFormat)
    throw InputError(h.path + ":/ is not a vortexhit checkpoint (attribute format is not '" +
                     std::string(kFormat) + "')");
  h.deck = h5::read_string(f, "deck");
  h.field_index = long(h5::read_int64_attribute(f, "field_index"));
  // The next fields file's index: a restart removes the fields files from it on.
  if (h.field_index < 0 || h.field_index > 9999999)
    throw InputError(h.path + ":/ attribute field_index = " + std::to_string(h.field_index) +
                     " is out of range (0 … 9999999)");
  return h;
}

void load_checkpoint(const CheckpointHeader& h, const std::vector<std::unique_ptr<Stepper>>& solvers) {
  h5::Handle f = h5::open_file(h.path, h5::Seal::required);
  for (const auto& st : solvers) {
    h5::Handle g = h5::open_group(f, st->name());
    st->load(g);
  }
}

}  // namespace vh::app
