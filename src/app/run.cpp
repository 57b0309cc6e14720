// The run driver: deck → configuration (checked in full before anything is written) → the
// initial field and its statistics → the solvers started from it (or restored from a
// checkpoint) → for each stop time (outputs, field times, the end) each solver advances to it
// and records its diagnostics; guards stop the run with a checkpoint; the end writes a
// checkpoint, summary.txt and a table of time per phase.
//
// On R ranks (mpirun; the spectral solver only) every rank runs this with its slab of the
// field (core/slab.h): the initial field, the solver and the diagnostics are collective,
// the guards decide on values every rank shares, and rank 0 alone prints and writes files
// (run.h5, summary.txt, log.txt; the fields files and checkpoints with the other ranks'
// planes sent to it), its errors passed to every rank (RootErrors).
#include "app/run.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "app/checkpoint.h"
#include "app/config.h"
#include "app/deck.h"
#include "app/memory_estimate.h"
#include "app/steppers.h"
#include "base/comm.h"
#include "base/error.h"
#include "core/device.h"
#include "core/diagnostics.h"
#include "core/fft.h"
#include "core/initial_field.h"
#include "core/slab.h"
#include "io/console.h"
#include "io/fields_file.h"
#include "io/h5.h"
#include "io/run_file.h"

namespace fs = std::filesystem;

