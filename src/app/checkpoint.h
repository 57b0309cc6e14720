// checkpoint.h5: everything needed to continue a run bit for bit (docs/style.md, "Checkpoints").
//
//   /            attributes format = "vortexhit checkpoint 1", git_hash, precision = "double",
//                field_index (int64: the next fields file)
//   /deck        the deck after overrides (the restart reads it back)
//   /<solver>/   each solver's state (Stepper::save): spectral coefficients, or particles
//                with σ and the AB2 history; time and step count as attributes
//
// Written to a temporary name, fsync'ed and renamed into place; the previous checkpoint
// stays as checkpoint_prev.h5. The series and spectra live in run.h5, which a restart reads
// back and trims to each solver's checkpoint time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/steppers.h"

namespace vh::app {

struct CheckpointHeader {
  std::string path;      ///< the checkpoint file
  std::string dir;       ///< its run folder
  std::string deck;      ///< /deck
  long field_index = 0;  ///< index of the next fields file
};

/// Writes RUN_DIR/checkpoint.h5, keeping the previous one as checkpoint_prev.h5.
void write_checkpoint(const std::string& dir, const std::string& deck, long field_index,
                      const std::vector<std::unique_ptr<Stepper>>& solvers);

/// Resolves `where` (a checkpoint file, or a run folder holding checkpoint.h5) and reads the
/// header; vh::InputError naming file and dataset for a missing, truncated or foreign file.
CheckpointHeader read_checkpoint_header(const std::string& where);

/// Loads every solver's state (its group must exist).
void load_checkpoint(const CheckpointHeader& h, const std::vector<std::unique_ptr<Stepper>>& solvers);

}  // namespace vh::app
