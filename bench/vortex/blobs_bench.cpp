// blobs_bench: the blob sums at the lattice, vorticity_on_lattice and divergence_on_lattice
// (vortex/blobs), on the GPU and on the CPU.  --device cpu (the only device of a build without
// CUDA): the CPU's sums alone at every --n, with the particle-point pairs per second.
//
// Particles: one per point of an n^3 lattice in the periodic box, moved by up to +-0.1 h per axis
// at random, random strengths alpha in (-1, 1) h^3 per component, core sigma = overlap h (the
// solver's sigma0, overlap 1 by default), cut off at --cutoff sigma (the solver's default,
// vortex.blob_cutoff).
//
// GPU, per size and sum: the device time of one call (uploads, cell sort, gather, download: CUDA
// events inside the call, detail::last_gather_gpu_seconds) and the wall time of the whole call
// (with packing the particles and unpacking the sums on the host), medians of --repeat after one
// warm-up call.  CPU at --cpu-n: the wall time of the call (median of --repeat), and the
// relative L2 difference of the GPU sums from it.
//
// Then, per size, the blob sums alone as the GPU solver runs them (particles already on the
// device, detail::DeviceBlobSums): the cell sort once, then the sum of omega (3 components) and
// of div omega, each timed alone with CUDA events (median of --repeat after a warm-up), with the
// particle-point pairs inside the cut-off per second (pairs: the product over the axes of each
// particle's points within cutoff sigma, summed).  "3 sets" = the sums of three strength sets in
// one pass (sum3, nine components); "reinit" = sort + that: what one reinitialisation of the GPU
// solver spends on blob sums (its history and its strengths).
// --resident-only runs this table alone.
//
//   blobs_bench [--device gpu|cpu] [--n 128,256] [--cpu-n 64] [--repeat 5] [--overlap 1] [--cutoff 6]
//               [--resident-only] [--csv FILE]
//
// Every size's memory is checked first (bench/memory_check.h): one too large for the machine is
// refused, exit 2, with the largest --n that fits.
//
// Results: bench/RESULTS.md.
#ifdef VH_HAVE_CUDA
#include <cuda_runtime.h>
#endif
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
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/args.h"
#include "bench/csv_rows.h"
#include "bench/memory_check.h"
#include "vortex/blobs.h"
#include "vortex/blobs_kernel.h"
#ifdef VH_HAVE_CUDA
#include "base/device_buffer.h"
#include "vortex/blobs_gpu.h"
#endif
#include "vortex/solver.h"

#ifndef VH_GIT_HASH
#define VH_GIT_HASH "unknown"
#endif

namespace {

using namespace vh;
using namespace vh::vortex;
using clock_type = std::chrono::steady_clock;

#ifdef VH_HAVE_CUDA
constexpr const char* kDefaultDevice = "gpu";
#else
constexpr const char* kDefaultDevice = "cpu";
#endif

struct BenchOptions {
  std::string device = kDefaultDevice;
  std::vector<int> n = {128, 256};
  int cpu_n = 64, repeat = 5;
  double overlap = 1.0, cutoff = Params{}.blob_cutoff;
  bool resident_only = false;
  std::string csv;
};

BenchOptions parse(int argc, char** argv) {
  BenchOptions o;
  for (vh::bench::Args a(argc, argv); a.next();) {
    if (a.is("--device")) o.device = a.value();
    else if (a.is("--n")) o.n = a.integers();
    else if (a.is("--cpu-n")) o.cpu_n = a.integer();
    else if (a.is("--repeat")) o.repeat = a.integer();
    else if (a.is("--overlap")) o.overlap = a.real();
    else if (a.is("--cutoff")) o.cutoff = a.real();
    else if (a.is("--resident-only")) o.resident_only = true;
    else if (a.is("--csv")) o.csv = a.value();
    else if (a.is("--help") || a.is("-h")) {
      std::printf("usage: blobs_bench [--device gpu|cpu] [--n 128,256] [--cpu-n N (0: none)] [--repeat R] "
                  "[--overlap O] [--cutoff C] [--resident-only] [--csv FILE]\n");
      std::exit(0);
    } else {
      a.unknown();
    }
  }
  if (o.device != "gpu" && o.device != "cpu") throw std::invalid_argument("--device " + o.device + ": gpu or cpu");
#ifndef VH_HAVE_CUDA
  if (o.device == "gpu") throw std::invalid_argument("--device gpu: this build has no CUDA (allowed: cpu)");
#endif
  if (o.device == "cpu" && o.resident_only) throw std::invalid_argument("--resident-only needs --device gpu");
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

/// The particle-point pairs inside the cut-off: the product over the axes of each particle's
/// lattice points within cutoff σ, summed.
double pairs_inside(const Particles& p, const Grid& g, double cutoff) {
  const double h = g.h();
  const int m = stencil_points(*std::max_element(p.sigma.begin(), p.sigma.end()), h, cutoff);
  const long long np = static_cast<long long>(p.size());
  double pairs = 0;
#pragma omp parallel for reduction(+ : pairs) schedule(static)
  for (long long q = 0; q < np; ++q) {
    const blob::Core c = blob::core(p.sigma[q], cutoff);
    double prod = 1;
    for (int d = 0; d < 3; ++d) {
      const int i0 = blob::stencil_start(p.x[q][d], c.R, h);
      int len = 0;
      for (int a = 0; a < m; ++a) len += blob::inside(blob::offset(i0 + a, h, p.x[q][d]), c);
      prod *= len;
    }
    pairs += prod;
  }
  return pairs;
}

struct Row {
  int n = 0;
  std::string sum, device;
  double device_s = -1, call_s = 0, rms = 0, err = -1, pairs = 0;
};

#ifdef VH_HAVE_CUDA
/// Seconds of the work that f queues on the default stream (CUDA events around it).
template <class F>
double device_seconds(F&& f) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a);
  f();
  cudaEventRecord(b);
  const cudaError_t e = cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA: ") + cudaGetErrorString(e));
  return 1e-3 * ms;
}

