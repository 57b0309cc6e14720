// The run driver: deck → configuration (checked in full before anything is written) → the
// initial field and its statistics → the solvers started from it (or restored from a
// checkpoint) → for each stop time (outputs, field times, the end) each solver advances to it
// and records its diagnostics; guards stop the run with a checkpoint of its state, or, where
// that state is broken (not finite, or a flow collapsed to rest), keeping the last good one;
// the end writes a checkpoint, summary.txt and a table of time per phase.
//
// run_case() reads that way: configure(), dry_run_or_check_memory() and prepare_run_folder()
// before anything is written, then a Run: start() (start_from_initial_field() or
// restart_from_checkpoint()), advance_to_end() (per solver and stop time advance(), whose
// guards are stable_dt() and check_stop_requests(), then output(), with check_energy_rise();
// checkpoint_if_due() after each stop), final_checkpoint(), report().
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
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <sstream>

#include "app/checkpoint.h"
#include "app/config.h"
#include "app/deck.h"
#include "app/memory_estimate.h"
#include "app/steppers.h"
#include "base/comm.h"
#ifdef VH_HAVE_CUDA
#include "base/device_comm.h"
#endif
#include "base/error.h"
#include "core/device.h"
#include "core/diagnostics.h"
#include "core/fft.h"
#include "core/initial_field.h"
#include "core/slab.h"
#include "core/slab_copy.h"
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

/// k_max η of a field of dissipation ε (ν of the initial field; k_max of the solver).
double kmax_eta(double kmax, double nu, double epsilon) { return kmax * kolmogorov_length(nu, epsilon); }

/// One diagnostics row in the order of kSeriesNames, plus enstrophy, divergence, helicity and
/// the resolution: k_max of the field's solver and k_max η from its own ε.
std::vector<std::pair<std::string, double>> series_row(double t, long step, double dt,
                                                       const Statistics& s, double kmax, double nu) {
  return {{"t", t},           {"step", double(step)},  {"dt", dt},
          {"K", s.K},         {"epsilon", s.epsilon},  {"L", s.L},
          {"T", s.T},         {"lambda", s.lambda},    {"Re_lambda", s.Re_lambda},
          {"S3", s.S3},       {"enstrophy", s.enstrophy}, {"divergence_rel", s.divergence_rel},
          {"helicity", s.helicity}, {"kmax", kmax},     {"kmax_eta", kmax_eta(kmax, nu, s.epsilon)}};
}

/// A run.h5 record written before k_max and k_max η were (restart): the two columns, after
/// helicity as series_row() places them, from its own ε, so that the rows this run appends
/// line up with the old ones. A record without helicity is left as it is.
void add_resolution_columns(SolverRecord& r, double kmax, double nu) {
  if (r.series.count("kmax_eta")) return;
  const auto at = std::find(r.names.begin(), r.names.end(), "helicity");
  if (at == r.names.end() || !r.series.count("epsilon")) return;
  r.names.insert(at + 1, {"kmax", "kmax_eta"});
  for (double eps : r.series.at("epsilon")) {
    r.series["kmax"].push_back(kmax);
    r.series["kmax_eta"].push_back(kmax_eta(kmax, nu, eps));
  }
}

/// Times at which the run stops to output: every output interval, every requested field
/// time and the end, sorted, without near-duplicates. A field time or an end that falls on an
/// output is that output's k·out_dt: a run ended there and restarted then stops where a run to
/// a later end does, bit for bit (0.3 T and 3 × 0.1 T differ in the last bit).
std::vector<double> stop_times(double t_end, double out_dt, const std::vector<double>& field_t) {
  const auto on_outputs = [&](double v) {
    const double k = std::round(v / out_dt);
    return k >= 1 && std::abs(v - k * out_dt) <= 1e-9 * t_end ? k * out_dt : v;
  };
  std::vector<double> t;
  for (long k = 1; k * out_dt < t_end * (1 - 1e-12); ++k) t.push_back(k * out_dt);
  for (double f : field_t)
    if (f > 0 && f < t_end) t.push_back(on_outputs(f));
  t.push_back(on_outputs(t_end));
  std::sort(t.begin(), t.end());
  std::vector<double> out;
  for (double v : t)
    if (out.empty() || v - out.back() > 1e-9 * t_end) out.push_back(v);
  return out;
}

/// The field output times: output.fields_at (in t/T) times T of the initial field.
std::vector<double> field_times(const std::vector<double>& fields_at, double T0) {
  std::vector<double> t;
  for (double f : fields_at) t.push_back(f * T0);
  return t;
}

bool near(double a, double b, double scale) { return std::abs(a - b) <= 1e-9 * scale; }

/// The output interval of `c` in time units (T0: the initial field's eddy turnover time).
double output_interval(const RunConfig& c, double T0) {
  return std::isnan(c.output_interval) ? c.output_over_T * T0 : c.output_interval;
}

/// What a host allocation that failed (std::bad_alloc) says, at start-up and mid-run.
constexpr const char* kHostRefused = "host memory: an allocation failed (std::bad_alloc)";

/// Below this share of K0 the velocity is under the round-off of the initial field's
/// (√(K/K0) < ε): nothing of the flow is left, only the remains of a state that collapsed.
constexpr double kCollapsedEnergy = std::numeric_limits<double>::epsilon() * std::numeric_limits<double>::epsilon();

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
  double kmax_eta = std::numeric_limits<double>::quiet_NaN();
  bool under_resolved = false;  ///< k_max η < 1 has been reported (once per solver and process)
};

/// What most likely makes K grow in a run of `solver` (the energy guard's message).
std::string energy_rise_cause(const std::string& solver) {
  if (solver == "vortex")
    return "likely an instability of the time step (lower time.cfl) or aliasing at the lattice's high "
           "wavenumbers (keep vortex.filter = cube or spherical with filter_fraction <= 2/3)";
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

/// One output of a solver into the run file: series (standard names, k_max and k_max η, then
/// its monitors) and spectrum E.
void record(RunFile& rf, Stepper& st, const Statistics& s, double dt, const std::vector<double>& E, double nu) {
  auto row = series_row(st.time(), st.steps(), dt, s, st.kmax(), nu);
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

/// "vortex   FMM on the CPU: tolerance 1e-05, p 12, ...": the FMM's resolved parameters, and why
/// the run took the lists where the deck asked for FFTs (`m2l_lists`, fit_fmm_m2l).
std::string fmm_line(const fmm::Params& f, Backend backend, const std::string& m2l_lists) {
  std::ostringstream msg;
  msg << "vortex   FMM "
      << (backend == Backend::gpu ? "on the GPU" : "on the CPU")
      << ": tolerance " << f.tolerance << ", p " << f.p << ", theta " << f.theta << ", ncrit " << f.ncrit
      << ", images " << f.images;
  if (backend == Backend::gpu)
    msg << ", near field " << f.precision << ", M2L "
        << (f.m2l == "fft"
                ? "by FFTs on a complete tree's uniform levels (fmm.m2l fft), else by the lists"
                : "by the traversal's lists" + (m2l_lists.empty() ? "" : " (fmm.m2l fft: " + m2l_lists + ")"));
  return msg.str();
}

/// The command line as one string (run.h5:/meta argv, restarted_from).
std::string join_args(const std::vector<std::string>& argv) {
  std::string args;
  for (const auto& a : argv) args += (args.empty() ? "" : " ") + a;
  return args;
}

// ---- before anything is written -----------------------------------------------------------

/// Guards: a signal ends the run after the current step with a checkpoint (exit 3).
void catch_signals() {
  g_signal = 0;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGUSR1, on_signal);  // mpirun passes SIGUSR1 on to the ranks (SIGINT/SIGTERM kill the job)
  // Past a file-size limit (ulimit -f) write(2) then fails with EFBIG, a WriteError like a
  // full disk, instead of the signal killing the process mid-file.
  std::signal(SIGXFSZ, SIG_IGN);
}

void release_signals() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGUSR1, SIG_DFL);
}

