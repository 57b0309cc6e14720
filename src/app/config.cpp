#include "app/config.h"

#include <cmath>

#include "app/deck.h"
#include "base/error.h"

namespace vh::app {
namespace {

/// Two keys that say the same thing in different units: at most one may be set explicitly.
void at_most_one(const Options& o, const std::string& a, const std::string& b) {
  if (o.origin.count(a) && o.has(a) && o.origin.count(b) && o.has(b))
    throw InputError(o.where(a) + " and " + o.where(b) + " are both given (allowed: one of them)");
}

void positive(const Options& o, const std::string& key, double v) {
  if (!(v > 0)) throw InputError(o.where(key) + " is out of range (allowed: > 0)");
}

/// flow.*: the initial field's spectrum, scale and viscosity (validate() checks the combinations).
InitialFieldSpec flow_config(const Options& o, long seed) {
  InitialFieldSpec flow;
  flow.shape = parse_spectrum_shape(o.choice("flow.spectrum", {"k4exp", "pope", "taylor-green", "abc"}),
                                    "flow.spectrum");
  flow.seed = std::uint64_t(seed);
  flow.k_p = o.real("flow.k_p");
  positive(o, "flow.k_p", flow.k_p);
  flow.pope_L = o.real("flow.pope_L");
  positive(o, "flow.pope_L", flow.pope_L);
  flow.pope_eta = o.real("flow.pope_eta");
  positive(o, "flow.pope_eta", flow.pope_eta);
  flow.u_prime = o.real("flow.u_prime");
  flow.K0 = o.real("flow.K0");
  flow.Re_lambda = o.real("flow.Re_lambda");
  flow.nu = o.real("flow.nu");
  if (!std::isnan(flow.u_prime)) positive(o, "flow.u_prime", flow.u_prime);
  if (!std::isnan(flow.K0)) positive(o, "flow.K0", flow.K0);
  if (!std::isnan(flow.Re_lambda)) positive(o, "flow.Re_lambda", flow.Re_lambda);
  if (!std::isnan(flow.nu) && flow.nu < 0) throw InputError(o.where("flow.nu") + " is out of range (allowed: >= 0)");
  validate(flow);  // the combinations: Re_lambda xor nu, u_prime or K0
  return flow;
}

/// time.t_end, time.dt and time.output_interval, each in time units or in T.
void time_config(const Options& o, RunConfig& c) {
  for (const auto& [a, b] : exclusive_keys()) at_most_one(o, a, b);
  c.t_end = o.real("time.t_end");
  c.t_end_over_T = o.real("time.t_end_over_T");
  if (!std::isnan(c.t_end)) positive(o, "time.t_end", c.t_end);
  else positive(o, "time.t_end_over_T", c.t_end_over_T);
  c.dt = o.real("time.dt");
  c.cfl = o.real("time.cfl");
  if (!std::isnan(c.dt)) positive(o, "time.dt", c.dt);
  else positive(o, "time.cfl", c.cfl);
  c.lcfl = o.real("time.lcfl");
  if (!(c.lcfl >= 0)) throw InputError(o.where("time.lcfl") + " is out of range (allowed: >= 0; 0 switches it off)");
  c.output_interval = o.real("time.output_interval");
  c.output_over_T = o.real("time.output_interval_over_T");
  if (!std::isnan(c.output_interval)) positive(o, "time.output_interval", c.output_interval);
  else positive(o, "time.output_interval_over_T", c.output_over_T);
}

/// output.*: the run folder, the fields times, the checkpoint schedule.
void output_config(const Options& o, RunConfig& c) {
  c.out_dir = o.text("output.dir");
  if (c.out_dir.empty()) c.out_dir = "runs/" + c.name;
  c.fields_at = o.reals("output.fields_at");
  for (double f : c.fields_at)
    if (f < 0) throw InputError(o.where("output.fields_at") + " holds a negative time (allowed: >= 0)");
  c.overwrite = o.boolean("output.overwrite");
  c.checkpoint_every = o.integer("output.checkpoint_every");
  if (c.checkpoint_every < 0)
    throw InputError(o.where("output.checkpoint_every") + " is out of range (allowed: >= 0)");
  c.checkpoint_minutes = o.real("output.checkpoint_minutes");
  if (!(c.checkpoint_minutes >= 0))
    throw InputError(o.where("output.checkpoint_minutes") + " is out of range (allowed: >= 0)");
}

/// The guards that stop a run (exit 3): time.max_cfl, time.stall_fraction, time.max_energy_rise.
void guard_config(const Options& o, RunConfig& c) {
  c.max_cfl = o.real("time.max_cfl");
  positive(o, "time.max_cfl", c.max_cfl);
  c.stall_fraction = o.real("time.stall_fraction");
  if (!(c.stall_fraction >= 0 && c.stall_fraction < 1))
    throw InputError(o.where("time.stall_fraction") + " is out of range (allowed: 0 <= fraction < 1; 0: off)");
  c.max_energy_rise = o.real("time.max_energy_rise");
  positive(o, "time.max_energy_rise", c.max_energy_rise);
}

/// spectral.*, vortex.* and fmm.*, with the grid sizes each solver can take.
void solver_config(const Options& o, RunConfig& c) {
  c.spectral = spectral::params_from(o, 0.0);
  if (runs_spectral(c.solver) && c.spectral.dealias == spectral::Dealias::three_halves &&
      c.n % 4 != 0)
    throw InputError(o.where("domain.n") + " does not suit spectral.dealias = 3/2 (allowed: n divisible by 4)");
  c.vortex = vortex::params_from(o, 0.0);
  if (runs_vortex(c.solver)) {
    try {
      vortex::lattice_points_per_direction(c.vortex.refine, c.n);
    } catch (const InputError& e) {
      throw InputError(o.where("vortex.refine") + ": " + e.what());
    }
  }
}

}  // namespace

RunConfig make_config(const std::string& deck_path, const Options& o) {
  RunConfig c;
  c.deck_path = deck_path;
  c.options = o;
  c.device = o.choice("device", {"cpu", "gpu", "auto"});
  c.comm = o.choice("parallel.comm", {"auto", "mpi", "nccl"});
  c.share_gpus = o.boolean("parallel.share_gpus");
  c.name = o.text("case.name");
  if (c.name.empty()) throw InputError(o.where("case.name") + " is empty (allowed: a name)");
  c.solver = o.choice("case.solver", {"initial", "spectral", "vortex", "both"});
  const long seed = o.integer("case.seed");
  if (seed < 0) throw InputError(o.where("case.seed") + " is out of range (allowed: >= 0)");

  const long n = o.integer("domain.n");
  if (n < 8 || n % 2 != 0 || n > 4096)
    throw InputError(o.where("domain.n") + " is out of range (allowed: even, 8 <= n <= 4096)");
  c.n = int(n);

  c.flow = flow_config(o, seed);
  time_config(o, c);
  output_config(o, c);
  guard_config(o, c);
  solver_config(o, c);
  return c;
}

}  // namespace vh::app
