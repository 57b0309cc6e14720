// The run's configuration, built from the parsed deck and checked in full before anything
// is written: every bad value is a vh::InputError naming its key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/initial_field.h"
#include "core/options.h"
#include "spectral/solver.h"
#include "vortex/solver.h"

namespace vh::app {

/// Whether case.solver `solver` runs the spectral solver (spectral or both), the vortex solver
/// (vortex or both).
inline bool runs_spectral(const std::string& solver) { return solver == "spectral" || solver == "both"; }
inline bool runs_vortex(const std::string& solver) { return solver == "vortex" || solver == "both"; }

struct RunConfig {
  std::string deck_path;
  Options options;            ///< the deck after overrides, with defaults filled in
  std::string name;           ///< case.name
  std::string solver;         ///< case.solver: initial | spectral | vortex | both
  int n = 32;                 ///< domain.n
  InitialFieldSpec flow;      ///< flow.* and case.seed
  double t_end_over_T = 1;    ///< time.t_end_over_T (used when t_end is NaN)
  double t_end = 0;           ///< time.t_end, NaN when given in T
  double cfl = 0.5;           ///< time.cfl (used when dt is NaN)
  double lcfl = 0.2;          ///< time.lcfl: with cfl, dt ≤ lcfl / max|∂u_i/∂x_j| too (vortex; 0: off)
  double dt = 0;              ///< time.dt, NaN when from the CFL number
  double output_over_T = 0.1; ///< time.output_interval_over_T (used when output_interval is NaN)
  double output_interval = 0; ///< time.output_interval, NaN when given in T
  std::string out_dir;        ///< output.dir (runs/<name> by default)
  std::vector<double> fields_at;  ///< output.fields_at, in t/T
  bool overwrite = false;     ///< output.overwrite
  long checkpoint_every = 0;  ///< output.checkpoint_every: steps between checkpoints (0: off)
  double checkpoint_minutes = 0;  ///< output.checkpoint_minutes: wall minutes between them (0: off)
  double max_cfl = 1.0;       ///< time.max_cfl: the run stops (exit 3) above this CFL number
  double stall_fraction = 1e-6;   ///< time.stall_fraction: the run stops (exit 3) when dt < this × the first dt
  double max_energy_rise = 0.01;  ///< time.max_energy_rise: the run stops (exit 3) when K > (1 + this) min K
  std::string device;         ///< device: cpu | gpu | auto
  int ranks = 1;              ///< ranks the run is spread over (not a deck key: mpirun -np)
  std::string comm;           ///< parallel.comm: auto | mpi | nccl (GPU runs on R > 1 ranks)
  bool share_gpus = false;    ///< parallel.share_gpus: ranks may share a GPU
  spectral::Params spectral;  ///< spectral.* (ν filled in once the initial field is known)
  vortex::Params vortex;      ///< vortex.* and fmm.* (likewise)
};

/// Builds and validates the configuration (throws vh::InputError).
RunConfig make_config(const std::string& deck_path, const Options& o);

}  // namespace vh::app