/// What is known before anything is written: the configuration (from the deck, or on a
/// restart from the checkpoint's deck), the back end, and the memory the run needs and finds.
struct Setup {
  std::optional<CheckpointHeader> ckpt;
  Options opts;  ///< the deck after overrides
  RunConfig cfg;
  Backend backend;
  MemoryEstimate mem;  ///< that of one rank holding the whole grid
  MemoryAvailable host_mem, gpu_mem;
  std::string comm;  ///< how the ranks exchange (connect_ranks)
  std::string m2l_lists;  ///< why fmm.m2l fft became lists (fit_fmm_m2l); "" where it did not
};

/// R > 1 ranks of a GPU run: one GPU each (parallel.share_gpus lets them share) and the transport
/// of device buffers (parallel.comm, VH_COMM). Returns its name for the banner and run.h5
/// /meta: "nccl", "mpi-cuda" or "mpi-staged"; "mpi" on CPU ranks; "none" on one rank.
/// gpu_ranks: the ranks on this rank's GPU (select_gpus), 1 where none share.
std::string connect_ranks(const RunConfig& cfg, Backend backend, const Comm& world, int& gpu_ranks) {
  gpu_ranks = 1;
  if (world.size() == 1) return "none";
  if (backend != Backend::gpu) return "mpi";
  gpu_ranks = select_gpus(world, cfg.share_gpus);
#ifdef VH_HAVE_CUDA
  DeviceComm::configure(world, cfg.comm);
  const DeviceComm::Transport t = DeviceComm::configured(world);
  return t == DeviceComm::Transport::nccl ? std::string("nccl ") + DeviceComm::nccl_version() : DeviceComm::name(t);
#else
  return "mpi";
#endif
}

/// On R > 1 ranks: at most one rank per z-plane; the vortex solver with its default
/// reinitialisation from the points (vortex/halo.h, vortex/solver_gpu.h).
void check_ranks(const RunConfig& cfg, const Options& opts, int ranks) {
  if (ranks > 1 && runs_vortex(cfg.solver)) {
    if (cfg.vortex.reinit_from == vortex::ReinitFrom::blobs)
      throw InputError(opts.where("vortex.reinit_from") + " = blobs on " + std::to_string(ranks) +
                       " ranks: the seeds' scheme runs on one rank (allowed on R > 1 ranks: points)");
  }
  if (ranks > cfg.n)
    throw InputError("mpirun -np " + std::to_string(ranks) + ": " + std::to_string(ranks) + " ranks for " +
                     opts.where("domain.n") + " (allowed: at most N = " + std::to_string(cfg.n) +
                     " ranks; each holds whole z-planes)");
}

Setup configure(const std::string& deck_path, const std::vector<std::string>& overrides,
                const std::string& restart, const Comm& world) {
  std::optional<CheckpointHeader> ckpt;
  if (!restart.empty()) ckpt = read_checkpoint_header(restart, world);  // rank 0 checks the seal, every rank reads
  Options opts = ckpt ? parse_deck(ckpt->deck, ckpt->path + ":/deck", overrides) : read_deck(deck_path, overrides);
  RunConfig cfg = make_config(deck_path, opts);
  const int ranks = world.size();
  cfg.ranks = ranks;
  const Backend backend = resolve_backend(cfg.device);
  check_ranks(cfg, opts, ranks);
  if (ckpt) check_checkpoint_case(*ckpt, cfg);
  int gpu_ranks = 1;
  const std::string comm = connect_ranks(cfg, backend, world, gpu_ranks);
  if (ckpt) cfg.out_dir = ckpt->dir;  // a restart continues in the checkpoint's folder
  // Memory, estimated from the deck and checked before anything is written (memory_estimate.h);
  // the FMM's M2L by FFTs only where its tables fit beside the rest, on every rank alike. A
  // node's memory is its ranks', a GPU's the ranks' that share it.
  const bool fused = spectral_fused_on_gpu(cfg, backend);
  const MemoryAvailable host_mem = shared_by(host_memory_available(), world.local_size(), "ranks of this node");
  const MemoryAvailable gpu_mem = backend == Backend::gpu
                                      ? shared_by(device_memory_available(), gpu_ranks, "ranks on this GPU")
                                      : MemoryAvailable{};
  std::string m2l_lists = fit_fmm_m2l(cfg, backend, fused, gpu_mem);
  if (world.any(!m2l_lists.empty()) && m2l_lists.empty()) {
    cfg.vortex.fmm.m2l = "lists";
    m2l_lists = "the uniform levels' FFT tables do not fit beside the run on another rank's GPU";
  }
  const MemoryEstimate mem = estimate_memory(cfg, backend, fused);
  return {std::move(ckpt), std::move(opts), std::move(cfg), backend, mem, host_mem, gpu_mem, comm, m2l_lists};
}

/// The memory check, and --dry-run, which prints the estimate and ends there (true). On R > 1
/// ranks the estimate is one rank's (rank 0's part, the largest) and every rank checks its own
/// memory; the first rank short of memory says why, on every rank.
bool dry_run_or_check_memory(const Setup& s, const Comm& world, bool dry_run) {
  if (dry_run && world.root())
    std::cout << dry_run_report(s.cfg, device_name(s.backend), s.mem, s.backend, s.host_mem, s.gpu_mem)
              << (world.size() > 1 ? "(memory per rank, " + std::to_string(world.size()) + " ranks)\n" : "")
              << (s.m2l_lists.empty() ? "" : "fmm      M2L by the lists: " + s.m2l_lists + "\n") << std::flush;
  if (dry_run && !s.ckpt) on_root(world, [&] { prepare_output_dir(s.cfg, false); });
  std::string why;
  try {
    check_memory(s.cfg, s.backend, s.mem, s.host_mem, s.gpu_mem);
  } catch (const InputError& e) {
    why = e.what();
  }
  why = world.first_error(why);
  if (!why.empty()) throw InputError(why);
  return dry_run;
}

