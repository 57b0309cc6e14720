// vortex_step_bench: the vortex solver with its state on the GPU (vortex/solver_gpu.h) per step,
// at start-up and per output, on the physics of inputs/sc09_256.ini (k⁴ exp spectrum, k_p 4,
// u' 1, Re_λ 100, CFL 0.5).
//
// Per size N (particles on the refine·N lattice), after --warmup steps, the median over --steps
// steps of:
//   step       the wall time of what the run driver does per step: max_velocity() (the FMM
//              evaluation and max |u|) and step(dt), until the device is idle;
//   its split  fmm (evaluate_self, wall; `lattice` with --velocity lattice), update (stretching + AB2 kernel), the
//              reinitialisation's blob sums, FFT steps (cuFFT and per-mode kernels) and rest
//              (layouts, new lattice), all CUDA events; host = step − their sum (launches,
//              waits, the reduction of max |u| and its copy);
//   fmm stages the evaluator's own split (fmm::Timings: tree, lists, upload, near and far field).
// Start-up: the solver's construction (allocations, cuFFT plans) and set_velocity (upload of the
// grid's coefficients, the initial particles), then the first FMM evaluation (with its one-time
// costs). Output (median of 3): the statistics where the state lives (device_velocity() and
// statistics_device, what `vortexhit run` does per output), monitors(), and velocity() to the
// host (what field outputs add). The initial field is made on the host and not timed.
//
//   vortex_step_bench [--n 128,256] [--refine 1] [--steps 5] [--warmup 2] [--tolerance 1e-5]
//                     [--p auto] [--theta auto] [--ncrit auto] [--reinit-every 1] [--velocity fmm|lattice]
//                     [--diffusion auto|integrating-factor|lattice] [--blob-cutoff C] [--csv]
//   --diffusion:      vortex.diffusion (auto, the deck's default: integrating-factor with
//                     --reinit-every 1, else lattice); the table's header and the CSV name it.
//   --blob-cutoff C:  vortex.blob_cutoff, the reinitialisation's blob sums cut off at C σ (the
//                     deck's default unless given); the table's header and the CSV name it.
//   --velocity lattice: u and ∇u by the lattice's FFTs (vortex.velocity = lattice, reinit every
//                     step) instead of the FMM: the column `fmm` is then `lattice` (CSV figure
//                     lattice_velocity) and the FMM stages are zero.
//   mpirun -np R vortex_step_bench …   the solver on R ranks, one GPU each (the node-local rank
//                     picks it; NCCL where the build has it, else MPI): the step is the slowest
//                     rank's, `exchange` the time of its exchanges (the ghosts' exchanges, the
//                     FMM's sum of multipoles, the blob sums' planes; mostly inside fmm and blob
//                     sums), `exch GB` the bytes a rank sends, `max/mean` the load imbalance (the
//                     largest rank's particles over the mean), `src/own` the FMM's sources over
//                     the rank's particles (own and ghosts: the LET's size; R where gathered),
//                     the memory rank 0's;
//                     the output statistics are then those of the driver's host path (velocity
//                     to this rank's slab). --share-gpus: ranks may share a GPU (a smaller
//                     machine: the bytes are those of one GPU a rank, the times are not).
//
// Every size's memory is checked first (bench/memory_check.h): one too large for the GPU is
// refused, exit 2, with the largest --n that fits.
//
// Results: bench/RESULTS.md (device-check.sh vstep).
#include <cuda_runtime.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/args.h"
#include "bench/csv_rows.h"
#include "bench/memory_check.h"
#include "base/comm.h"
#include "base/device_comm.h"
#include "core/device.h"
#include "core/diagnostics.h"
#include "core/fft.h"
#include "core/initial_field.h"
#include "core/slab_copy.h"
#include "spectral/solver.h"
#include "vortex/solver_gpu.h"

#ifndef VH_GIT_HASH
#define VH_GIT_HASH "unknown"
#endif