/// The device-resident sums of one size (the header comment's second table).
struct ResidentRow {
  int n = 0, m = 0;
  long long np = 0;
  double pairs = 0;  // particle-point pairs inside the cut-off
  double sort_s = 0, omega_s = 0, div_s = 0, sets3_s = 0;
};

ResidentRow resident(const Particles& p, const Grid& g, double cutoff, int repeat) {
  ResidentRow r;
  r.n = g.n;
  r.np = static_cast<long long>(p.size());
  r.m = stencil_points(*std::max_element(p.sigma.begin(), p.sigma.end()), g.h(), cutoff);
  r.pairs = pairs_inside(p, g, cutoff);
  const std::size_t np = p.size(), npts = g.points();
  DeviceArray<double> x, alpha, sigma, out(3 * npts), out3(9 * npts);
  x.upload(p.x[0].data(), 3 * np);
  alpha.upload(p.alpha[0].data(), 3 * np);
  sigma.upload(p.sigma.data(), np);
  detail::DeviceBlobSums sums;
  auto sort = [&] { sums.sort(x.data(), sigma.data(), np, g, cutoff, r.m); };
  std::vector<double> ts, to, td, t3;
  // Three sets: α three times with three scales (the kernel does not look at what they hold).
  const double* const sets[3] = {alpha.data(), alpha.data(), alpha.data()};
  const double scales[3] = {1.0, 0.5, 2.0};
  double* const outs[3] = {out3.data(), out3.data() + 3 * npts, out3.data() + 6 * npts};
  sort();
  sums.sum(alpha.data(), 1.0, false, out.data());
  sums.sum(alpha.data(), 1.0, true, out.data());
  sums.sum3(sets, scales, outs);
  for (int k = 0; k < repeat; ++k) {
    ts.push_back(device_seconds(sort));
    to.push_back(device_seconds([&] { sums.sum(alpha.data(), 1.0, false, out.data()); }));
    td.push_back(device_seconds([&] { sums.sum(alpha.data(), 1.0, true, out.data()); }));
    t3.push_back(device_seconds([&] { sums.sum3(sets, scales, outs); }));
  }
  r.sort_s = median(ts);
  r.omega_s = median(to);
  r.div_s = median(td);
  r.sets3_s = median(t3);
  return r;
}
#endif

/// The memory of the blob sums at an n³ lattice, one particle per point (bench/memory_check.h),
/// from the allocations. Host: the particles (x, α, γ, σ: 80 B), the pinned staging of the packed
/// particles and of the sums (kPacked + 3 doubles: 80 B), the GPU's and the CPU's sums (48 B).
/// GPU (vortex/blobs_gpu.cu): the packed particles (56 B) and the sums (24 B), the sorted
/// particles' kF = 7 doubles (56 B), the cell keys, permutation and cell starts (9 + 1 + 1 ints),
/// the three sets' sums (72 B).
app::MemoryEstimate case_memory(int n) {
  const double points = double(n) * n * n;
  app::MemoryEstimate e;
  e.host.push_back({"particles, staging and sums", 208 * points});
  e.device.push_back({"blob sums", 252 * points});
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
                            o.device == "gpu" ? Backend::gpu : Backend::cpu);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "blobs_bench: %s\n", e.what());
    return 2;
  }
  const bool on_gpu = o.device == "gpu";
  std::string dev = cpu_name();
#ifdef VH_HAVE_CUDA
  if (on_gpu) {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
      std::fprintf(stderr, "blobs_bench: no CUDA device\n");
      return 1;
    }
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    dev = prop.name;
  }
#endif
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
#ifdef VH_HAVE_CUDA
      if (gpu) device.push_back(detail::last_gather_gpu_seconds());
