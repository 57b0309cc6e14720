// blobs_bench: the blob sums at the lattice, vorticity_on_lattice and divergence_on_lattice
// (vortex/blobs), on the GPU and on the CPU.
//
// Particles: one per point of an n^3 lattice in the periodic box, moved by up to +-0.1 h per axis
// at random, random strengths alpha in (-1, 1) h^3 per component, core sigma = overlap h (the
// solver's sigma0, overlap 1 by default), cut off at --cutoff sigma (the solver's default 7).
//
// GPU, per size and sum: the device time of one call (uploads, cell sort, gather, download: CUDA
// events inside the call, detail::last_gather_gpu_seconds) and the wall time of the whole call
// (with packing the particles and unpacking the sums on the host), medians of --repeat after one
// warm-up call.  CPU at --cpu-n: the wall time of the call (median of --repeat), and the
// relative L2 difference of the GPU sums from it.
//
//   blobs_bench [--n 128,256] [--cpu-n 64] [--repeat 5] [--overlap 1] [--cutoff 7] [--csv FILE]
//
// Every size's memory is checked first (bench/memory_check.h): one too large for the machine is
// refused, exit 2, with the largest --n that fits.
//
// Results: bench/RESULTS.md.
#include <cuda_runtime.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/csv_rows.h"
#include "bench/memory_check.h"
#include "vortex/blobs.h"
#include "vortex/blobs_gpu.h"

#ifndef VH_GIT_HASH
#define VH_GIT_HASH "unknown"
#endif

namespace {

using namespace vh;
using namespace vh::vortex;
using clock_type = std::chrono::steady_clock;

struct BenchOptions {
  std::vector<int> n = {128, 256};
  int cpu_n = 64, repeat = 5;
  double overlap = 1.0, cutoff = 7.0;
  std::string csv;
};

BenchOptions parse(int argc, char** argv) {
  BenchOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("missing value after " + a);
      return argv[++i];
    };
    if (a == "--n") {
      o.n.clear();
      std::stringstream ss(next());
      for (std::string item; std::getline(ss, item, ',');) o.n.push_back(std::stoi(item));
    } else if (a == "--cpu-n") o.cpu_n = std::stoi(next());
    else if (a == "--repeat") o.repeat = std::stoi(next());
    else if (a == "--overlap") o.overlap = std::stod(next());
    else if (a == "--cutoff") o.cutoff = std::stod(next());
    else if (a == "--csv") o.csv = next();
    else if (a == "--help" || a == "-h") {
      std::printf("usage: blobs_bench [--n 128,256] [--cpu-n N (0: none)] [--repeat R] [--overlap O] [--cutoff C] "
                  "[--csv FILE]\n");
      std::exit(0);
    } else {
      throw std::invalid_argument("unknown option " + a);
    }
  }
  for (int n : o.n)
    if (n < 8) throw std::invalid_argument("--n: sizes >= 8");
  if (o.cpu_n != 0 && o.cpu_n < 8) throw std::invalid_argument("--cpu-n: 0 or >= 8");
  if (o.repeat < 1) throw std::invalid_argument("--repeat: >= 1");
  return o;
}

// The header comment's particles.
Particles particles(const Grid& g, double overlap, unsigned seed) {
  const double h = g.h();
  Particles p = lattice_particles(g, overlap * h);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  for (std::size_t q = 0; q < p.size(); ++q)
    for (int d = 0; d < 3; ++d) {
      p.x[q][d] = std::fmod(p.x[q][d] + 0.1 * h * U(gen) + 2 * kPi, 2 * kPi);
      p.alpha[q][d] = U(gen) * h * h * h;
    }
  return p;
}

// The CPU as /proc/cpuinfo names it, with the thread count.
std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string model = "cpu";
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return model + " " + std::to_string(omp_get_max_threads()) + " threads";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double rms(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s / v.size());
}