namespace {

using namespace vh;
using clock_type = std::chrono::steady_clock;

// The deck's default of a key (vortex::option_specs()).
std::string deck_default(const std::string& key) {
  for (const auto& o : vortex::option_specs())
    if (o.key == key) return o.fallback;
  throw std::logic_error("vortex_step_bench: no deck key " + key);
}

struct BenchOptions {
  std::vector<int> n = {128, 256};
  int steps = 5, warmup = 2, reinit_every = 1;
  double refine = 1, tolerance = 1e-5;
  std::string p = "auto";
  std::string theta = "auto";
  std::string ncrit = "auto";
  bool lattice = false;  // --velocity lattice
  std::string diffusion = "auto";
  double blob_cutoff = vortex::Params{}.blob_cutoff;
  std::string m2l = deck_default("fmm.m2l");  // as vortexhit runs it
  bool csv = false;
  bool share_gpus = false;  // --share-gpus: under mpirun, ranks may share a GPU
};

BenchOptions parse(int argc, char** argv) {
  BenchOptions o;
  for (vh::bench::Args a(argc, argv); a.next();) {
    if (a.is("--n")) o.n = a.integers();
    else if (a.is("--refine")) o.refine = a.real();
    else if (a.is("--steps")) o.steps = a.integer();
    else if (a.is("--warmup")) o.warmup = a.integer();
    else if (a.is("--tolerance")) o.tolerance = a.real();
    else if (a.is("--p")) o.p = a.value();
    else if (a.is("--theta")) o.theta = a.value();
    else if (a.is("--ncrit")) o.ncrit = a.value();
    else if (a.is("--reinit-every")) o.reinit_every = a.integer();
    else if (a.is("--velocity")) {
      const std::string v = a.value();
      if (v != "fmm" && v != "lattice") throw std::invalid_argument("--velocity: fmm or lattice");
      o.lattice = v == "lattice";
    } else if (a.is("--diffusion")) {
      o.diffusion = a.value();
      if (o.diffusion != "auto" && o.diffusion != "integrating-factor" && o.diffusion != "lattice")
        throw std::invalid_argument("--diffusion: auto, integrating-factor or lattice");
    } else if (a.is("--blob-cutoff")) o.blob_cutoff = a.real();
    else if (a.is("--m2l")) o.m2l = a.value();
    else if (a.is("--csv")) o.csv = true;
    else if (a.is("--share-gpus")) o.share_gpus = true;
    else if (a.is("--help") || a.is("-h")) {
      std::printf(
          "usage: vortex_step_bench [--n 128,256] [--refine R] [--steps S] [--warmup W] [--tolerance T] "
          "[--p P|auto] [--theta T|auto] [--ncrit N|auto] [--reinit-every K] [--velocity fmm|lattice] "
          "[--diffusion auto|integrating-factor|lattice] [--blob-cutoff C] [--m2l lists|fft] [--csv] "
          "[--share-gpus]\n");
      std::exit(0);
    } else {
      a.unknown();
    }
  }
  for (int n : o.n)
    if (n < 8 || n % 2) throw std::invalid_argument("--n: even sizes >= 8");
  if (o.refine < 1 || o.refine > 8) throw std::invalid_argument("--refine: 1 ... 8");
  if (!(o.blob_cutoff >= 3 && o.blob_cutoff <= 12)) throw std::invalid_argument("--blob-cutoff: 3 ... 12 (sigma)");
  if (o.steps < 1 || o.warmup < 0) throw std::invalid_argument("--steps >= 1, --warmup >= 0");
  if (o.reinit_every < 0) throw std::invalid_argument("--reinit-every: >= 0");
  if (o.lattice && o.reinit_every != 1) throw std::invalid_argument("--velocity lattice needs --reinit-every 1");
  if (o.diffusion == "integrating-factor" && o.reinit_every != 1)
    throw std::invalid_argument("--diffusion integrating-factor needs --reinit-every 1");
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

void sync() {
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA: ") + cudaGetErrorString(e));
}

// The per-step figures, medians over the timed steps: the step's wall time, its phases
// (GpuStepTimes) and the FMM's stages (fmm::Timings).
const char* const kStepFigures[] = {"time_per_step", "fmm",      "update",    "reinit_blob_sums",
                                    "reinit_fft_steps", "reinit_rest", "fmm_tree", "fmm_lists",
                                    "fmm_upload",    "fmm_p2p",  "fmm_m2l",   "fmm_other_far_field"};
constexpr int kSteps = sizeof kStepFigures / sizeof kStepFigures[0];
using StepFigures = std::array<double, kSteps>;

StepFigures step_figures(double wall, const vortex::GpuStepTimes& t) {
  const fmm::Timings& f = t.fmm_stages;
  return {wall, t.velocity, t.update, t.blob_sums, t.fft_steps, t.rest, f.tree, f.traverse, f.upload, f.p2p, f.m2l,
          f.p2m_m2m + f.l2l_l2p};
}

struct Row {
  int n = 0;
  StepFigures step{};
  double host = 0;  // step − its phases
  double exchange = 0;  // R > 1: the step's exchanges (in its phases), slowest rank
  double exchange_gb = 0;  // R > 1: bytes a rank sends a step, the largest, 1e9
  double imbalance = 1;    // the largest rank's particles over the mean
  double sources = 1;      // R > 1: the FMM's sources over the rank's particles, the largest rank's
  double construct = 0, set_velocity = 0, first_eval = 0;
  double out_stats = 0, out_monitors = 0, out_velocity = 0;
  double bytes_per_particle = 0, gpu_used_gib = 0;
  double solver_gib = 0, fmm_gib = 0;  // rank 0's solver arrays and its FMM's pool
  double est_gib = 0, est_fmm_gib = 0;  // rank 0's device estimate (src/app/memory_estimate.h), its FMM's items
  double kept_cells = 1;  // rank 0's FMM: the tree's cells whose expansions it keeps, a share
  int reinits = 0;
};

/// The solver's parameters: the command line's on the deck's defaults.
vortex::Params solver_params(const BenchOptions& o, double nu) {
  vortex::Params p;
  p.nu = nu;
  p.refine = o.refine;
  p.reinit_every = o.reinit_every;
  p.diffusion = o.diffusion == "auto"                 ? vortex::automatic_diffusion(p)
                : o.diffusion == "integrating-factor" ? vortex::Diffusion::integrating_factor
                                                      : vortex::Diffusion::lattice;
  p.velocity = o.lattice ? vortex::Velocity::lattice : vortex::Velocity::fmm;
  p.blob_cutoff = p.rbf.cutoff = o.blob_cutoff;  // as the deck sets both
  p.fmm.tolerance = o.tolerance;
  p.fmm.set("p", o.p);
  p.fmm.set("theta", o.theta);
  p.fmm.set("ncrit", o.ncrit);
  p.fmm.set("m2l", o.m2l);
  p.fmm.periodic = true;
  p.use_gpu = true;
  return p;
}

/// The run whose memory the bench checks and prints: the GPU-resident vortex solver alone at n,
/// on `ranks` ranks.
app::RunConfig estimate_run(const BenchOptions& o, int ranks, int n) {
  app::RunConfig run;
  run.solver = "vortex";
  run.vortex = solver_params(o, 0.0);
  run.ranks = ranks;
  run.n = n;
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession mpi(&argc, &argv);
  const Comm world = Comm::world();
  const int ranks = world.size();
  BenchOptions o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vortex_step_bench: %s\n", e.what());
    return 2;
  }
  if (!world.root() && !std::freopen("/dev/null", "w", stdout)) return 1;
  std::string transport = "none";
  int gpu_ranks = 1;  // the ranks on this rank's GPU
  try {
    if (ranks > 1) {
      gpu_ranks = select_gpus(world, o.share_gpus);
      DeviceComm::configure(world, "auto");
      transport = DeviceComm::name(DeviceComm::configured(world));
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "vortex_step_bench: %s\n", e.what());
    return 2;
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::fprintf(stderr, "vortex_step_bench: no CUDA device\n");
    return 1;
  }
  try {
    // Every size's memory before any runs (bench/memory_check.h).
    for (int n : o.n) {
      char what[64];
      std::snprintf(what, sizeof what, "--n %d --refine %g", n, o.refine);
      bench::require_memory(what, "--n", n, bench::sizes_below(n, 2, 8),
                            [&](int m) { return app::estimate_memory(estimate_run(o, ranks, m), Backend::gpu, false); },
                            Backend::gpu, world, gpu_ranks);
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "vortex_step_bench: %s\n", e.what());
    return 2;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  // The GPUs the ranks ran on: fewer than the ranks with --share-gpus on a smaller machine.
  const int gpus = std::min(ndev, ranks);
  const std::string dev = vh::bench::gpus_device(prop.name, gpus, ranks);
  const char* diffusion = vortex::diffusion_name(solver_params(o, 0.0).diffusion);  // what --diffusion picks
  std::printf(
      "vortex_step_bench: %s, commit %s, %d CPU threads; refine %g, fmm.tolerance %g, p %s, theta %s, ncrit %s, "
      "reinit_every %d, "
      "velocity %s, diffusion %s, blob cut-off %g sigma, fmm.m2l %s, median of %d steps after %d; %d rank%s, transport "
      "%s\n",
      dev.c_str(), VH_GIT_HASH, omp_get_max_threads(), o.refine, o.tolerance, o.p.c_str(), o.theta.c_str(),
      o.ncrit.c_str(), o.reinit_every, o.lattice ? "lattice" : "fmm", diffusion, o.blob_cutoff, o.m2l.c_str(), o.steps,
      o.warmup, ranks, ranks == 1 ? "" : gpus < ranks ? "s (GPUs shared: times contended)" : "s (one GPU each)",
      transport.c_str());

  std::vector<Row> rows;
  try {
    for (int n : o.n) {
      Row r;
      r.n = n;
      const Grid g{n};
      InitialFieldSpec spec;  // inputs/sc09_256.ini's flow
      spec.k_p = 4;
      spec.u_prime = 1;
      spec.Re_lambda = 100;
      spec.seed = 1;
      const InitialField f = make_initial_field(spec, g);
      const vortex::Params p = solver_params(o, f.nu);

      std::size_t free0 = 0, total = 0;
      cudaMemGetInfo(&free0, &total);
      const Slab gs = Slab::make(g, spectral::kept_kmax(spectral::Dealias::two_thirds, n), world);
      auto t0 = clock_type::now();
      vortex::GpuSolver s(p, gs);
      sync();
      r.construct = seconds_since(t0);
      t0 = clock_type::now();
      if (ranks > 1) s.set_velocity(restrict_to(f.u, gs), 0.0);
      else s.set_velocity(f.u, 0.0);
      sync();
      r.set_velocity = seconds_since(t0);
      t0 = clock_type::now();
      s.max_velocity();
      r.first_eval = seconds_since(t0);

      std::vector<StepFigures> samples;
      std::vector<double> exchange, exchange_gb, imbalance, sources;
      for (int k = 0; k < o.warmup + o.steps; ++k) {
        world.barrier();
        t0 = clock_type::now();
        const double dt = 0.5 * g.h() / s.max_velocity();
        s.step(dt);
        sync();
        const double wall = world.max(seconds_since(t0));
        const vortex::GpuStepTimes times = s.last_step_times();
        StepFigures fig = step_figures(wall, times);
        for (int c = 1; c < kSteps; ++c) fig[c] = world.max(fig[c]);  // each phase's slowest rank
        if (k >= o.warmup) {
          exchange.push_back(world.max(times.exchange));
          exchange_gb.push_back(world.max(times.exchange_bytes) * 1e-9);
          imbalance.push_back(world.max(double(times.particles)) * ranks / world.sum(double(times.particles)));
          sources.push_back(ranks > 1 && times.particles > 0 ? world.max(double(times.sources) / double(times.particles))
                                                             : 1.0);
        }
        std::printf("  n %d step %d: %.4f s (%s %.4f, update %.4f, blob sums %.4f, fft steps %.4f, rest %.4f), dt %.3g%s\n",
                    n, k + 1, fig[0], o.lattice ? "lattice" : "fmm", fig[1], fig[2], fig[3], fig[4], fig[5], dt,
                    k < o.warmup ? " warm-up" : "");
        std::fflush(stdout);
        if (k >= o.warmup) samples.push_back(fig);
      }
      for (int c = 0; c < kSteps; ++c) {
        std::vector<double> col;
        for (const StepFigures& fig : samples) col.push_back(fig[c]);
        r.step[c] = median(col);
      }
      r.host = r.step[0] - (r.step[1] + r.step[2] + r.step[3] + r.step[4] + r.step[5]);
      r.exchange = median(exchange);
      r.exchange_gb = median(exchange_gb);
      r.imbalance = median(imbalance);
      r.sources = median(sources);
      r.reinits = int(s.reinits());
      // After the steps: some buffers are allocated by the first step (the integrating factor's).
      const double particles = double(g.points()) * o.refine * o.refine * o.refine;
      r.bytes_per_particle = double(s.device_bytes()) / particles;
      r.solver_gib = double(s.device_bytes()) / double(1 << 30);
      r.fmm_gib = double(s.fmm_device_bytes()) / double(1 << 30);
      const app::MemoryEstimate e = app::estimate_memory(estimate_run(o, ranks, n), Backend::gpu, false);
      r.est_gib = e.device_bytes() / double(1 << 30);
      for (const app::MemoryItem& i : e.device)
        if (i.what.rfind("FMM ", 0) == 0) r.est_fmm_gib += i.bytes / double(1 << 30);
      if (s.last_timings().cells > 0)
        r.kept_cells = double(s.last_timings().expansion_cells) / double(s.last_timings().cells);
      std::size_t free1 = 0;
      cudaMemGetInfo(&free1, &total);
      r.gpu_used_gib = double(free0 - free1) / double(1 << 30);

      std::vector<double> stats, mon, vel;
      DeviceStatistics device_stats(gs);
      for (int k = 0; k < 3; ++k) {
        t0 = clock_type::now();
        const void* d[3];
        Statistics st;
        std::vector<double> E;
        if (!s.device_velocity(d)) throw std::logic_error("the GPU solver's velocity is not on the device");
        st = device_stats(d, f.nu, E);
        stats.push_back(world.max(seconds_since(t0)));
        if (k == 0) std::printf("  n %d: K %.6f eps %.6f Re_lambda %.2f at t %.4f\n", n, st.K, st.epsilon, st.Re_lambda, s.time());
        t0 = clock_type::now();
        s.monitors();
        mon.push_back(world.max(seconds_since(t0)));
        t0 = clock_type::now();
        SpectralSlab u(gs);
        s.velocity(u);
        vel.push_back(world.max(seconds_since(t0)));
      }
      r.out_stats = median(stats);
      r.out_monitors = median(mon);
      r.out_velocity = median(vel);
      rows.push_back(r);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vortex_step_bench: %s\n", e.what());
    return 1;
  }

  std::printf("\nper step [s] (median; on R ranks each the slowest rank's): step = fmm + update + reinit (blob sums, "
              "fft steps, rest) + host\n");
  std::printf("%6s %6s %8s %8s %8s %9s %9s %8s %8s %8s %9s %8s %8s %8s\n", "N", "ranks", "step",
              o.lattice ? "lattice" : "fmm", "update", "blob sums", "fft steps", "rest", "host", "exchange", "exch GB",
              "max/mean", "src/own", "reinits");
  for (const Row& r : rows)
    std::printf("%6d %6d %8.4f %8.4f %8.4f %9.4f %9.4f %8.4f %8.4f %8.4f %9.3f %8.3f %8.3f %8d\n", r.n, ranks,
                r.step[0], r.step[1], r.step[2], r.step[3], r.step[4], r.step[5], r.host, r.exchange, r.exchange_gb,
                r.imbalance, r.sources, r.reinits);
  std::printf("\nFMM stages [s] (median, fmm::Timings)\n%6s %8s %8s %8s %8s %8s %9s\n", "N", "tree", "lists", "upload",
              "P2P", "M2L", "P2M..L2P");
  for (const Row& r : rows)
    std::printf("%6d %8.4f %8.4f %8.4f %8.4f %8.4f %9.4f\n", r.n, r.step[6], r.step[7], r.step[8], r.step[9],
                r.step[10], r.step[11]);
  std::printf("\nstart-up and output [s]; memory (B/particle: rank 0's solver arrays over every particle; rank 0's\n"
              "solver arrays and its FMM's pool, the share of its tree's cells whose multipoles and locals the\n"
              "FMM keeps; GPU: in use after the steps, every rank's on its GPU; rank 0's estimate, all of it and\n"
              "its FMM's items, the run's memory check's)\n"
              "%6s %9s %9s %9s %10s %9s %9s %10s %10s %9s %9s %9s %9s %9s\n",
              "N", "construct", "set_vel", "1st eval", "out stats", "monitors", "vel host", "B/particle", "solver GiB",
              "FMM GiB", "M,L cells", "GPU GiB", "est GiB", "est FMM");
  for (const Row& r : rows)
    std::printf("%6d %9.4f %9.4f %9.4f %10.4f %9.4f %9.4f %10.1f %10.2f %9.2f %9.3f %9.2f %9.2f %9.2f\n", r.n,
                r.construct, r.set_velocity, r.first_eval, r.out_stats, r.out_monitors, r.out_velocity,
                r.bytes_per_particle, r.solver_gib, r.fmm_gib, r.kept_cells, r.gpu_used_gib, r.est_gib, r.est_fmm_gib);

  if (o.csv) {
    vh::bench::CsvRows csv(std::cout, "vortex_step", dev, VH_GIT_HASH);
    for (const Row& r : rows) {
      char cs[256];
      std::snprintf(cs, sizeof cs,
                    "N=%d refine=%g sc09 flow tol=%g p=%s theta=%s ncrit=%s reinit_every=%d%s diffusion=%s "
                    "blob_cutoff=%g m2l=%s median of %d ranks=%d comm=%s",
                    r.n, o.refine, o.tolerance, o.p.c_str(), o.theta.c_str(), o.ncrit.c_str(), o.reinit_every,
                    o.lattice ? " velocity=lattice" : "", diffusion, o.blob_cutoff, o.m2l.c_str(), o.steps, ranks,
                    transport.c_str());
      for (int c = 0; c < kSteps; ++c)
        csv.row(cs, c == 1 && o.lattice ? "lattice_velocity" : kStepFigures[c], r.step[c], "s");
      const std::pair<const char*, double> m[] = {{"host", r.host},
                                                  {"exchange", r.exchange},
                                                  {"startup_construct", r.construct},
                                                  {"startup_set_velocity", r.set_velocity},
                                                  {"first_evaluation", r.first_eval},
                                                  {"output_statistics", r.out_stats},
                                                  {"output_monitors", r.out_monitors},
                                                  {"output_velocity_host", r.out_velocity}};
      for (const auto& [name, v] : m) csv.row(cs, name, v, "s");
      csv.row(cs, "exchange_bytes", r.exchange_gb * 1e9, "B");
      csv.row(cs, "particles_max_over_mean", r.imbalance, "1");
      csv.row(cs, "fmm_sources_over_own", r.sources, "1");
      csv.row(cs, "solver_device_bytes_per_particle", r.bytes_per_particle, "B");
      csv.row(cs, "gpu_memory_in_use", r.gpu_used_gib, "GiB");
      csv.row(cs, "rank0_solver_memory", r.solver_gib, "GiB");
      csv.row(cs, "rank0_fmm_pool_memory", r.fmm_gib, "GiB");
      csv.row(cs, "rank0_fmm_expansion_cells_share", r.kept_cells, "1");
      csv.row(cs, "rank0_memory_estimate", r.est_gib, "GiB");
      csv.row(cs, "rank0_fmm_memory_estimate", r.est_fmm_gib, "GiB");
    }
  }
  return 0;
}
