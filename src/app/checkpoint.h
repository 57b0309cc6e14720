// checkpoint.h5: everything needed to continue a run bit for bit (docs/style.md, "Checkpoints").
//
//   /            attributes format = "vortexhit checkpoint 2", git_hash, precision = "double",
//                field_index (int64: the next fields file)
//   /deck        the deck after overrides (the restart reads it back)
//   /<solver>/   each solver's state (Stepper::save): spectral coefficients, or particles
//                with σ and the AB2 history; time and step count as attributes
//
// Written to a temporary name, sealed (io/seal.h: a hash of every byte), fsync'ed and
// renamed into place; the previous checkpoint stays as checkpoint_prev.h5. A restart checks
// the seal before HDF5 reads anything, then each solver checks the state it loads (finite,
// sizes of the deck's grid, σ > 0, positions in the box, sane t and step counts): a damaged
// or foreign file is bad input (exit 2) naming the file and, past the seal, the dataset. The
// series and spectra live in run.h5 (sealed too), which a restart reads back and trims to
// each solver's checkpoint time. A checkpoint that cannot be written is a vh::WriteError on
// every rank; the previous one stays.
//
// R ranks: rank 0 writes the file, the spectral state arriving plane by plane from the
// ranks (global arrays, so any rank count restarts from it), and seals it; on restart rank 0
// checks the seal, then every rank reads the header and its own part of the state.
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

/// Writes RUN_DIR/checkpoint.h5, keeping the previous one as checkpoint_prev.h5. Collective
/// over `comm`; every rank throws rank 0's errors.
void write_checkpoint(const std::string& dir, const std::string& deck, long field_index,
                      const std::vector<std::unique_ptr<Stepper>>& solvers, const Comm& comm = Comm());

/// Resolves `where` (a checkpoint file, or a run folder holding checkpoint.h5), checks its seal
/// (on rank 0 of `comm`, for every rank) and reads the header; vh::InputError naming file and
/// dataset for a missing, damaged, unsealed or foreign file. Collective over `comm`.
CheckpointHeader read_checkpoint_header(const std::string& where, const Comm& comm = Comm());

/// Loads every solver's state (its group must exist) from the checkpoint whose seal
/// read_checkpoint_header() checked; on R ranks every rank its part. vh::InputError naming
/// the file and dataset when a state fails its checks.
void load_checkpoint(const CheckpointHeader& h, const std::vector<std::unique_ptr<Stepper>>& solvers);

/// vh::InputError (one line) when the checkpoint was written at another domain.n than `n`
/// (its /deck says which): the state is not interpolated.
void check_checkpoint_grid(const CheckpointHeader& h, int n);

}  // namespace vh::app