double rel_l2(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

// One sum on the lattice: the wall time of the library call alone [s], its components in `out`.
using Sum = std::function<double(const Particles&, const Grid&, bool gpu, std::vector<std::vector<double>>& out)>;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

struct Row {
  int n = 0;
  std::string sum, device;
  double device_s = -1, call_s = 0, rms = 0, err = -1;
};

/// The memory of the blob sums at an n³ lattice, one particle per point (bench/memory_check.h),
/// from the allocations. Host: the particles (x, α, γ, σ: 80 B), the pinned staging of the packed
/// particles and of the sums (kPacked + 3 doubles: 80 B), the GPU's and the CPU's sums (48 B).
/// GPU (vortex/blobs_gpu.cu): the packed particles (56 B) and the sums (24 B), the sorted
/// particles' kF = 6 doubles (48 B), the cell keys, permutation and cell starts (9 + 1 + 1 ints).
app::MemoryEstimate case_memory(int n) {
  const double points = double(n) * n * n;
  app::MemoryEstimate e;
  e.host.push_back({"particles, staging and sums", 208 * points});
  e.device.push_back({"blob sums", 172 * points});
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions o;
  try {
    o = parse(argc, argv);
    // Every size's memory before any runs.
    for (int n : o.n)
      bench::require_memory("--n " + std::to_string(n), "--n", n, bench::sizes_below(n, 2, 8), case_memory,
                            Backend::gpu);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "blobs_bench: %s\n", e.what());
    return 2;
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::fprintf(stderr, "blobs_bench: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  const std::string dev = prop.name;
  std::printf("blobs_bench: %s, lattice moved by up to 0.1 h, sigma = %g h, cutoff %g sigma, %d CPU threads, commit %s\n",
              dev.c_str(), o.overlap, o.cutoff, omp_get_max_threads(), VH_GIT_HASH);

  const double cutoff = o.cutoff;
  const std::vector<std::pair<std::string, Sum>> sums = {
      {"vorticity",
       [cutoff](const Particles& p, const Grid& g, bool gpu, std::vector<std::vector<double>>& out) {
         VectorField w;
         const auto t0 = clock_type::now();
         vorticity_on_lattice(p, g, cutoff, w, gpu);
         const double s = seconds_since(t0);
         out.assign(std::make_move_iterator(w.c.begin()), std::make_move_iterator(w.c.end()));
         return s;
       }},
      {"divergence", [cutoff](const Particles& p, const Grid& g, bool gpu, std::vector<std::vector<double>>& out) {
         ScalarField d;
         const auto t0 = clock_type::now();
         divergence_on_lattice(p, g, cutoff, d, gpu);
         const double s = seconds_since(t0);
         out.assign(1, std::move(d.v));
         return s;
       }}};

  // Median wall and device times of `repeat` calls after a warm-up; the last call's result.
  auto measure = [&](const Sum& f, const Particles& p, const Grid& g, bool gpu, Row& r) {
    std::vector<std::vector<double>> out;
    f(p, g, gpu, out);
    std::vector<double> wall, device;
    for (int k = 0; k < o.repeat; ++k) {
      wall.push_back(f(p, g, gpu, out));
      if (gpu) device.push_back(detail::last_gather_gpu_seconds());
    }
    r.call_s = median(wall);
    if (gpu) r.device_s = median(device);
    r.rms = rms(out[0]);
    return out;
  };

  std::vector<Row> rows;
  try {
    std::vector<int> sizes = o.n;
    if (o.cpu_n) sizes.insert(sizes.begin(), o.cpu_n);
    for (std::size_t si = 0; si < sizes.size(); ++si) {
      const bool with_cpu = o.cpu_n && si == 0;
      const Grid g{sizes[si]};
      const Particles p = particles(g, o.overlap, 17 + g.n);
      for (const auto& [name, f] : sums) {
        Row r{g.n, name, "gpu"};
        const auto gpu_out = measure(f, p, g, true, r);
        if (with_cpu) {
          Row c{g.n, name, "cpu"};
          const auto cpu_out = measure(f, p, g, false, c);
          for (std::size_t k = 0; k < cpu_out.size(); ++k) r.err = std::max(r.err, rel_l2(gpu_out[k], cpu_out[k]));
          rows.push_back(c);
        }
        if (r.rms == 0) throw std::runtime_error("the " + name + " sum is zero: nothing was timed");
        rows.push_back(r);
        std::printf("  n = %d %-10s gpu: device %.4f s, call %.4f s", g.n, name.c_str(), r.device_s, r.call_s);
        if (with_cpu) std::printf("; cpu: call %.4f s; GPU - CPU relative L2 %.2e", rows[rows.size() - 2].call_s, r.err);
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "blobs_bench: %s\n", e.what());
    return 1;
  }

  std::printf("\n%6s %-10s %-4s %12s %10s %12s %14s\n", "n", "sum", "dev", "device[s]", "call[s]", "rms", "GPU-CPU rel");
  for (const auto& r : rows) {
    std::printf("%6d %-10s %-4s ", r.n, r.sum.c_str(), r.device.c_str());
    if (r.device_s >= 0) std::printf("%12.4f", r.device_s);
    else std::printf("%12s", "-");
    std::printf(" %10.4f %12.4e", r.call_s, r.rms);
    if (r.err >= 0) std::printf(" %14.2e", r.err);
    std::printf("\n");
  }

  if (!o.csv.empty()) {
    std::ofstream f(o.csv);
    if (!f) {
      std::fprintf(stderr, "blobs_bench: cannot write %s\n", o.csv.c_str());
      return 2;
    }
    vh::bench::CsvRows csv(f, "blobs", dev, VH_GIT_HASH);
    char setup[96];
    std::snprintf(setup, sizeof setup, "lattice moved 0.1h sigma=%gh cutoff=%g", o.overlap, o.cutoff);
    for (const auto& r : rows) {
      const std::string base = r.sum + " n=" + std::to_string(r.n) + " " + setup + " " + r.device;
      const std::string cs = base + " median of " + std::to_string(o.repeat);
      csv.device(r.device == "gpu" ? dev : cpu_name());
      if (r.device == "gpu") {
        csv.row(cs, "time_device", r.device_s, "s");
        csv.row(cs, "time_call", r.call_s, "s");
        if (r.err >= 0) csv.row(base + " vs cpu", "rel_l2_difference", r.err, "1");
      } else {
        csv.row(cs, "time_call", r.call_s, "s");
      }
    }
    std::printf("CSV rows written to %s\n", o.csv.c_str());
  }
  return 0;
}