#endif
    }
    r.call_s = median(wall);
    if (gpu) r.device_s = median(device);
    r.rms = rms(out[0]);
    return out;
  };

  std::vector<Row> rows;
  try {
    std::vector<int> sizes = o.resident_only ? std::vector<int>{} : o.n;
    if (on_gpu && o.cpu_n && !o.resident_only) sizes.insert(sizes.begin(), o.cpu_n);
    for (std::size_t si = 0; si < sizes.size(); ++si) {
      const bool with_cpu = o.cpu_n && si == 0;
      const Grid g{sizes[si]};
      const Particles p = particles(g, o.overlap, 17 + g.n);
      const double pairs = pairs_inside(p, g, cutoff);
      for (const auto& [name, f] : sums) {
        if (!on_gpu) {  // the CPU's sums alone
          Row c{g.n, name, "cpu"};
          c.pairs = pairs;
          measure(f, p, g, false, c);
          if (c.rms == 0) throw std::runtime_error("the " + name + " sum is zero: nothing was timed");
          rows.push_back(c);
          std::printf("  n = %d %-10s cpu: call %.4f s, %.3f Gpairs/s\n", g.n, name.c_str(), c.call_s,
                      1e-9 * pairs / c.call_s);
          std::fflush(stdout);
          continue;
        }
        Row r{g.n, name, "gpu"};
        r.pairs = pairs;
        const auto gpu_out = measure(f, p, g, true, r);
        if (with_cpu) {
          Row c{g.n, name, "cpu"};
          c.pairs = pairs;
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

#ifdef VH_HAVE_CUDA
  std::vector<ResidentRow> res;
  try {
    for (int n : on_gpu ? o.n : std::vector<int>{}) {
      const Grid g{n};
      res.push_back(resident(particles(g, o.overlap, 17 + g.n), g, cutoff, o.repeat));
      const ResidentRow& r = res.back();
      std::printf("  n = %d resident: sort %.2f ms, omega %.2f ms, div %.2f ms\n", n, 1e3 * r.sort_s, 1e3 * r.omega_s,
                  1e3 * r.div_s);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "blobs_bench: %s\n", e.what());
    return 1;
  }
#endif

  // Gpairs/s: the particle-point pairs of the call's sum a second of its device time (GPU) or of
  // its wall time (CPU).
  if (!rows.empty())
    std::printf("\n%6s %-10s %-4s %12s %10s %10s %12s %14s\n", "n", "sum", "dev", "device[s]", "call[s]", "Gpairs/s",
                "rms", "GPU-CPU rel");
  for (const auto& r : rows) {
    std::printf("%6d %-10s %-4s ", r.n, r.sum.c_str(), r.device.c_str());
    if (r.device_s >= 0) std::printf("%12.4f", r.device_s);
    else std::printf("%12s", "-");
    std::printf(" %10.4f %10.3f %12.4e", r.call_s, 1e-9 * r.pairs / (r.device_s >= 0 ? r.device_s : r.call_s), r.rms);
    if (r.err >= 0) std::printf(" %14.2e", r.err);
    std::printf("\n");
  }
#ifdef VH_HAVE_CUDA
  if (on_gpu) {
    std::printf("\ndevice-resident blob sums (DeviceBlobSums; CUDA events, median of %d; pairs: particle-point pairs "
                "inside the cut-off)\n", o.repeat);
    std::printf("%6s %11s %7s %10s %9s %10s %9s %11s %10s %14s %12s\n", "n", "particles", "stencil", "pairs/part",
                "sort[ms]", "omega[ms]", "div[ms]", "3 sets[ms]", "reinit[ms]", "omega Gpairs/s", "div Gpairs/s");
    for (const auto& r : res)
      std::printf("%6d %11lld %4d^3 %10.0f %9.2f %10.2f %9.2f %11.2f %10.2f %14.1f %12.1f\n", r.n, r.np, r.m,
                  r.pairs / r.np, 1e3 * r.sort_s, 1e3 * r.omega_s, 1e3 * r.div_s, 1e3 * r.sets3_s,
                  1e3 * (r.sort_s + r.sets3_s), 1e-9 * r.pairs / r.omega_s, 1e-9 * r.pairs / r.div_s);
  }
#endif


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
        csv.row(cs, "pairs_per_second", r.pairs / r.call_s, "1/s");
      }
    }
#ifdef VH_HAVE_CUDA
    csv.device(dev);
    for (const auto& r : res) {
      const std::string base = "resident n=" + std::to_string(r.n) + " " + setup + " median of " + std::to_string(o.repeat);
      csv.row(base + " sort", "time_device", r.sort_s, "s");
      csv.row(base + " vorticity", "time_device", r.omega_s, "s");
      csv.row(base + " divergence", "time_device", r.div_s, "s");
      csv.row(base + " three sets", "time_device", r.sets3_s, "s");
      csv.row(base + " vorticity", "pairs_per_second", r.pairs / r.omega_s, "1/s");
    }
#endif
    std::printf("CSV rows written to %s\n", o.csv.c_str());
  }
  return 0;
}