/// A new run's folder (created, or refused: prepare_output_dir), or a restart's (writable).
void prepare_run_folder(const Setup& s, const Comm& world) {
  if (!s.ckpt)
    on_root(world, [&] { prepare_output_dir(s.cfg); });
  else
    on_root(world, [&] { require_writable(s.cfg.out_dir, "the run folder " + s.cfg.out_dir + " of " + s.ckpt->path); });
}

/// The console: `quiet`, or silent on ranks other than 0; rank 0 copies it to RUN_DIR/log.txt.
Console open_console(bool quiet, const Comm& world, const std::string& dir) {
  Console con(quiet || !world.root());
  if (world.root()) con.open_log((fs::path(dir) / "log.txt").string());
  return con;
}

// ---- the run ------------------------------------------------------------------------------

/// One run from its folder on: the initial field and the solvers, their start (or restart),
/// the time loop with its guards and outputs, the checkpoints, the closing report.
class Run {
 public:
  /// The initial field and its statistics, the banner and the solvers (not yet started).
  Run(Setup s, const Comm& world, bool quiet, const std::string& deck_path, const std::vector<std::string>& argv);
  /// Starts the solvers from the initial field, or restores them from the checkpoint and
  /// continues its run.h5; writes run.h5.
  void start();
  /// Advances every solver to every stop time, recording each output, then writes a final
  /// checkpoint, so that the run can be continued to a later t_end.
  void advance_to_end();
  /// Time per phase, memory used, summary.txt and the closing line.
  void report(std::chrono::steady_clock::time_point wall0);

 private:
  void banner();
  void make_solvers();
  void restart_from_checkpoint();
  void check_same_flow(const RunData& data) const;
  double initial_max_speed();
  void check_checkpoint_times(const CheckpointHeader& ckpt, const RunData& data) const;
  void start_from_initial_field();
  std::map<std::string, std::string> meta() const;
  double advance(Stepper& st, double stop);
  double stable_dt(Stepper& st);
  void check_stop_requests(const Stepper& st);
  Statistics measure(Stepper& st, std::vector<double>& E);
  void output(Stepper& st, double dt, std::map<std::string, GridFields>& fields);
  void check_energy_rise(const Stepper& st, const Statistics& s);
  void report_resolution();
  void check_resolution(const Stepper& st);
  void checkpoint_if_due();
  [[noreturn]] void stop(const std::string& why);
  [[noreturn]] void stop_broken(const std::string& why);
  [[noreturn]] void out_of_memory(const std::string& what, bool gpu);
  [[noreturn]] void device_fault(const std::string& what);
  [[noreturn]] void stop_lost(const std::string& why);
  std::string steps_at() const;
  std::string last_good_note() const;
  void advance_outputs();
  void final_checkpoint();
  bool field_due(double t) const;
  void time_table(double wall);
  std::string memory_used() const;
  std::string summary(double wall) const;

  // In the order they are built: the log opens before the initial field is made, the slab
  // comes before the initial field, the FFT before its statistics.
  const Comm& world_;
  Setup s_;
  const std::string deck_path_, args_;
  const int ranks_;
  Console con_;
  const std::string device_;
  const Grid g_;
  const Slab slab_;  ///< this rank's part (one rank: the whole grid)
  const InitialSlab init_;
  SlabFft fft_;
  const Statistics s0_;  ///< of the initial field
  const double T0_;      ///< its eddy turnover time, the unit of t/T
  const double t_end_, out_dt_;
  const std::vector<double> field_t_;  ///< output.fields_at in time units
  const std::string run_h5_;
  const fs::path stop_file_;
  std::vector<std::unique_ptr<Stepper>> solvers_;
  SpectralSlab u_;               ///< the velocity on the grid of the solver being output
  std::unique_ptr<RunFile> rf_;  ///< on every rank (the same rows); rank 0 writes it
  const std::string deck_;       ///< the deck in effect (a restart's overrides applied): every checkpoint's
  long field_index_ = 0;         ///< index of the next fields file
  std::map<std::string, Last> last_;
  std::map<std::string, double> phases_;  ///< wall seconds per phase, for the table at the end
  long steps_since_ckpt_ = 0;
  std::chrono::steady_clock::time_point last_ckpt_;
  std::string last_good_;  ///< the last checkpoint of a good state: written, or restarted from
};

Run::Run(Setup s, const Comm& world, bool quiet, const std::string& deck_path, const std::vector<std::string>& argv)
    : world_(world),
      s_(std::move(s)),
      deck_path_(deck_path),
      args_(join_args(argv)),
      ranks_(world.size()),
      con_(open_console(quiet, world, s_.cfg.out_dir)),
      device_(device_name(s_.backend)),
      g_{s_.cfg.n},
      slab_(Slab::make(g_, spectral::kept_kmax(s_.cfg.spectral.dealias, g_.n), world)),
      init_(make_initial_field(s_.cfg.flow, slab_)),
      fft_(slab_),
      s0_(statistics(init_.u, init_.nu, fft_)),
      T0_(s0_.T),
      t_end_(std::isnan(s_.cfg.t_end) ? s_.cfg.t_end_over_T * T0_ : s_.cfg.t_end),
      out_dt_(output_interval(s_.cfg, T0_)),
      field_t_(field_times(s_.cfg.fields_at, T0_)),
      run_h5_((fs::path(s_.cfg.out_dir) / "run.h5").string()),
      stop_file_(fs::path(s_.cfg.out_dir) / "STOP"),
      deck_(deck_text(s_.opts)) {
  banner();
  make_solvers();
  u_ = SpectralSlab(slab_);
}

void Run::banner() {
  const RunConfig& c = s_.cfg;
  con_.line("vortexhit " VH_VERSION " (" VH_GIT_HASH ", " VH_BUILD_TYPE ", " VH_COMPILER ")");
  con_.line("device " + device_ + "  ranks " + std::to_string(ranks_) + "  deck " +
            (s_.ckpt ? s_.ckpt->path + ":/deck (restart)" : deck_path_.empty() ? "(defaults)" : deck_path_));
  if (ranks_ > 1) con_.line(decomposition_line(slab_) + ", exchange " + s_.comm);
  con_.line("case " + c.name + "  solver " + c.solver + "  N " + std::to_string(g_.n) + "  nu " + fmt(init_.nu) +
            "  Re_lambda " + fmt(s0_.Re_lambda, 4) + "  u' " + fmt(s0_.u_prime, 4) + "  L " + fmt(s0_.L, 4) +
            "  T " + fmt(T0_, 4) + "  t_end " + fmt(t_end_, 4));
  for (const std::string& l : memory_lines(s_.mem, s_.backend, s_.host_mem, s_.gpu_mem)) con_.line(l);
}

