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
// sizes of the deck's grid, σ > 0, positions in the box, sane t and step counts, magnitudes
// no field of the run's largest speed exceeds: speed_cap), and the run driver checks the
// solvers' times and step counts against each other and run.h5 (run.cpp): a damaged
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

#include "app/config.h"
#include "app/steppers.h"

namespace vh::app {

struct CheckpointHeader {
  std::string path;      ///< the checkpoint file
  std::string dir;       ///< its run folder
  std::string deck;      ///< /deck
  long field_index = 0;  ///< index of the next fields file
  std::vector<std::string> solvers;  ///< the solvers whose state it holds (its groups)
};

/// Writes RUN_DIR/checkpoint.h5, keeping the previous one as checkpoint_prev.h5. Collective
/// over `comm`; every rank throws rank 0's errors.
void write_checkpoint(const std::string& dir, const std::string& deck, long field_index,
                      const std::vector<std::unique_ptr<Stepper>>& solvers, const Comm& comm = Comm());

/// Resolves `where` (a checkpoint file, or a run folder holding checkpoint.h5), checks its seal
/// (on rank 0 of `comm`, for every rank) and reads the header; vh::InputError naming file and
/// dataset for a missing, damaged, unsealed or foreign file. Collective over `comm`.
CheckpointHeader read_checkpoint_header(const std::string& where, const Comm& comm = Comm());

/// The largest speed |u| a state of the run configured by `c` (grid spacing h) can hold at
/// its points: its guards stop a run whose max|u_i| passes max_cfl h / time.dt (time.dt given:
/// the CFL guard) or 1/time.stall_fraction times that of its first step (CFL steps: the stall
/// guard; a new run's first step is the initial field's, max|u_i| = u0_max), |u| ≤ √3 max|u_i|,
/// and the state a guard stops at has grown one step past it: kStepGrowth. A checkpoint's
/// values are checked against it (Stepper::load). Infinite, so no magnitude check, where no
/// guard bounds the speed (time.stall_fraction = 0 with CFL steps).
double speed_cap(const RunConfig& c, double h, double u0_max);

/// How far one step can carry max|u| past the guard that then stops the run, in speed_cap: 10,
/// measured 2 (the vortex stall of tests/app/test_restart.cpp: max|u| 9.1e6 at the stop, 4.7e6
/// allowed); a state beyond it is not one the run wrote.
constexpr double kStepGrowth = 10;

/// Loads every solver's state (its group must exist) from the checkpoint whose seal
/// read_checkpoint_header() checked; on R ranks every rank its part. vh::InputError naming
/// the file and dataset when a state fails its checks, its magnitudes against `speed`
/// (speed_cap).
void load_checkpoint(const CheckpointHeader& h, const std::vector<std::unique_ptr<Stepper>>& solvers,
                     double speed);

/// vh::InputError (one line) when the restart runs a solver whose state the checkpoint does not
/// hold (it may run fewer), or the checkpoint was written at another domain.n than the run's, or,
/// where both run the vortex solver, on another particle lattice (vortex.refine · N points per
/// direction; its /deck says which): the state is not interpolated.
void check_checkpoint_case(const CheckpointHeader& h, const RunConfig& c);

}  // namespace vh::app
