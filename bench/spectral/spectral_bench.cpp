// spectral_bench: time per RK4 step of the pseudo-spectral solver against the bare FFTs the
// step needs (4 × (6 inverse + 3 forward) real transforms at the transform size: the floor).
//
//   spectral_bench [--device cpu|gpu] [--n 128,256,512] [--dealias 3/2,2/3,none]
//                  [--precision double|single] [--steps 20] [--warmup 3] [--csv]
//                  [--pruned]   (GPU: pruned transforms, Params::pruned_transforms)
//                  [--callbacks]  (GPU: cuFFT LTO callbacks, Params::fft_callbacks;
//                                  --no-callbacks: separate per-point passes, the default)
//                  [--transforms auto|cufft|fused]  (GPU: Params::transforms; default auto)
//                  [--comm auto|mpi|nccl]  (GPU, R > 1: how device buffers travel, DeviceComm;
//                                           VH_PEER_COPIES=0 turns its peer copies off)
//                  [--share-gpus]  (GPU, R > 1: let ranks share a GPU, transport MPI)
//                  [--overlap on|off]  (GPU, R > 1: exchanges overlapped, Params::overlap_exchange; on)
// Rows name the path that ran: "... fp64 fused" (cuFFTDx passes, spectral/fused.h),
// "... fp64 callbacks", "... fp64 pruned", or "... fp64" for cuFFT with separate passes (a
// request that cannot be served falls back to those). The FFT floor is always cuFFT's bare
// 3-D transforms of one step, so the fused path's ratio can be below 1.
//
// Each case starts from a real random field (k⁴ exp spectrum, u′ = 1), takes `warmup` steps,
// then times `steps` single steps (median) and `steps` repetitions of the bare transforms
// on the solver's own plans and buffers (median). Prints one table; with --csv, rows in the
// form of bench/README.md. Cost: seconds per case up to 512³ on one GPU. Every case's memory is
// checked first (bench/memory_check.h): one too large for the machine is refused, exit 2, with
// the largest --n that fits.
//
// Ranks: under mpirun the solver runs on R ranks (slabs, core/slab.h; on one machine with one
// GPU the ranks share it) and the table gains what the ranks cost: the time per step is the
// slowest rank's, "exchange" the time per step in the all-to-all transposes (MPI and, with a
// library that is not CUDA-aware, the staging copies; the slowest rank's), "MB/step" the
// bytes all ranks send to other ranks per step, "GB/s" what one rank moved per second of
// exchange (its bytes to the others over its exchange time), and on the GPU "a2a GB/s" the same
// for a bare all-to-all of the transport (DeviceComm::alltoallv of the solver's message size,
// equal blocks): the ceiling of the exchange on that machine. One rank prints; CSV cases get
// " ranks=R comm=<transport>".
//   mpirun -np 2 spectral_bench --device gpu --n 256,512 --dealias 3/2,2/3 --comm nccl --csv
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/config.h"
#include "bench/args.h"
#include "bench/csv_rows.h"
#include "bench/memory_check.h"
#include "base/comm.h"
#ifdef VH_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "base/device_buffer.h"
#include "base/device_comm.h"
#endif
#include "core/device.h"
#include "core/error.h"
#include "core/initial_field.h"
#include "spectral/solver.h"

using namespace vh;
using namespace vh::spectral;

namespace {

/// The solver's parameters for dealiasing rule `d` and the command line's choices.
Params solver_params(const std::string& d, bool single, bool pruned, bool callbacks, const std::string& transforms,
                     bool overlap, double nu) {
  Params p;
  p.dealias = d == "3/2" ? Dealias::three_halves : d == "2/3" ? Dealias::two_thirds : Dealias::none;
  p.single_precision = single;
  p.pruned_transforms = pruned;
  p.fft_callbacks = callbacks;
  p.transforms = transforms == "cufft"   ? Transforms::cufft
                 : transforms == "fused" ? Transforms::fused
                                         : Transforms::automatic;
  p.nu = nu;
  p.overlap_exchange = overlap;
  return p;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> r;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ',')) r.push_back(x);
  return r;
}