namespace vh::app {
namespace {

std::string fmt(double v, int prec = 6) {
  std::ostringstream s;
  s << std::setprecision(prec) << v;
  return s.str();
}

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

/// Refuses a run folder this process cannot write (read-only file system, permissions) before
/// anything is written in it: creates and removes a probe file.
void require_writable(const std::string& dir, const std::string& what) {
  const std::string probe = (fs::path(dir) / (".vortexhit-probe-" + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw InputError(what + " is not writable: " + std::strerror(errno) + " (allowed: a folder this user can write)");
  ::close(fd);
  ::unlink(probe.c_str());
}

/// Refuses an existing run folder unless output.overwrite; creates it otherwise (unless
/// !create: --dry-run). Called only after the whole configuration and the memory have been
/// checked, so bad input never creates anything.
void prepare_output_dir(const RunConfig& c, bool create = true) {
  std::error_code ec;
  if (fs::exists(c.out_dir, ec)) {
    if (!fs::is_directory(c.out_dir, ec))
      throw InputError(c.options.where("output.dir") + " exists and is not a folder");
    if (!c.overwrite)
      throw InputError(c.options.where("output.dir") +
                       " exists (allowed: a new folder, or output.overwrite = true to replace its files)");
  }
  if (!create) return;
  fs::create_directories(c.out_dir, ec);
  if (ec) throw InputError(c.options.where("output.dir") + " cannot be created: " + ec.message());
  require_writable(c.out_dir, c.options.where("output.dir"));
  // An overwritten run must not inherit the old run's fields in its fields.xdmf collection.
  for (const auto& e : fs::directory_iterator(c.out_dir))
    if (e.path().filename().string().rfind("fields", 0) == 0) fs::remove(e.path());
}

/// One diagnostics row in the order of kSeriesNames, plus enstrophy and divergence.
std::vector<std::pair<std::string, double>> series_row(double t, long step, double dt,
                                                       const Statistics& s) {
  return {{"t", t},           {"step", double(step)},  {"dt", dt},
          {"K", s.K},         {"epsilon", s.epsilon},  {"L", s.L},
          {"T", s.T},         {"lambda", s.lambda},    {"Re_lambda", s.Re_lambda},
          {"S3", s.S3},       {"enstrophy", s.enstrophy}, {"divergence_rel", s.divergence_rel},
          {"helicity", s.helicity}};
}

/// Times at which the run stops to output: every output interval, every requested field
/// time and the end, sorted, without near-duplicates.
std::vector<double> stop_times(double t_end, double out_dt, const std::vector<double>& field_t) {
  std::vector<double> t;
  for (long k = 1; k * out_dt < t_end * (1 - 1e-12); ++k) t.push_back(k * out_dt);
  for (double f : field_t)
    if (f > 0 && f < t_end) t.push_back(f);
  t.push_back(t_end);
  std::sort(t.begin(), t.end());
  std::vector<double> out;
  for (double v : t)
    if (out.empty() || v - out.back() > 1e-9 * t_end) out.push_back(v);
  return out;
}

bool near(double a, double b, double scale) { return std::abs(a - b) <= 1e-9 * scale; }

/// Adds the wall time of its scope to a phase's total.
class PhaseTimer {
 public:
  explicit PhaseTimer(double& total) : total_(total), t0_(std::chrono::steady_clock::now()) {}
  ~PhaseTimer() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  double& total_;
  std::chrono::steady_clock::time_point t0_;
};

/// The last output of a solver: what the progress line and the energy balance need.
struct Last {
  double K = 0, epsilon = 0, Re_lambda = 0;
  double K_min = 0;     ///< the smallest K output so far (the energy guard's reference)
  double first_dt = 0;  ///< the first CFL step of this process (the stall guard's reference)
};

/// What most likely makes K grow in a run of `solver` (the energy guard's message).
std::string energy_rise_cause(const std::string& solver) {
  if (solver == "vortex")
    return "likely an instability of the time step (lower time.cfl) or aliasing at the lattice's high "
           "wavenumbers (keep vortex.filter = spherical, filter_fraction <= 2/3)";
  return "likely an instability of the time step (lower time.cfl) or aliasing (spectral.dealias = none?)";
}

volatile std::sig_atomic_t g_signal = 0;
extern "C" void on_signal(int sig) { g_signal = sig; }

/// Drops the outputs after time t from a solver's record (restart).
void trim_after(SolverRecord& r, double t) {
  const auto& ts = r.series.at("t");
  std::size_t keep = 0;
  while (keep < ts.size() && ts[keep] <= t) ++keep;
  for (auto& [name, v] : r.series) v.resize(keep);
  std::size_t keep_s = 0;
  while (keep_s < r.spectrum_t.size() && r.spectrum_t[keep_s] <= t) ++keep_s;
  r.spectrum_t.resize(keep_s);
  r.E.resize(keep_s);
}

/// Removes fields_<i>.* with i >= first (a restart writes them anew).
void remove_fields_from(const std::string& dir, long first) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (f.rfind("fields_", 0) != 0) continue;
    const long i = std::atol(f.c_str() + 7);
    if (i >= first) fs::remove(e.path());
  }
  write_fields_collection(dir);
}

/// Relative L2 difference of two coefficient sets of one rank (Parseval: the same as on the grid).
double relative_l2(const SpectralSlab& a, const SpectralSlab& b) {
  double num = 0, den = 0;
  const int n = a.slab.grid.n;
  for (int d = 0; d < 3; ++d)
    for (std::size_t m = 0; m < a.c[d].size(); ++m) {
      const double w = mode_weight(int(m % (n / 2 + 1)), n);
      num += w * std::norm(a.c[d][m] - b.c[d][m]);
      den += w * std::norm(b.c[d][m]);
    }
  return std::sqrt(num / den);
}

/// One output of a solver into the run file: series (standard names, then its monitors) and
/// spectrum E.
void record(RunFile& rf, Stepper& st, const Statistics& s, double dt, const std::vector<double>& E) {
  auto row = series_row(st.time(), st.steps(), dt, s);
  for (const auto& m : st.monitors()) row.push_back(m);
  rf.append_series(st.name(), row);
  rf.append_spectrum(st.name(), st.time(), E);
}

/// Velocity, vorticity and Q of coefficients `u` on the grid (the rank's planes), for a fields file.
struct GridFields {
  VectorField velocity, vorticity;
  ScalarField q;
  FieldSet set(long step) const { return {&velocity, &vorticity, &q, step}; }
};

GridFields grid_fields(const SpectralSlab& u, SlabFft& fft) {
  GridFields f;
  velocity_on_grid(u, fft, f.velocity);
  vorticity(u, fft, f.vorticity);
  q_criterion(u, fft, f.q);
  return f;
}

void write_field_sets(const std::string& dir, int index, double t, const std::map<std::string, GridFields>& f,
                      const std::vector<std::unique_ptr<Stepper>>& solvers, const Slab& slab) {
  std::map<std::string, FieldSet> sets;
  for (const auto& st : solvers)
    if (f.count(st->name())) sets[st->name()] = f.at(st->name()).set(st->steps());
  write_fields(dir, index, t, sets, slab);
}

/// Rank 0 does `f` (file output); every rank gets its error.
template <class F>
void on_root(const Comm& comm, F&& f) {
  RootErrors err;
  err.run(comm, f);
  err.rethrow(comm);
}

/// "ranks 3: slabs of z-planes 11 11 10 (N = 32), of kept ky 11 10 10 (|ky| <= 15); MPI
/// Open MPI v4.1.4": the decomposition for the banner.
std::string decomposition_line(const Slab& s) {
  std::string z, ky;
  for (int r = 0; r < s.ranks(); ++r) {
    const Slab o = s.of_rank(r);
    z += " " + std::to_string(o.nz);
    ky += " " + std::to_string(o.njy);
  }
  return "ranks " + std::to_string(s.ranks()) + ": slabs of z-planes" + z + " (N = " + std::to_string(s.grid.n) +
         "), of kept ky" + ky + " (|ky| <= " + std::to_string(s.kmax) + "); MPI " + Comm::library();
}

}  // namespace

static int run_case(const std::string& deck_path, const std::vector<std::string>& overrides, bool quiet,
                    const std::string& restart, const std::vector<std::string>& argv, bool dry_run) {
  const auto wall0 = std::chrono::steady_clock::now();
  // Guards: a signal or a STOP file in the run folder ends the run after the current step
  // with a checkpoint (exit 3), as do a non-finite velocity and a CFL number above max_cfl.
  g_signal = 0;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGUSR1, on_signal);  // mpirun passes SIGUSR1 on to the ranks (SIGINT/SIGTERM kill the job)
  // Past a file-size limit (ulimit -f) write(2) then fails with EFBIG, a WriteError like a
  // full disk, instead of the signal killing the process mid-file.
  std::signal(SIGXFSZ, SIG_IGN);
  const Comm world = Comm::world();
  std::optional<CheckpointHeader> ckpt;
  if (!restart.empty()) ckpt = read_checkpoint_header(restart, world);  // rank 0 checks the seal, every rank reads
  const Options opts = ckpt ? parse_deck(ckpt->deck, ckpt->path + ":/deck", overrides)
                            : read_deck(deck_path, overrides);
  RunConfig cfg = make_config(deck_path, opts);
  const int ranks = world.size();
  if (ranks > 1 && (cfg.solver == "vortex" || cfg.solver == "both"))
    throw InputError(opts.where("case.solver") + " on " + std::to_string(ranks) +
                     " ranks: the vortex solver runs on one rank for now (allowed on R > 1 ranks: spectral, initial)");
  if (ranks > cfg.n)
    throw InputError("mpirun -np " + std::to_string(ranks) + ": " + std::to_string(ranks) + " ranks for " +
                     opts.where("domain.n") + " (allowed: at most N = " + std::to_string(cfg.n) +
                     " ranks; each holds whole z-planes)");
  if (ckpt) check_checkpoint_grid(*ckpt, cfg.n);
  const Backend backend = resolve_backend(cfg.device);
  if (backend == Backend::gpu && ranks > 1) select_gpu(world.local_rank());  // one GPU per rank of a node
  if (ckpt) cfg.out_dir = ckpt->dir;  // a restart continues in the checkpoint's folder
  // Memory, estimated from the deck and checked before anything is written (memory_estimate.h).
  // The estimate is that of one rank holding the whole grid: on R > 1 ranks it is not checked.
  const MemoryEstimate mem = estimate_memory(cfg, backend, spectral_fused_on_gpu(cfg, backend));
  const MemoryAvailable host_mem = host_memory_available();
  const MemoryAvailable gpu_mem = backend == Backend::gpu ? device_memory_available() : MemoryAvailable{};
  if (ranks == 1) {
    if (dry_run) {
      std::cout << dry_run_report(cfg, device_name(backend), mem, backend, host_mem, gpu_mem) << std::flush;
      if (!ckpt) prepare_output_dir(cfg, false);
      check_memory(cfg, backend, mem, host_mem, gpu_mem);
      return 0;
    }
    check_memory(cfg, backend, mem, host_mem, gpu_mem);
  } else if (dry_run) {
    throw InputError("--dry-run: runs on one rank only (the memory estimate is that of one rank)");
  }
  if (!ckpt)
    on_root(world, [&] { prepare_output_dir(cfg); });
  else
    on_root(world, [&] { require_writable(cfg.out_dir, "the run folder " + cfg.out_dir + " of " + ckpt->path); });

