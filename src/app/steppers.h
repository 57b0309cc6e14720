// The two solvers behind one face for the run driver: advance, a stable time step, and the
// velocity on the grid (the only thing the diagnostics see).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/comm.h"
#include "core/device.h"
#include "core/diagnostics.h"
#include "core/grid.h"
#include "core/slab.h"
#include "spectral/solver.h"
#include "vortex/solver.h"

namespace vh::app {

class Stepper {
 public:
  virtual ~Stepper() = default;
  virtual std::string name() const = 0;
  /// Starts from the velocity coefficients u (this rank's slab) at time t.
  virtual void start(const SpectralSlab& u, double t) = 0;
  virtual void step(double dt) = 0;
  /// max |u_i| at the solver's points, for dt = cfl h / max_velocity.
  virtual double max_velocity() = 0;
  /// max |∂u_i/∂x_j| at the solver's points, for dt ≤ lcfl / max_gradient (0: no such limit,
  /// as for the spectral solver, whose RK4 is not held back by it).
  virtual double max_gradient() { return 0; }
  virtual double time() const = 0;
  virtual long steps() const = 0;
  /// Velocity on the grid as coefficients (grid.h normalisation; this rank's slab).
  virtual void velocity(SpectralSlab& u) = 0;
  /// The statistics and E_n of the current velocity computed where the state lives, when the
  /// solver can (spectral on the GPU in fp64): true, and nothing is copied to the host.
  virtual bool statistics_in_place(double /*nu*/, Statistics& /*s*/, std::vector<double>& /*E*/) { return false; }
  /// The largest wavenumber of the velocity on the grid (spectral::resolved_kmax,
  /// vortex::resolved_kmax): the k_max of k_max η.
  virtual double kmax() const = 0;
  /// What raises kmax(), for the warning when k_max η falls below 1 ("raise domain.n ...").
  virtual std::string resolution_advice() const = 0;
  /// Solver-specific monitors appended to the series at each output (fixed names).
  virtual std::vector<std::pair<std::string, double>> monitors() { return {}; }
  /// A line for the log at each output (empty: none).
  virtual std::string log_line() { return ""; }
  /// What happened during the last step that the log should say (empty: nothing).
  virtual std::string event() { return ""; }
  /// Writes the whole state into the HDF5 group `group` (checkpoints), and reads it back;
  /// load() throws vh::InputError naming the dataset when it is missing, malformed or holds
  /// values larger than a field whose speed stays below `speed` can hold (checkpoint.h,
  /// speed_cap; infinite: no such check). On
  /// R ranks load() runs on every rank (each reads its part of the global arrays) and the
  /// collective save() below writes: the group exists on rank 0 (-1 elsewhere), whose
  /// errors go to `err`. Its default is save(group) on rank 0: one-rank solvers.
  virtual void save(std::int64_t group) = 0;
  virtual void load(std::int64_t group, double speed) = 0;
  virtual void save(std::int64_t group, RootErrors& err, const Comm& comm) { err.run(comm, [&] { save(group); }); }
};

/// The spectral solver on this rank's slab (one rank: Slab::whole_grid).
std::unique_ptr<Stepper> make_spectral(const spectral::Params& p, const Slab& s, Backend b);
/// The vortex solver (vortex::make_solver) on this rank's slab (one rank: Slab::whole_grid): on
/// the GPU back end with reinit_from = points its state lives on the GPU (vortex/solver_gpu.h);
/// with reinit_from = blobs its FMM and blob sums run there while the particles stay on the
/// host. On R > 1 ranks the CPU solver with the particles split by lattice z-slabs.
std::unique_ptr<Stepper> make_vortex(vortex::Params p, const Slab& s, Backend b);

}  // namespace vh::app