/// The solvers the deck asks for, with ν of the initial field.
void Run::make_solvers() {
  RunConfig& c = s_.cfg;
  if (runs_spectral(c.solver)) {
    c.spectral.nu = init_.nu;
    solvers_.push_back(make_spectral(c.spectral, slab_, s_.backend));
  }
  if (runs_vortex(c.solver)) {
    c.vortex.nu = init_.nu;
    solvers_.push_back(make_vortex(c.vortex, slab_, s_.backend));
    con_.line(std::string("vortex   viscous term: ") + vortex::diffusion_name(c.vortex.diffusion) +
              " (vortex.diffusion; auto picks integrating-factor where reinit_every = 1 and reinit_from = points, "
              "else lattice)");
    if (c.vortex.velocity == vortex::Velocity::lattice)
      con_.line("vortex   u and grad u by FFTs of the lattice strengths (vortex.velocity = lattice; the FMM only where "
                "particles are off the lattice)");
    else
      con_.line(fmm_line(c.vortex.fmm.resolved(), s_.backend, s_.m2l_lists));
  }
}

bool Run::field_due(double t) const {
  return std::any_of(field_t_.begin(), field_t_.end(), [&](double f) { return near(f, t, t_end_); });
}

void Run::start() {
  if (s_.ckpt)
    restart_from_checkpoint();
  else
    start_from_initial_field();
  on_root(world_, [&] { rf_->write(); });
  report_resolution();
}

/// The banner's resolution line: k_max η at t = 0 of the initial field and of every solver, from
/// their first rows in run.h5 (on a restart too); then the warning for a solver below 1 at its
/// last output.
void Run::report_resolution() {
  std::string line = "resolution k_max eta at t = 0:";
  auto part = [&](const std::string& name) {
    const auto& se = rf_->data().solvers.at(name).series;
    const bool known = se.count("kmax_eta") && !se.at("kmax_eta").empty();
    line += std::string(line.back() == ':' ? " " : ", ") + name + " " +
            (known ? fmt(se.at("kmax_eta")[0], 3) + " (k_max " + fmt(se.at("kmax")[0], 4) + ")" : "n/a");
  };
  part("initial");
  for (const auto& st : solvers_) part(st->name());
  con_.line(line + "; eta = (nu^3/eps)^1/4 from each one's eps, k_max its largest wavenumber kept");
  for (const auto& st : solvers_) {
    const auto& se = rf_->data().solvers.at(st->name()).series;
    if (se.count("kmax_eta")) last_[st->name()].kmax_eta = se.at("kmax_eta").back();
    check_resolution(*st);
  }
}

/// The first output of this process at which a solver's k_max η is below 1: one warning line.
void Run::check_resolution(const Stepper& st) {
  Last& l = last_[st.name()];
  if (!(l.kmax_eta < 1) || l.under_resolved) return;
  l.under_resolved = true;
  con_.line("warning  " + st.name() + " k_max eta " + fmt(l.kmax_eta, 3) + " < 1 at t/T = " + fmt(st.time() / T0_, 4) +
            " (k_max " + fmt(st.kmax(), 4) + "): the dissipation range is not resolved; " + st.resolution_advice());
}

/// A restart makes the initial field of its deck again for T and the guards' first speed: with
/// another flow.spectrum, k_p or u_prime that field is not the run's, and every t/T (the end
/// asked for, the fields' times, the progress) would be in another unit than run.h5's. K₀ and T₀
/// against run.h5's initial record; another viscosity (flow.Re_lambda) leaves both as they are.
void Run::check_same_flow(const RunData& data) const {
  if (!data.solvers.count("initial")) return;
  const auto& se = data.solvers.at("initial").series;
  if (!se.count("K") || !se.count("T") || se.at("K").empty() || se.at("T").empty()) return;  // nothing to compare
  const double K = se.at("K").front(), T = se.at("T").front();
  const auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::fabs(b); };
  if (!near(s0_.K, K) || !near(T0_, T))
    throw InputError(s_.ckpt->path + ": the restart's initial field is not the run's (K " +
                     fmt(s0_.K, 6) + " and T " + fmt(T0_, 6) + " against " + run_h5_ + "'s " + fmt(K, 6) + " and " +
                     fmt(T, 6) + "; allowed: the run's flow.spectrum, flow.k_p and flow.u_prime; flow.Re_lambda " +
                     "may change the viscosity)");
}

/// Continue: the solvers' states from the checkpoint, the series from run.h5 trimmed to each
/// solver's checkpoint time, fields files numbered on from the checkpoint's.
void Run::restart_from_checkpoint() {
  const CheckpointHeader& ckpt = *s_.ckpt;
  load_checkpoint(ckpt, solvers_, speed_cap(s_.cfg, g_.h(), initial_max_speed()));
  RunData data = RunFile::read(run_h5_, /*require_seal=*/true);
  for (auto& st : solvers_) {
    check_restart_record(data, run_h5_, st->name(), st->time());
    trim_after(data.solvers.at(st->name()), st->time() * (1 + 1e-12));
    add_resolution_columns(data.solvers.at(st->name()), st->kmax(), init_.nu);
  }
  if (data.solvers.count("initial")) add_resolution_columns(data.solvers.at("initial"), g_.kmax(), init_.nu);
  check_checkpoint_times(ckpt, data);
  check_same_flow(data);
  double t_ckpt = 0;  // the latest solver's (a guard's checkpoint may hold them a little apart)
  for (const auto& st : solvers_) t_ckpt = std::max(t_ckpt, st->time());
  // A finished run (t_ckpt = t_end) continues to its end: nothing to do. The end may come from
  // the command line or from the stored deck: say which.
  if (t_ckpt > t_end_ * (1 + 1e-12))
    throw InputError(ckpt.path + ": the run is at t/T " + fmt(t_ckpt / T0_, 6) + ", past the end t/T " +
                     fmt(t_end_ / T0_, 6) + " (" +
                     s_.opts.where(std::isnan(s_.cfg.t_end) ? "time.t_end_over_T" : "time.t_end") +
                     ") (allowed: an end at or after the checkpoint's, time.t_end_over_T or time.t_end)");
  for (auto& st : solvers_) {
    const auto& se = data.solvers.at(st->name()).series;
    const auto& K = se.at("K");
    last_[st->name()] = {K.back(), se.at("epsilon").back(), se.at("Re_lambda").back(),
                         *std::min_element(K.begin(), K.end())};
  }
  // One line a restart, the earlier ones kept: how each part of the series was run.
  std::string& restarts = data.meta["restarted_from"];
  restarts += (restarts.empty() ? "" : "\n") + ckpt.path + " at " + now_iso() + " by: " + args_ +
              (ranks_ > 1 ? " (" + std::to_string(ranks_) + " ranks)" : "");
  rf_ = std::make_unique<RunFile>(run_h5_, std::move(data));
  field_index_ = ckpt.field_index;
  on_root(world_, [&] { remove_fields_from(s_.cfg.out_dir, field_index_); });
  last_good_ = ckpt.path;
  con_.line("restart from " + ckpt.path);
}