  Console con(quiet || !world.root());
  if (world.root()) con.open_log((fs::path(cfg.out_dir) / "log.txt").string());
  const std::string device = device_name(backend);
  const Grid g{cfg.n};
  const Slab slab = Slab::make(g, spectral::kept_kmax(cfg.spectral.dealias, g.n), world);
  const InitialSlab init = make_initial_field(cfg.flow, slab);
  SlabFft fft(slab);
  const Statistics s0 = statistics(init.u, init.nu, fft);
  const double T0 = s0.T;
  const double t_end = std::isnan(cfg.t_end) ? cfg.t_end_over_T * T0 : cfg.t_end;
  const double out_dt = std::isnan(cfg.output_interval) ? cfg.output_over_T * T0 : cfg.output_interval;

  std::string args;
  for (const auto& a : argv) args += (args.empty() ? "" : " ") + a;
  con.line("vortexhit " VH_VERSION " (" VH_GIT_HASH ", " VH_BUILD_TYPE ", " VH_COMPILER ")");
  con.line("device " + device + "  ranks " + std::to_string(ranks) + "  deck " +
           (ckpt ? ckpt->path + ":/deck (restart)" : deck_path.empty() ? "(defaults)" : deck_path));
  if (ranks > 1)
    con.line(decomposition_line(slab) +
             (backend == Backend::gpu ? (Comm::cuda_aware() ? ", CUDA-aware" : ", not CUDA-aware: device buffers staged through host memory")
                                      : ""));
  con.line("case " + cfg.name + "  solver " + cfg.solver + "  N " + std::to_string(g.n) + "  nu " +
           fmt(init.nu) + "  Re_lambda " + fmt(s0.Re_lambda, 4) + "  u' " + fmt(s0.u_prime, 4) +
           "  L " + fmt(s0.L, 4) + "  T " + fmt(T0, 4) + "  t_end " + fmt(t_end, 4));
  for (const std::string& l : memory_lines(mem, backend, host_mem, gpu_mem)) con.line(l);