std::string commit() {
  std::string h = VH_GIT_HASH;
  const bool dirty = h.find("dirty") != std::string::npos;
  return h.substr(0, 7) + (dirty ? "-dirty" : "");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// GB/s per rank of a bare all-to-all of `bytes` bytes a rank sends to the others in equal
/// blocks over the configured transport (median of `reps`); 0 on the CPU or one rank.
double alltoall_rate(const Comm& world, bool gpu, double bytes, int reps) {
#ifdef VH_HAVE_CUDA
  if (!gpu || world.size() == 1 || bytes <= 0) return 0;
  const int R = world.size();
  const std::size_t block = std::size_t(bytes / (R - 1));
  DeviceArray<unsigned char> send(block * R), recv(block * R);
  std::vector<std::size_t> c(R, block), o(R);
  for (int r = 0; r < R; ++r) o[r] = std::size_t(r) * block;
  c[world.rank()] = 0;
  DeviceComm dc(world, nullptr);
  dc.alltoallv(send.data(), c, o, recv.data(), c, o, 1);  // warm-up (NCCL connects lazily)
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    world.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    dc.alltoallv(send.data(), c, o, recv.data(), c, o, 1);
    t.push_back(world.max(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
  }
  return double(block) * (R - 1) / median(t) / 1e9;
#else
  (void)world, (void)gpu, (void)bytes, (void)reps;
  return 0;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession mpi(&argc, &argv);
  const Comm world = Comm::world();
  const int ranks = world.size();
  std::string device = "gpu", ns = "", dealias = "3/2,2/3,none", precision = "double", transforms = "auto",
              comm = "auto";
  bool share_gpus = false, overlap = Params{}.overlap_exchange;
  int steps = 20, warmup = 3;
  bool csv = false, pruned = false, callbacks = false;
  try {
    for (vh::bench::Args a(argc, argv); a.next();) {
      if (a.is("--device")) device = a.value();
      else if (a.is("--n")) ns = a.value();
      else if (a.is("--dealias")) dealias = a.value();
      else if (a.is("--precision")) precision = a.value();
      else if (a.is("--steps")) steps = a.integer();
      else if (a.is("--warmup")) warmup = a.integer();
      else if (a.is("--csv")) csv = true;
      else if (a.is("--pruned")) pruned = true;
      else if (a.is("--callbacks")) callbacks = true;
      else if (a.is("--no-callbacks")) callbacks = false;
      else if (a.is("--transforms")) transforms = a.value();
      else if (a.is("--comm")) comm = a.value();
      else if (a.is("--share-gpus")) share_gpus = true;
      else if (a.is("--overlap")) {
        const std::string v = a.value();
        if (v != "on" && v != "off") throw std::invalid_argument("--overlap " + v + " (allowed: on, off)");
        overlap = v == "on";
      } else {
        a.unknown();
      }
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "spectral_bench: %s\n", e.what());
    return 2;
  }
  // One rank prints (the others' stdout goes nowhere).
  if (!world.root() && !std::freopen("/dev/null", "w", stdout)) return 1;
  try {
    const Backend b = resolve_backend(device);
    std::string transport = "mpi";
    int gpu_ranks = 1;  // the ranks on this rank's GPU
    if (b == Backend::gpu && ranks > 1) {
      gpu_ranks = select_gpus(world, share_gpus);
#ifdef VH_HAVE_CUDA
      DeviceComm::configure(world, comm);
      transport = DeviceComm::name(DeviceComm::configured(world));
#endif
    }
    if (ns.empty()) ns = b == Backend::gpu ? "128,256,512" : "64,128";
    InitialFieldSpec spec;
    spec.nu = 1e-3;
    // Every case's memory before any runs (bench/memory_check.h): each case is a run of the
    // spectral solver alone, the initial field standing for the run driver's arrays.
    for (const std::string& nstr : split(ns))
      for (const std::string& d : split(dealias)) {
        app::RunConfig run;
        run.solver = "spectral";
        run.spectral = solver_params(d, precision == "single", pruned, callbacks, transforms, overlap, spec.nu);
        run.ranks = ranks;
        const int n = std::stoi(nstr), step = d == "3/2" ? 4 : 2;
        bench::require_memory(
            "--n " + nstr + " --dealias " + d, "--n", n, bench::sizes_below(n, step, 8),
            [&](int m) {
              run.n = m;
              return app::estimate_memory(run, b, app::spectral_fused_on_gpu(run, b));
            },
            b, world, gpu_ranks);
      }
    const std::string dev = device_name(b);
    const std::string prec = precision == "single" ? "fp32" : "fp64";
    const std::string asked = pruned ? ", pruned transforms" : b == Backend::gpu && callbacks ? ", cuFFT callbacks asked" : "";
    std::string mpi_note;
    if (ranks > 1) mpi_note = " (" + Comm::library() + (b != Backend::gpu ? ")" : ", exchange " + transport + ")");
    std::printf("# spectral_bench on %s, %s%s, median of %d steps after %d warm-up steps, %d rank%s%s\n",
                dev.c_str(), prec.c_str(), asked.c_str(), steps, warmup, ranks, ranks > 1 ? "s" : "", mpi_note.c_str());
    std::printf("%6s %8s %6s %5s %14s %14s %8s %14s %9s %7s %9s  %s\n", "N", "dealias", "M", "ranks", "step [ms]",
                "FFT floor [ms]", "ratio", "exchange [ms]", "MB/step", "GB/s", "a2a GB/s", "path");
    struct Row {
      std::string cs, metric, value, unit;
    };
    std::vector<Row> rows;
    for (const std::string& nstr : split(ns)) {
      const Grid g{std::stoi(nstr)};
      for (const std::string& d : split(dealias)) {
        const Params p = solver_params(d, precision == "single", pruned, callbacks, transforms, overlap, spec.nu);
        const Slab slab = Slab::make(g, kept_kmax(p.dealias, g.n), world);
        auto s = make_solver(p, slab, b);
        s->set_velocity(make_initial_field(spec, slab).u, 0.0);
        const double dt = 0.5 * g.h() / s->max_velocity();
        for (int i = 0; i < warmup; ++i) s->step(dt);
        s->synchronize();
        const ExchangeStats x0 = s->exchange_stats();
        std::vector<double> t;
        for (int i = 0; i < steps; ++i) {
          world.barrier();
          const auto t0 = std::chrono::steady_clock::now();
          s->step(dt);
          s->synchronize();
          t.push_back(world.max(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
        }
        const ExchangeStats x1 = s->exchange_stats();
        const double step = median(t);
        const double exchange = world.max(x1.seconds - x0.seconds) / steps;
        const double bytes = world.sum(x1.bytes - x0.bytes) / steps;
        const double floor = world.max(s->time_transforms(steps));
        // Per rank: its bytes to the others per exchange call, and the rate it achieved.
        const double calls = double(x1.exchanges - x0.exchanges) / steps;
        const double rate = exchange > 0 ? bytes / ranks / exchange / 1e9 : 0;
        const double a2a = calls > 0 ? alltoall_rate(world, b == Backend::gpu, bytes / ranks / calls, 5) : 0;
        // The path that ran (a callback request falls back to separate passes when cuFFT
        // cannot build the callback plans): rows of one label always mean one code path.
        const std::string path = s->uses_fused_transforms() ? "fused"
                                 : pruned                   ? "pruned"
                                 : s->uses_fft_callbacks()  ? "callbacks"
                                                            : "separate passes";
        std::printf("%6d %8s %6d %5d %14.3f %14.3f %8.3f %14.3f %9.1f %7.1f %9.1f  %s\n", g.n, d.c_str(),
                    s->transform_size(), ranks, 1e3 * step, 1e3 * floor, step / floor, 1e3 * exchange, bytes / 1e6,
                    rate, a2a, ranks > 1 ? s->path().c_str() : path.c_str());
        std::fflush(stdout);
        const std::string variant = ranks > 1 && s->path().find("overlapped") != std::string::npos ? " fused overlapped"
                                    : s->uses_fused_transforms() ? " fused"
                                    : pruned                   ? " pruned"
                                    : s->uses_fft_callbacks()  ? " callbacks"
                                                               : "";
        const bool peer = s->path().find("peer copies") != std::string::npos;
        const std::string cs = "N=" + nstr + " dealias=" + d + " " + prec + variant +
                               (ranks > 1 ? " ranks=" + std::to_string(ranks) + " comm=" + transport : "") +
                               (peer ? "+peer-copies" : "");
        char buf[3][64];
        std::snprintf(buf[0], sizeof buf[0], "%.6g", step);
        std::snprintf(buf[1], sizeof buf[1], "%.6g", floor);
        std::snprintf(buf[2], sizeof buf[2], "%.4g", step / floor);
        rows.push_back({cs, "time_per_step", buf[0], "s"});
        rows.push_back({cs, "fft_floor_per_step", buf[1], "s"});
        rows.push_back({cs, "ratio_to_fft_bound", buf[2], "1"});
        if (ranks > 1) {
          char xb[4][64];
          std::snprintf(xb[0], sizeof xb[0], "%.6g", exchange);
          std::snprintf(xb[1], sizeof xb[1], "%.6g", bytes);
          std::snprintf(xb[2], sizeof xb[2], "%.4g", rate);
          std::snprintf(xb[3], sizeof xb[3], "%.4g", a2a);
          rows.push_back({cs, "exchange_per_step", xb[0], "s"});
          rows.push_back({cs, "bytes_exchanged_per_step", xb[1], "B"});
          rows.push_back({cs, "exchange_rate_per_rank", xb[2], "GB/s"});
          if (a2a > 0) rows.push_back({cs, "alltoall_rate_per_rank", xb[3], "GB/s"});
        }
      }
    }
    if (csv && world.root()) {
      std::fflush(stdout);  // the table went through printf, the rows go through std::cout
      vh::bench::CsvRows out(std::cout, "spectral", dev, commit());
      for (const auto& r : rows) out.row(r.cs, r.metric, r.value, r.unit);
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "spectral_bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spectral_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