/// max over the grid points and components of |u_i| of the initial field, on every rank: the
/// first step's, which the stall guard measures against (speed_cap). One component at a time on
/// this rank's planes: one grid array, within the statistics' work arrays of the memory
/// estimate, which are not in use before the first output.
double Run::initial_max_speed() {
  std::vector<double> ui(slab_.local_points());
  double m = 0;
  for (int c = 0; c < 3; ++c) {
    fft_.inverse(init_.u.c[c].data(), ui.data());
    for (double v : ui) m = std::max(m, std::abs(v));
  }
  return world_.max(m);
}

/// The solvers' times and step counts against each other and against run.h5 (trimmed to each
/// solver's time): the solvers advance to each output in turn, so a checkpoint, written at an
/// output or by a guard during the interval after one, holds times within one output interval
/// of each other and of each solver's last output, and a step count equal to that output's
/// (at it) or larger (after it). The interval is the longer of the checkpoint's deck's and the
/// restart's (an override may shorten it).
void Run::check_checkpoint_times(const CheckpointHeader& ckpt, const RunData& data) const {
  const double interval =
      std::max(out_dt_, output_interval(make_config(deck_path_, parse_deck(ckpt.deck, ckpt.path + ":/deck", {})), T0_));
  const double slack = interval * (1 + 1e-9);
  auto attribute = [&](const Stepper& st, const char* name, double v) {
    return ckpt.path + ":/" + st.name() + ": attribute " + name + " = " + fmt(v, 17);
  };
  const std::string allowed = " (allowed: within one output interval, " + fmt(interval) +
                              ": each solver advances to the next output in turn)";
  for (std::size_t i = 1; i < solvers_.size(); ++i) {
    const Stepper &a = *solvers_[0], &b = *solvers_[i];
    if (!(std::abs(b.time() - a.time()) <= slack))
      throw InputError(attribute(b, "t", b.time()) + " is more than one output interval from /" + a.name() +
                       " attribute t = " + fmt(a.time(), 17) + allowed);
  }
  for (const auto& st : solvers_) {
    const auto& se = data.solvers.at(st->name()).series;
    const double t_row = se.at("t").back();
    const long step_row = long(se.at("step").back());
    const std::string row = run_h5_ + ":/" + st->name() + "/series";
    if (!(st->time() - t_row <= slack))
      throw InputError(attribute(*st, "t", st->time()) +
                       " is more than one output interval after the solver's last output (" +
                       row + "/t = " + fmt(t_row, 17) + ")" + allowed);
    // At its last output (the same t) a solver has that output's step count, after it more.
    if (t_row >= st->time() ? step_row != st->steps() : step_row >= st->steps())
      throw InputError(attribute(*st, "steps", double(st->steps())) + " disagrees with " + row + "/step = " +
                       std::to_string(step_row) + " at t = " + fmt(t_row, 17) +
                       " (allowed: that output's step count at its t, more after it)");
  }
}

/// run.h5:/meta of a new run.
std::map<std::string, std::string> Run::meta() const {
  return {{"version", VH_VERSION},
          {"git_hash", VH_GIT_HASH},
          {"build_type", VH_BUILD_TYPE},
          {"compiler", VH_COMPILER},
          {"cuda_version", VH_CUDA_VERSION},
          {"device", device_},
          {"ranks", std::to_string(ranks_)},
          {"comm", s_.comm},
          {"start_time", now_iso()},
          {"deck_path", deck_path_},
          {"argv", args_}};
}

/// A new run: the initial field's row and spectrum, then every solver started from it with
/// its first row (and the fields at t = 0 when asked for).
void Run::start_from_initial_field() {
  rf_ = std::make_unique<RunFile>(run_h5_);
  rf_->set_deck(deck_text(s_.opts));
  rf_->set_meta(meta());
  rf_->append_series("initial", series_row(0.0, 0, 0.0, s0_, g_.kmax(), init_.nu));
  rf_->append_spectrum("initial", 0.0, energy_spectrum(init_.u));
  // With no solver to run, the initial field's own fields are the output.
  if (s_.cfg.solver == "initial" && field_due(0.0)) {
    const GridFields f = grid_fields(init_.u, fft_);
    write_fields(s_.cfg.out_dir, int(field_index_++), 0.0, {{"initial", f.set(0)}}, slab_);
  }
  // The solvers start from the same field.
  std::map<std::string, GridFields> fields;
  for (auto& st : solvers_) {
    st->start(init_.u, 0.0);
    st->velocity(u_);
    const Statistics s = statistics(u_, init_.nu, fft_);
    if (st->name() == "vortex") {  // the particles carry the initial field's modes that the solver keeps
      SpectralSlab carried = init_.u;
      vortex::keep_carried_modes(s_.cfg.vortex, carried);
      con_.line("vortex   initial particles: K " + fmt(s.K / s0_.K, 6) +
                " of the initial field's (the modes the lattice and its filter keep); their grid velocity vs "
                "those modes, rel. L2 " + fmt(relative_l2(u_, carried), 3));
    }
    record(*rf_, *st, s, 0.0, energy_spectrum(u_), init_.nu);
    if (const std::string l = st->log_line(); !l.empty()) con_.line(l);
    if (field_due(0.0)) fields[st->name()] = grid_fields(u_, fft_);
    last_[st->name()] = {s.K, s.epsilon, s.Re_lambda, s.K};
  }
  if (!fields.empty()) write_field_sets(s_.cfg.out_dir, int(field_index_++), 0.0, fields, solvers_, slab_);
}

void Run::advance_to_end() {
  try {
    advance_outputs();
    final_checkpoint();
  } catch (const OutOfMemory& e) {
    out_of_memory(e.what(), true);
  } catch (const DeviceFault& e) {
    device_fault(e.what());
  } catch (const std::bad_alloc&) {
    out_of_memory(kHostRefused, false);
  }
}