  const std::string run_h5 = (fs::path(cfg.out_dir) / "run.h5").string();
  std::vector<std::unique_ptr<Stepper>> solvers;
  if (cfg.solver == "spectral" || cfg.solver == "both") {
    cfg.spectral.nu = init.nu;
    solvers.push_back(make_spectral(cfg.spectral, slab, backend));
  }
  if (cfg.solver == "vortex" || cfg.solver == "both") {
    cfg.vortex.nu = init.nu;
    solvers.push_back(make_vortex(cfg.vortex, g, backend));
    const fmm::Params f = cfg.vortex.fmm.resolved();
    std::ostringstream msg;
    msg << "vortex   FMM "
        << (backend == Backend::gpu ? "on the GPU (the cells split on the host, measured and traversed on the GPU)"
                                    : "on the CPU")
        << ": tolerance " << f.tolerance << ", p " << f.p << ", theta " << f.theta << ", ncrit " << f.ncrit
        << ", images " << f.images;
    if (backend == Backend::gpu) msg << ", near field " << f.precision;
    con.line(msg.str());
  }

  // Field outputs, in t/T of the initial field.
  std::vector<double> field_t;
  for (double f : cfg.fields_at) field_t.push_back(f * T0);
  auto field_due = [&](double t) {
    return std::any_of(field_t.begin(), field_t.end(), [&](double f) { return near(f, t, t_end); });
  };
  long field_index = 0;
  std::map<std::string, Last> last;
  SpectralSlab u(slab);
  std::unique_ptr<RunFile> rf;  // on every rank (the same rows); rank 0 writes it

