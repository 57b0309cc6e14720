// `vortexhit run`: from the deck to the run folder.
#pragma once

#include <string>
#include <vector>

namespace vh::app {

/// Runs the deck at `deck_path` with `--key=value` overrides; `quiet` silences all but
/// errors. With `restart` (a checkpoint file or its run folder) the run continues from the
/// checkpoint, with its stored deck and the overrides (e.g. a later time.t_end). Returns the
/// exit status (0); throws vh::InputError (2) or vh::RunStopped (3; also when a file cannot be
/// written: disk full, file-size limit, run folder gone, with what the folder still holds).
/// Before anything is written it checks that the run's estimated memory fits
/// (memory_estimate.h; vh::InputError if not).
/// With `dry_run` it checks the deck, the output folder and the memory, prints the estimate and
/// the sizes of a fields file and a checkpoint to stdout, and returns 0 writing nothing.
int run(const std::string& deck_path, const std::vector<std::string>& overrides, bool quiet,
        const std::string& restart, const std::vector<std::string>& argv, bool dry_run = false);

}  // namespace vh::app