void Run::advance_outputs() {
  last_ckpt_ = std::chrono::steady_clock::now();
  for (double stop : stop_times(t_end_, out_dt_, field_t_)) {
    std::map<std::string, GridFields> fields;
    for (auto& st : solvers_) {
      const bool past = rf_->data().solvers.at(st->name()).series.at("t").back() >= stop - 1e-9 * t_end_;
      if (past) continue;  // restarted past it
      const double dt = advance(*st, stop);
      output(*st, dt, fields);
    }
    {
      const PhaseTimer timer(phases_["fields (velocity, vorticity, Q) and their files"]);
      if (!fields.empty()) write_field_sets(s_.cfg.out_dir, int(field_index_++), stop, fields, solvers_, slab_);
    }
    {
      const PhaseTimer timer(phases_["run.h5 and checkpoints"]);
      on_root(world_, [&] { rf_->write(); });
    }
    checkpoint_if_due();
  }
}

/// Steps `st` to `stop` in equal steps no longer than the stable one (no sliver steps),
/// checking the guards at every step; returns the last step (0 when none was needed).
double Run::advance(Stepper& st, double stop) {
  const std::string name = st.name();
  con_.reset_rate();
  double dt = 0.0, t = st.time();
  while (t < stop && !near(t, stop, t_end_)) {
    dt = stable_dt(st);
    dt = (stop - t) / std::ceil((stop - t) / dt * (1 - 1e-12));
    {
      const PhaseTimer timer(phases_[name + " steps"]);
      st.step(dt);
    }
    t = st.time();
    if (!std::isfinite(t))
      stop_broken(name + ": t = " + fmt(t) + " is not finite after step " + std::to_string(st.steps()) + " (dt = " +
                  fmt(dt, 3) + ")");
    ++steps_since_ckpt_;
    if (const std::string e = st.event(); !e.empty()) con_.line(e);
    con_.progress(name, st.steps(), t, T0_, dt, last_[name].K / s0_.K, last_[name].Re_lambda, last_[name].kmax_eta,
                  t_end_);
    check_stop_requests(st);
  }
  return dt;
}

/// The step of the CFL number (or time.dt), after the guards on it: the run stops with a
/// checkpoint on a CFL number above time.max_cfl or a step that collapsed below
/// time.stall_fraction of this process's first one, and keeping the last good checkpoint
/// (stop_broken) on a non-finite velocity or a flow at rest (no finite CFL step).
double Run::stable_dt(Stepper& st) {
  const RunConfig& c = s_.cfg;
  const std::string name = st.name();
  double umax = 0;
  {
    const PhaseTimer timer(phases_[name + " steps"]);  // the right-hand side, if not yet known
    umax = st.max_velocity();
  }
  const std::string where = " at step " + std::to_string(st.steps()) + ", t = " + fmt(st.time());
  if (!std::isfinite(umax)) stop_broken(name + ": max|u| is not finite" + where);
  double dt = std::isnan(c.dt) ? c.cfl * g_.h() / umax : c.dt;
  if (std::isnan(c.dt) && c.lcfl > 0) {  // the Lagrangian CFL number, where the solver has one
    const PhaseTimer timer(phases_[name + " steps"]);
    const double gmax = st.max_gradient();
    if (gmax > 0) dt = std::min(dt, c.lcfl / gmax);
  }
  // A flow at rest (max|u| = 0, or so small that h / max|u| overflows) has no CFL step: its
  // time would jump to infinity.
  if (!std::isfinite(dt))
    stop_broken(name + ": the CFL step dt = time.cfl h / max|u| is not finite (max|u| = " + fmt(umax, 3) +
                "): the flow has come to rest" + where);
  if (umax * dt / g_.h() > c.max_cfl)
    stop(name + ": CFL number " + fmt(umax * dt / g_.h(), 3) + " > time.max_cfl = " + fmt(c.max_cfl, 3) + where);
  // A CFL step that collapses means the velocity grew without bound: stop rather than creep.
  Last& l = last_[name];
  if (l.first_dt == 0) l.first_dt = dt;
  if (dt < c.stall_fraction * l.first_dt)
    stop(name + ": the run has stalled: dt = " + fmt(dt, 3) + " is below time.stall_fraction = " +
         fmt(c.stall_fraction, 3) + " of the first step's " + fmt(l.first_dt, 3) + " (max|u| = " + fmt(umax, 3) +
         ")" + where);
  return dt;
}

/// After every step: a signal or a STOP file in the run folder stops the run with a
/// checkpoint; a run folder gone stops it without one. A signal reaches the ranks it reaches,
/// the STOP file is looked for by rank 0: the decision to stop is shared (one reduction per
/// step on R ranks, none on one).
void Run::check_stop_requests(const Stepper& st) {
  const std::string after = "after step " + std::to_string(st.steps()) + ", t = " + fmt(st.time());
  std::error_code ec;
  const int sig = ranks_ > 1 ? int(world_.max(double(g_signal))) : int(g_signal);
  if (sig != 0)
    stop(st.name() + ": " + (sig == SIGINT ? "SIGINT" : sig == SIGUSR1 ? "SIGUSR1" : "SIGTERM") +
         " received, stopped " + after);
  if (world_.any(world_.root() && fs::exists(stop_file_, ec))) {
    if (world_.root()) fs::remove(stop_file_, ec);
    stop(st.name() + ": STOP file found, stopped " + after);
  }
  if (world_.any(world_.root() && !fs::is_directory(s_.cfg.out_dir, ec)))
    throw RunStopped(st.name() + ": the run folder " + s_.cfg.out_dir +
                     " was deleted or moved away during the run (found " + after +
                     "); stopped without writing anything (its checkpoint, if any, went with it)");
}

/// The statistics and spectrum E of `st`'s velocity where its state lives when the solver can
/// (no host copy), else on the host from the velocity on the grid (u_); the host copy is made
/// anyway when fields are due.
Statistics Run::measure(Stepper& st, std::vector<double>& E) {
  const std::string name = st.name();
  Statistics s;
  bool in_place;
  {
    const PhaseTimer timer(phases_[name + " statistics and spectrum"]);
    in_place = st.statistics_in_place(init_.nu, s, E);
  }
  if (!in_place) {
    {
      const PhaseTimer timer(phases_[name + " velocity on the grid"]);
      st.velocity(u_);
    }
    const PhaseTimer timer(phases_[name + " statistics and spectrum"]);
    s = statistics(u_, init_.nu, fft_);
    E = energy_spectrum(u_);
  } else if (field_due(st.time())) {
    const PhaseTimer timer(phases_[name + " velocity on the grid"]);
    st.velocity(u_);
  }
  return s;
}