  if (ckpt) {
    // Continue: the solvers' states from the checkpoint, the series from run.h5 trimmed to
    // each solver's checkpoint time, fields files numbered on from the checkpoint's.
    load_checkpoint(*ckpt, solvers);
    RunData data = RunFile::read(run_h5, /*require_seal=*/true);
    for (auto& st : solvers) {
      check_restart_record(data, run_h5, st->name(), st->time());
      trim_after(data.solvers.at(st->name()), st->time() * (1 + 1e-12));
      const auto& se = data.solvers.at(st->name()).series;
      const auto& K = se.at("K");
      last[st->name()] = {K.back(), se.at("epsilon").back(), se.at("Re_lambda").back(),
                          *std::min_element(K.begin(), K.end())};
    }
    data.meta["restarted_from"] = ckpt->path + " at " + now_iso() + " by: " + args +
                                  (ranks > 1 ? " (" + std::to_string(ranks) + " ranks)" : "");
    rf = std::make_unique<RunFile>(run_h5, std::move(data));
    field_index = ckpt->field_index;
    on_root(world, [&] { remove_fields_from(cfg.out_dir, field_index); });
    con.line("restart from " + ckpt->path);
  } else {
    rf = std::make_unique<RunFile>(run_h5);
    rf->set_deck(deck_text(opts));
    rf->set_meta({{"version", VH_VERSION},
                  {"git_hash", VH_GIT_HASH},
                  {"build_type", VH_BUILD_TYPE},
                  {"compiler", VH_COMPILER},
                  {"cuda_version", VH_CUDA_VERSION},
                  {"device", device},
                  {"ranks", std::to_string(ranks)},
                  {"start_time", now_iso()},
                  {"deck_path", deck_path},
                  {"argv", args}});
    rf->append_series("initial", series_row(0.0, 0, 0.0, s0));
    rf->append_spectrum("initial", 0.0, energy_spectrum(init.u));
    // With no solver to run, the initial field's own fields are the output.
    if (cfg.solver == "initial" && field_due(0.0)) {
      const GridFields f = grid_fields(init.u, fft);
      write_fields(cfg.out_dir, int(field_index++), 0.0, {{"initial", f.set(0)}}, slab);
    }
    // The solvers start from the same field.
    std::map<std::string, GridFields> fields;
    for (auto& st : solvers) {
      st->start(init.u, 0.0);
      st->velocity(u);
      const Statistics s = statistics(u, init.nu, fft);
      if (st->name() == "vortex")
        con.line("vortex   initial particles: FMM velocity on the grid vs the spectral one, rel. L2 " +
                 fmt(relative_l2(u, init.u), 3));
      record(*rf, *st, s, 0.0, energy_spectrum(u));
      if (const std::string l = st->log_line(); !l.empty()) con.line(l);
      if (field_due(0.0)) fields[st->name()] = grid_fields(u, fft);
      last[st->name()] = {s.K, s.epsilon, s.Re_lambda, s.K};
    }
    if (!fields.empty()) write_field_sets(cfg.out_dir, int(field_index++), 0.0, fields, solvers, slab);
  }
  on_root(world, [&] { rf->write(); });