/// One output of `st` after a last step `dt`: its row and spectrum in run.h5, the energy
/// balance line, the guards on K, and its fields (into `fields`) when due.
void Run::output(Stepper& st, double dt, std::map<std::string, GridFields>& fields) {
  const std::string name = st.name();
  const double t = st.time();
  std::vector<double> E;
  const Statistics s = measure(st, E);
  const std::string where = " at step " + std::to_string(st.steps()) + ", t = " + fmt(t);
  if (!std::isfinite(s.K)) stop_broken(name + ": K is not finite" + where);
  if (s.K <= kCollapsedEnergy * s0_.K)
    stop_broken(name + ": K = " + fmt(s.K, 3) + " has collapsed to zero (K/K0 = " + fmt(s.K / s0_.K, 3) +
                " <= 2.2e-16^2: the velocity is below the round-off of the initial one)" + where);
  // Energy balance between outputs: −dK/dt against the mean of ε at both ends.
  const double t_prev = rf_->data().solvers.at(name).series.at("t").back();
  con_.line(name + " energy balance t/T " + fmt(t / T0_, 4) + "  -dK/dt " +
            fmt(-(s.K - last_[name].K) / (t - t_prev), 6) + "  eps " + fmt(0.5 * (s.epsilon + last_[name].epsilon), 6));
  {
    const PhaseTimer timer(phases_[name + " monitors and run.h5 rows"]);
    record(*rf_, st, s, dt, E, init_.nu);
  }
  if (const std::string l = st.log_line(); !l.empty()) con_.line(l);
  check_energy_rise(st, s);  // after the row is in run.h5, so that the rise can be seen there
  if (field_due(t)) {
    const PhaseTimer timer(phases_["fields (velocity, vorticity, Q) and their files"]);
    fields[name] = grid_fields(u_, fft_);
  }
  Last& l = last_[name];
  l.K = s.K, l.epsilon = s.epsilon, l.Re_lambda = s.Re_lambda, l.K_min = std::min(l.K_min, s.K);
  l.kmax_eta = rf_->data().solvers.at(name).series.at("kmax_eta").back();
  con_.progress(name, st.steps(), t, T0_, dt, s.K / s0_.K, s.Re_lambda, l.kmax_eta, t_end_, true);
  check_resolution(st);
}

/// The flow is unforced, so K can only decay: a rise above time.max_energy_rise over its
/// running minimum stops the run with a checkpoint.
void Run::check_energy_rise(const Stepper& st, const Statistics& s) {
  const std::string name = st.name();
  const double K_min = last_[name].K_min, limit = s_.cfg.max_energy_rise;
  if (s.K > (1 + limit) * K_min)
    stop(name + ": K = " + fmt(s.K) + " rose " + fmt(100 * (s.K / K_min - 1), 3) + " % above its running minimum " +
         fmt(K_min) + " (time.max_energy_rise = " + fmt(limit, 3) + "); the flow is unforced, so K can only decay: " +
         energy_rise_cause(name) + "; at step " + std::to_string(st.steps()) + ", t = " + fmt(st.time()));
}

/// A checkpoint every output.checkpoint_every steps or output.checkpoint_minutes minutes, at
/// the first output past either.
void Run::checkpoint_if_due() {
  const RunConfig& c = s_.cfg;
  // rank 0's clock decides (the ranks' clocks differ)
  double minutes = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_ckpt_).count() / 60;
  world_.bcast(&minutes, sizeof minutes);
  if ((c.checkpoint_every > 0 && steps_since_ckpt_ >= c.checkpoint_every) ||
      (c.checkpoint_minutes > 0 && minutes >= c.checkpoint_minutes)) {
    const PhaseTimer timer(phases_["run.h5 and checkpoints"]);
    write_checkpoint(c.out_dir, deck_, field_index_, solvers_, world_);
    last_good_ = (fs::path(c.out_dir) / "checkpoint.h5").string();
    steps_since_ckpt_ = 0;
    last_ckpt_ = std::chrono::steady_clock::now();
  }
}

/// A guard stops the run: a checkpoint, run.h5 as far as it got, RunStopped (exit 3).
/// Collective: every rank decides the same.
void Run::stop(const std::string& why) {
  write_checkpoint(s_.cfg.out_dir, deck_, field_index_, solvers_, world_);
  on_root(world_, [&] { rf_->write(); });
  throw RunStopped(why + "; checkpoint " + (fs::path(s_.cfg.out_dir) / "checkpoint.h5").string() +
                   " (the one before: checkpoint_prev.h5)");
}

/// A guard stops a run whose state is broken (not finite, or a flow collapsed to rest): that
/// state is not saved (a restart could not continue it, and it would push the last good
/// checkpoint aside), run.h5 is; RunStopped (exit 3) names the last good checkpoint.
/// Collective: every rank decides the same.
void Run::stop_broken(const std::string& why) {
  on_root(world_, [&] { rf_->write(); });
  throw RunStopped(why + "; this state is not saved: " + last_good_note());
}

std::string Run::last_good_note() const {
  if (last_good_.empty()) return "no checkpoint had been written yet (output.checkpoint_every)";
  return "the last good checkpoint is " + last_good_ + " (continue with `vortexhit run --restart " + last_good_ + "`)";
}

/// Where the solvers are: "vortex at step 12 (t/T 0.11), spectral at step 9 (t/T 0.1)".
std::string Run::steps_at() const {
  std::string at;
  for (const auto& st : solvers_)
    at += (at.empty() ? "" : ", ") + st->name() + " at step " + std::to_string(st->steps()) + " (t/T " +
          fmt(st->time() / T0_, 4) + ")";
  return at;
}

/// A state that this rank lost after the steps began (the step it broke off may have left it
/// half-updated, or the GPU holding it failed): it stops as stop_broken does (exit 3, the last
/// good checkpoint named). On R ranks the others may be waiting for this one in a collective:
/// it says why on its own and ends them all with status 3 (run.h5 and the checkpoints stay as
/// the last output and checkpoint wrote them). Such a collective may be a checkpoint or fields
/// file that rank 0 is writing under its temporary name; the abort kills rank 0 inside it, so
/// this rank removes the run folder's temporaries first (where it sees that folder).
void Run::stop_lost(const std::string& why) {
  if (ranks_ == 1) stop_broken(why);
  std::cerr << "vortexhit: stopped on rank " << world_.rank() << ": " << why << "; this state is not saved: "
            << last_good_note() << std::endl;
  h5::remove_temporaries(s_.cfg.out_dir);
  world_.abort(3);
}

/// An allocation that the machine refused after the steps began (vh::OutOfMemory from the GPU,
/// std::bad_alloc from the host).
void Run::out_of_memory(const std::string& what, bool gpu) {
  const std::string at = steps_at();
  const bool several_ranks = ranks_ > 1;
  stop_lost("out of memory" + (at.empty() ? "" : ", " + at) + ": " + what + "; the memory check estimated " +
            format_bytes(gpu ? s_.mem.device_bytes() : s_.mem.host_bytes()) +
            (gpu ? " of GPU memory" : " of host memory") + (several_ranks ? " a rank" : "") +
            ", so other processes took memory since it ran, or the run needs more than its estimate: run it where "
            "more is free (more GPUs or nodes, fewer ranks a GPU or node)");
}