  const fs::path stop_file = fs::path(cfg.out_dir) / "STOP";
  const std::string deck = rf->data().deck;
  auto stop_run = [&](const std::string& why) {  // collective: every rank decides the same
    write_checkpoint(cfg.out_dir, deck, field_index, solvers, world);
    on_root(world, [&] { rf->write(); });
    throw RunStopped(why + "; checkpoint " + (fs::path(cfg.out_dir) / "checkpoint.h5").string() +
                     " (the one before: checkpoint_prev.h5)");
  };
  long steps_since_ckpt = 0;
  std::map<std::string, double> phases;  // wall seconds per phase, for the table at the end
  auto last_ckpt = std::chrono::steady_clock::now();

  for (double stop : stop_times(t_end, out_dt, field_t)) {
    std::map<std::string, GridFields> fields;
    for (auto& st : solvers) {
      const std::string name = st->name();
      if (rf->data().solvers.at(name).series.at("t").back() >= stop - 1e-9 * t_end) continue;  // restarted past it
      con.reset_rate();
      double dt = 0.0, t = st->time();
      while (t < stop && !near(t, stop, t_end)) {
        double umax = 0;
        {
          const PhaseTimer timer(phases[name + " steps"]);  // the right-hand side, if not yet known
          umax = st->max_velocity();
        }
        const std::string where = " at step " + std::to_string(st->steps()) + ", t = " + fmt(t);
        if (!std::isfinite(umax)) stop_run(name + ": max|u| is not finite" + where);
        dt = std::isnan(cfg.dt) ? cfg.cfl * g.h() / umax : cfg.dt;
        if (umax * dt / g.h() > cfg.max_cfl)
          stop_run(name + ": CFL number " + fmt(umax * dt / g.h(), 3) + " > time.max_cfl = " +
                   fmt(cfg.max_cfl, 3) + where);
        // A CFL step that collapses means the velocity grew without bound: stop rather than creep.
        if (last[name].first_dt == 0) last[name].first_dt = dt;
        if (dt < cfg.stall_fraction * last[name].first_dt)
          stop_run(name + ": the run has stalled: dt = " + fmt(dt, 3) + " is below time.stall_fraction = " +
                   fmt(cfg.stall_fraction, 3) + " of the first step's " + fmt(last[name].first_dt, 3) +
                   " (max|u| = " + fmt(umax, 3) + ")" + where);
        // Land on the stop in equal steps no longer than the stable one (no sliver steps).
        dt = (stop - t) / std::ceil((stop - t) / dt * (1 - 1e-12));
        {
          const PhaseTimer timer(phases[name + " steps"]);
          st->step(dt);
        }
        t = st->time();
        ++steps_since_ckpt;
        if (const std::string e = st->event(); !e.empty()) con.line(e);
        con.progress(name, st->steps(), t, T0, dt, last[name].K / s0.K, last[name].Re_lambda, t_end);
        std::error_code ec;
        // A signal reaches the ranks it reaches, the STOP file is looked for by rank 0: the
        // decision to stop is shared (one reduction per step on R ranks, none on one).
        const int sig = ranks > 1 ? int(world.max(double(g_signal))) : int(g_signal);
        if (sig != 0)
          stop_run(name + ": " + (sig == SIGINT ? "SIGINT" : sig == SIGUSR1 ? "SIGUSR1" : "SIGTERM") +
                   " received, stopped after step " + std::to_string(st->steps()) + ", t = " + fmt(t));
        if (world.any(world.root() && fs::exists(stop_file, ec))) {
          if (world.root()) fs::remove(stop_file, ec);
          stop_run(name + ": STOP file found, stopped after step " + std::to_string(st->steps()) + ", t = " + fmt(t));
        }
        if (world.any(world.root() && !fs::is_directory(cfg.out_dir, ec)))
          throw RunStopped(name + ": the run folder " + cfg.out_dir + " was deleted or moved away during the run "
                           "(found after step " + std::to_string(st->steps()) + ", t = " + fmt(t) +
                           "); stopped without writing anything (its checkpoint, if any, went with it)");
      }
      // Diagnostics where the state lives when the solver can (no host copy), else on the
      // host from the velocity on the grid; the host copy is made anyway for fields.
      Statistics s;
      std::vector<double> E;
      bool in_place;
      {
        const PhaseTimer timer(phases[name + " statistics and spectrum"]);
        in_place = st->statistics_in_place(init.nu, s, E);
      }
      if (!in_place) {
        {
          const PhaseTimer timer(phases[name + " velocity on the grid"]);
          st->velocity(u);
        }
        const PhaseTimer timer(phases[name + " statistics and spectrum"]);
        s = statistics(u, init.nu, fft);
        E = energy_spectrum(u);
      } else if (field_due(t)) {
        const PhaseTimer timer(phases[name + " velocity on the grid"]);
        st->velocity(u);
      }
      if (!std::isfinite(s.K)) stop_run(name + ": K is not finite at step " + std::to_string(st->steps()) + ", t = " + fmt(t));
      // Energy balance between outputs: −dK/dt against the mean of ε at both ends.
      const double t_prev = rf->data().solvers.at(name).series.at("t").back();
      con.line(name + " energy balance t/T " + fmt(t / T0, 4) + "  -dK/dt " +
               fmt(-(s.K - last[name].K) / (t - t_prev), 6) + "  eps " + fmt(0.5 * (s.epsilon + last[name].epsilon), 6));
      {
        const PhaseTimer timer(phases[name + " monitors and run.h5 rows"]);
        record(*rf, *st, s, dt, E);
      }
      if (const std::string l = st->log_line(); !l.empty()) con.line(l);
      // After the row is in run.h5, so that the rise can be seen there.
      if (s.K > (1 + cfg.max_energy_rise) * last[name].K_min)
        stop_run(name + ": K = " + fmt(s.K) + " rose " + fmt(100 * (s.K / last[name].K_min - 1), 3) +
                 " % above its running minimum " + fmt(last[name].K_min) + " (time.max_energy_rise = " +
                 fmt(cfg.max_energy_rise, 3) + "); the flow is unforced, so K can only decay: " +
                 energy_rise_cause(name) + "; at step " + std::to_string(st->steps()) + ", t = " + fmt(t));
      if (field_due(t)) {
        const PhaseTimer timer(phases["fields (velocity, vorticity, Q) and their files"]);
        fields[name] = grid_fields(u, fft);
      }
      last[name] = {s.K, s.epsilon, s.Re_lambda, std::min(last[name].K_min, s.K), last[name].first_dt};
      con.progress(name, st->steps(), t, T0, dt, s.K / s0.K, s.Re_lambda, t_end, true);
    }
    {
      const PhaseTimer timer(phases["fields (velocity, vorticity, Q) and their files"]);
      if (!fields.empty()) write_field_sets(cfg.out_dir, int(field_index++), stop, fields, solvers, slab);
    }
    {
      const PhaseTimer timer(phases["run.h5 and checkpoints"]);
      on_root(world, [&] { rf->write(); });
    }
    // rank 0's clock decides (the ranks' clocks differ)
    double minutes = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_ckpt).count() / 60;
    world.bcast(&minutes, sizeof minutes);
    if ((cfg.checkpoint_every > 0 && steps_since_ckpt >= cfg.checkpoint_every) ||
        (cfg.checkpoint_minutes > 0 && minutes >= cfg.checkpoint_minutes)) {
      const PhaseTimer timer(phases["run.h5 and checkpoints"]);
      write_checkpoint(cfg.out_dir, deck, field_index, solvers, world);
      steps_since_ckpt = 0;
      last_ckpt = std::chrono::steady_clock::now();
    }
  }
  // A final checkpoint, so that the run can be continued to a later t_end.
  if (!solvers.empty()) {
    const PhaseTimer timer(phases["run.h5 and checkpoints"]);
    write_checkpoint(cfg.out_dir, deck, field_index, solvers, world);
  }
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGUSR1, SIG_DFL);

  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  // Time per phase: where the wall time went.
  double accounted = 0;
  for (const auto& [phase, sec] : phases) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "time  %-52s %9.2f s  %5.1f %%", phase.c_str(), sec, 100 * sec / wall);
    con.line(buf);
    accounted += sec;
  }
  char other[160];
  std::snprintf(other, sizeof other, "time  %-52s %9.2f s  %5.1f %%", "start-up (initial field, solver set-up) and rest",
                wall - accounted, 100 * (wall - accounted) / wall);
  con.line(other);
  // What the run held, against the estimate it was admitted with (calibration of memory_estimate).
  std::string used = "memory   host peak RSS " + format_bytes(peak_rss_bytes()) + " (estimated " +
                     format_bytes(mem.host_bytes()) + ")";
  std::size_t gpu_free = 0, gpu_total = 0;
  if (backend == Backend::gpu && gpu_memory(gpu_free, gpu_total))
    used += ", GPU in use at the end " + format_bytes(double(gpu_total - gpu_free)) + " (estimated " +
            format_bytes(mem.device_bytes()) + " and the CUDA context)";
  con.line(used);
  std::ostringstream sum;
  sum << "case        " << cfg.name << "\nsolver      " << cfg.solver << "\nN           " << g.n
      << "\ndevice      " << device << "\nK0          " << fmt(s0.K, 10) << "\nu_prime     "
      << fmt(s0.u_prime, 10) << "\nL           " << fmt(s0.L, 10) << "\nT           " << fmt(T0, 10)
      << "\nlambda      " << fmt(s0.lambda, 10) << "\nRe_lambda   " << fmt(s0.Re_lambda, 10)
      << "\nnu          " << fmt(init.nu, 10) << "\nt_end       " << fmt(t_end, 10) << "\n";
  for (auto& st : solvers)
    sum << st->name() << ".steps" << std::string(std::max<int>(1, 12 - int(st->name().size()) - 6), ' ')
        << st->steps() << "\n" << st->name() << ".K/K0" << std::string(std::max<int>(1, 12 - int(st->name().size()) - 5), ' ')
        << fmt(last[st->name()].K / s0.K, 10) << "\n";
  sum << "wall_s      " << fmt(wall, 4) << "\n";
  if (ranks > 1) sum << "ranks       " << ranks << "\n";
  on_root(world, [&] { h5::atomic_write_text((fs::path(cfg.out_dir) / "summary.txt").string(), sum.str()); });
  con.line("done in " + format_duration(wall) + " (" + fmt(wall, 3) + " s): " + cfg.out_dir +
           "/{run.h5, summary.txt, fields*.h5, fields.xdmf, checkpoint.h5, log.txt}");
  return 0;
}

int run(const std::string& deck_path, const std::vector<std::string>& overrides, bool quiet,
        const std::string& restart, const std::vector<std::string>& argv, bool dry_run) {
  try {
    return run_case(deck_path, overrides, quiet, restart, argv, dry_run);
  } catch (const WriteError& e) {
    // A full disk, a file-size limit, a folder gone (on every rank: RootErrors): stop (exit 3)
    // and say what is left. Every file is written under a temporary name and renamed
    // (h5::atomic_path), so the folder holds only complete files, and its checkpoint, if any,
    // is the last one written.
    fs::path dir = fs::path(e.path()).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    std::string left;
    if (!fs::is_directory(dir, ec))
      left = "the run folder " + dir.string() + " is gone (deleted or moved away during the run)";
    else if (fs::exists(dir / "checkpoint.h5", ec))
      left = "the last checkpoint " + (dir / "checkpoint.h5").string() +
             " is intact: make room and continue with `vortexhit run --restart " + dir.string() + "`";
    else
      left = "no checkpoint had been written yet";
    throw RunStopped(std::string(e.what()) + "; nothing was left half-written; " + left);
  }
}

}  // namespace vh::app