/// A sticky CUDA error after the steps began (vh::DeviceFault): the GPU failed, its driver did,
/// or a kernel faulted; nothing more can be read from it.
void Run::device_fault(const std::string& what) {
  const std::string at = steps_at();
  stop_lost("GPU fault" + (at.empty() ? "" : ", " + at) + ": " + what +
            "; the GPU's state is lost (the GPU or its driver failed, or a kernel faulted: the system log's "
            "NVIDIA Xid lines say which)");
}

void Run::final_checkpoint() {
  if (solvers_.empty()) return;
  const PhaseTimer timer(phases_["run.h5 and checkpoints"]);
  write_checkpoint(s_.cfg.out_dir, deck_, field_index_, solvers_, world_);
}

void Run::report(std::chrono::steady_clock::time_point wall0) {
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  time_table(wall);
  con_.line(memory_used());
  const std::string sum = summary(wall);
  on_root(world_, [&] { h5::atomic_write_text((fs::path(s_.cfg.out_dir) / "summary.txt").string(), sum); });
  con_.line("done in " + format_duration(wall) + " (" + fmt(wall, 3) + " s): " + s_.cfg.out_dir +
            "/{run.h5, summary.txt, fields*.h5, fields.xdmf, checkpoint.h5, log.txt}");
}

/// Time per phase: where the wall time went.
void Run::time_table(double wall) {
  double accounted = 0;
  for (const auto& [phase, sec] : phases_) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "time  %-52s %9.2f s  %5.1f %%", phase.c_str(), sec, 100 * sec / wall);
    con_.line(buf);
    accounted += sec;
  }
  char other[160];
  std::snprintf(other, sizeof other, "time  %-52s %9.2f s  %5.1f %%",
                "start-up (initial field, solver set-up) and rest",
                wall - accounted, 100 * (wall - accounted) / wall);
  con_.line(other);
}

/// What the run held, against the estimate it was admitted with (calibration of memory_estimate).
std::string Run::memory_used() const {
  std::string used = "memory   host peak RSS " + format_bytes(peak_rss_bytes()) + " (estimated " +
                     format_bytes(s_.mem.host_bytes()) + ")";
  std::size_t gpu_free = 0, gpu_total = 0;
  // The in-use figure is the device's: where ranks share it, theirs together against one rank's estimate.
  const bool shared = s_.cfg.share_gpus && world_.size() > 1;
  if (s_.backend == Backend::gpu && gpu_memory(gpu_free, gpu_total))
    used += ", GPU in use at the end " + format_bytes(double(gpu_total - gpu_free)) +
            (shared ? " by every rank sharing this GPU" : "") + " (estimated " + format_bytes(s_.mem.device_bytes()) +
            (shared ? " a rank" : "") + " and the CUDA context)";
  return used;
}

/// summary.txt: the case, the initial field's statistics, each solver's steps and final K/K0.
std::string Run::summary(double wall) const {
  const RunConfig& c = s_.cfg;
  std::ostringstream sum;
  sum << "case        " << c.name << "\nsolver      " << c.solver << "\nN           " << g_.n
      << "\ndevice      " << device_ << "\nK0          " << fmt(s0_.K, 10) << "\nu_prime     "
      << fmt(s0_.u_prime, 10) << "\nL           " << fmt(s0_.L, 10) << "\nT           " << fmt(T0_, 10)
      << "\nlambda      " << fmt(s0_.lambda, 10) << "\nRe_lambda   " << fmt(s0_.Re_lambda, 10)
      << "\nnu          " << fmt(init_.nu, 10) << "\nt_end       " << fmt(t_end_, 10) << "\n";
  // "spectral.steps  120": the key padded to 12 columns (at least one space).
  auto key = [](const std::string& k) { return k + std::string(std::max<int>(1, 12 - int(k.size())), ' '); };
  for (const auto& st : solvers_) {
    const std::string name = st->name();
    sum << key(name + ".steps") << st->steps() << "\n" << key(name + ".K/K0") << fmt(last_.at(name).K / s0_.K, 10)
        << "\n";
    // The resolution: k_max, and k_max η at the end and at its smallest over the run's outputs.
    const auto& se = rf_->data().solvers.at(name).series;
    if (se.count("kmax_eta") && !se.at("kmax_eta").empty()) {
      const auto& ke = se.at("kmax_eta");
      sum << key(name + ".kmax") << fmt(st->kmax(), 10) << "\n"
          << key(name + ".kmax_eta") << fmt(ke.back(), 6) << "\n"
          << key(name + ".kmax_eta_min") << fmt(*std::min_element(ke.begin(), ke.end()), 6) << "\n";
    }
  }
  sum << "wall_s      " << fmt(wall, 4) << "\n";
  if (ranks_ > 1) sum << "ranks       " << ranks_ << "\n";
  return sum.str();
}

}  // namespace

/// An allocation that the machine refused before the first step: the run does not fit where it
/// was started, although its memory check admitted it (other processes took memory since, or
/// the run needs more than its estimate). Exit 2, as the check itself would have; on R ranks
/// this one says so and ends them all (the others may be waiting for it in a collective).
[[noreturn]] static void does_not_fit(const std::string& what) {
  const std::string line = "the run does not fit in the memory free here: " + what +
                           " (allowed: a run whose memory is free: a smaller domain.n, or more GPUs or nodes)";
  const Comm world = Comm::world();
  if (world.size() == 1) throw InputError(line);
  std::cerr << "vortexhit: error on rank " << world.rank() << ": " << line << std::endl;
  world.abort(2);
}

static int run_case(const std::string& deck_path, const std::vector<std::string>& overrides, bool quiet,
                    const std::string& restart, const std::vector<std::string>& argv, bool dry_run) {
  const auto wall0 = std::chrono::steady_clock::now();
  // Guards: a signal or a STOP file in the run folder ends the run after the current step
  // with a checkpoint (exit 3), as do a CFL number above max_cfl, a stalled step and a rise
  // of K; a non-finite velocity, time or K and a collapsed K end it keeping the last good one.
  catch_signals();
  const Comm world = Comm::world();
  Setup setup = configure(deck_path, overrides, restart, world);
  if (dry_run_or_check_memory(setup, world, dry_run)) return 0;
  prepare_run_folder(setup, world);
  Run r(std::move(setup), world, quiet, deck_path, argv);
  r.start();
  r.advance_to_end();
  release_signals();
  r.report(wall0);
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
  } catch (const OutOfMemory& e) {  // the steps' own are Run::out_of_memory's (exit 3)
    does_not_fit(e.what());
  } catch (const std::bad_alloc&) {
    does_not_fit(kHostRefused);
  }
}

}  // namespace vh::app
