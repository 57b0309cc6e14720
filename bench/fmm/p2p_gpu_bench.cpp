// p2p_gpu_bench: the GPU near field (fmm/p2p_gpu) on the lists the FMM would use, and the plain
// O(N^2) GPU direct sum.
//
// Particles: one per point of an n^3 lattice in the periodic box [0, 2 pi)^3 (N = n^3, so
// log2 N must be a multiple of 3), displaced by up to +-0.1 h per axis at random, sigma = h,
// alpha = omega(x) h^3 for a random solenoidal vorticity omega = curl A (16 random Fourier modes
// of A with |k| <= 4).  Tree and lists as fmm::evaluate_self builds them (periodic, near images
// from theta, the regularisation cut-off from the tolerance, p2p_max_pairs = (p+1)^4/55), once
// per size and outside the timed region (serial on the CPU: the slow part at 2^24).
//
// Per size and precision: kernel time of the P2P (median of --repeat after one warm-up run; in
// single precision with the singular kernel beyond p2p_singular_rho2(--tolerance), as the FMM
// sums it), pair-interactions per second (pairs summed, self pairs counted as fmm::Timings does),
// the relative L2 difference of u and grad u from the CPU P2P (double, fmm::p2p) on --sample
// target leaves; for N <= 2^--direct-max-log2n the O(N^2) GPU direct sum (median of --direct-repeat)
// and its error against the CPU direct sum on 256 sampled targets.
//
//   p2p_gpu_bench [--device gpu] [--log2n 18,21,24] [--max-n N] [--precision fp32,fp32_ieee,fp64]
//                 [--repeat 10] [--ncrit 64] [--theta 0.4] [--tolerance 1e-6] [--p 10]
//                 [--direct-max-log2n 18] [--direct-repeat 3] [--sample 256] [--csv FILE]
//
// Cost on an H200 host (16 cores), sizes 2^18, 2^21, 2^24, fp32 and fp32_ieee: about 40 s, mostly
// the serial list building (12 s at 2^24).  Results: bench/RESULTS.md (2026-11-22, issue 5).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/args.h"
#include "bench/csv_rows.h"
#include "fmm/p2p.h"
#include "fmm/p2p_gpu.h"
#include "fmm/periodic.h"
#include "fmm/traverse.h"
#include "fmm/tree.h"

#ifndef VH_GIT_HASH
#define VH_GIT_HASH "unknown"
#endif

namespace {

using namespace vh::fmm;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point a) { return std::chrono::duration<double>(clock_type::now() - a).count(); }

struct Options {
  std::vector<int> log2n = {18, 21, 24};
  long long max_n = 1LL << 24;
  std::vector<GpuPrecision> precs = {GpuPrecision::fp32};
  int repeat = 10, ncrit = 64, p = 10, direct_max_log2n = 18, direct_repeat = 3, sample = 256;
  double theta = 0.4, tolerance = 1e-6;
  std::string csv;
};

const char* prec_name(GpuPrecision p) {
  return p == GpuPrecision::fp32 ? "fp32" : p == GpuPrecision::fp32_ieee ? "fp32_ieee" : "fp64";
}

Options parse(int argc, char** argv) {
  Options o;
  for (vh::bench::Args a(argc, argv); a.next();) {
    if (a.is("--device")) {
      const std::string d = a.value();
      if (d != "gpu" && d != "auto") throw std::invalid_argument("--device " + d + ": this benchmark is gpu only");
    } else if (a.is("--log2n")) {
      o.log2n = a.integers();
    } else if (a.is("--max-n")) o.max_n = a.integer64();
    else if (a.is("--precision")) {
      o.precs.clear();
      for (const auto& s : a.list()) {
        if (s == "fp32") o.precs.push_back(GpuPrecision::fp32);
        else if (s == "fp32_ieee") o.precs.push_back(GpuPrecision::fp32_ieee);
        else if (s == "fp64") o.precs.push_back(GpuPrecision::fp64);
        else throw std::invalid_argument("--precision " + s + ": fp32, fp32_ieee or fp64");
      }
    } else if (a.is("--repeat")) o.repeat = a.integer();
    else if (a.is("--ncrit")) o.ncrit = a.integer();
    else if (a.is("--theta")) o.theta = a.real();
    else if (a.is("--tolerance")) o.tolerance = a.real();
    else if (a.is("--p")) o.p = a.integer();
    else if (a.is("--direct-max-log2n")) o.direct_max_log2n = a.integer();
    else if (a.is("--direct-repeat")) o.direct_repeat = a.integer();
    else if (a.is("--sample")) o.sample = a.integer();
    else if (a.is("--csv")) o.csv = a.value();
    else if (a.is("--help") || a.is("-h")) {
      std::printf("usage: p2p_gpu_bench [--device gpu] [--log2n 18,21,24] [--max-n N] "
                  "[--precision fp32,fp32_ieee,fp64] [--repeat R] [--ncrit N] [--theta T] [--tolerance E] [--p P] "
                  "[--direct-max-log2n K] [--direct-repeat R] [--sample LEAVES] [--csv FILE]\n");
      std::exit(0);
    } else {
      a.unknown();
    }
  }
  for (int l : o.log2n)
    if (l < 3 || l > 27 || l % 3 != 0) throw std::invalid_argument("--log2n: multiples of 3 in [3, 27] (N = n^3)");
  if (o.repeat < 1 || o.direct_repeat < 1 || o.sample < 1) throw std::invalid_argument("counts must be >= 1");
  if (o.precs.empty()) throw std::invalid_argument("--precision: none given");
  return o;
}

// Lattice particles of a random solenoidal field (header comment).
void lattice_particles(int n, unsigned seed, std::vector<Vec3>& x, std::vector<Vec3>& alpha,
                       std::vector<double>& sigma) {
  const double L = kBoxLength, h = L / n;
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  struct Mode {
    double k[3], ka[3], phase;  // omega += -sin(k.x + phase) (k x a)
  };
  std::vector<Mode> modes(16);
  for (auto& m : modes) {
    double a[3];
    do {
      for (double& c : m.k) c = std::round(4 * U(gen));
    } while (m.k[0] * m.k[0] + m.k[1] * m.k[1] + m.k[2] * m.k[2] < 1 ||
             m.k[0] * m.k[0] + m.k[1] * m.k[1] + m.k[2] * m.k[2] > 16);
    for (double& c : a) c = U(gen);
    m.ka[0] = m.k[1] * a[2] - m.k[2] * a[1];
    m.ka[1] = m.k[2] * a[0] - m.k[0] * a[2];
    m.ka[2] = m.k[0] * a[1] - m.k[1] * a[0];
    m.phase = M_PI * U(gen);
  }
  const std::size_t N = static_cast<std::size_t>(n) * n * n;
  x.resize(N);
  alpha.resize(N);
  sigma.assign(N, h);
  std::vector<double> disp(3 * N);
  for (double& d : disp) d = 0.1 * U(gen);
  const double h3 = h * h * h;
#pragma omp parallel for schedule(static)
  for (long long q = 0; q < static_cast<long long>(N); ++q) {
    const long long i = q % n, j = (q / n) % n, k = q / (static_cast<long long>(n) * n);
    const long long ijk[3] = {i, j, k};
    Vec3 p;
    for (int d = 0; d < 3; ++d) {
      p[d] = (static_cast<double>(ijk[d]) + 0.5 + disp[3 * q + d]) * h;
      if (p[d] >= L) p[d] -= L;
      if (p[d] < 0) p[d] += L;
    }
    Vec3 w{};
    for (const auto& m : modes) {
      const double s = -std::sin(m.k[0] * p[0] + m.k[1] * p[1] + m.k[2] * p[2] + m.phase);
      for (int d = 0; d < 3; ++d) w[d] += s * m.ka[d];
    }
    x[q] = p;
    for (int d = 0; d < 3; ++d) alpha[q][d] = w[d] * h3;
  }
}

double rel(double num, double den) { return std::sqrt(num / den); }

struct Row {
  long long n = 0;
  std::string prec;
  double list_s = 0, pairs_per_particle = 0, p2p_s = 0, p2p_min_s = 0, rate = 0, err_u = -1, err_g = -1;
  double direct_s = -1, direct_rate = -1, direct_err_u = -1, direct_err_g = -1;
  int leaves = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "p2p_gpu_bench: %s\n", e.what());
    return 2;
  }
  if (gpu_count() == 0) {
    std::fprintf(stderr, "p2p_gpu_bench: no CUDA device\n");
    return 1;
  }
  const std::string dev = gpu_name();
  std::printf("p2p_gpu_bench: %s, periodic lattice, sigma = h, ncrit = %d, theta = %g, tolerance = %g, p = %d, "
              "%d CPU threads, commit %s\n",
              dev.c_str(), o.ncrit, o.theta, o.tolerance, o.p, omp_get_max_threads(), VH_GIT_HASH);
  std::vector<Row> rows;
  try {
    for (int lg : o.log2n) {
      const long long N = 1LL << lg;
      if (N > o.max_n) continue;
      const int n = 1 << (lg / 3);
      auto t0 = clock_type::now();
      std::vector<Vec3> x, alpha;
      std::vector<double> sigma;
      lattice_particles(n, 4242 + lg, x, alpha, sigma);
      const double half = 0.5 * kBoxLength;
      const Tree tree = build_tree(x, sigma, Vec3{half, half, half}, half, o.ncrit);
      std::vector<Vec3> as(N);
      std::vector<double> ss(N);
      for (long long i = 0; i < N; ++i) {
        as[i] = alpha[tree.perm[i]];
        ss[i] = sigma[tree.perm[i]];
      }
      const std::vector<Vec3> shifts = near_image_shifts(near_image_range(o.theta));
      const long long max_pairs = static_cast<long long>(std::pow(o.p + 1.0, 4) / 55);
      const Lists lists = build_lists(tree, tree, shifts,
                                      Acceptance{o.theta, rcut_per_sigma(o.tolerance), max_pairs});
      const P2PLists fl = flatten_p2p_lists(tree, tree, lists, shifts, true);
      const double list_s = seconds_since(t0);
      std::printf("N = %lld: particles, tree and lists %.1f s, %zu target leaves, %.0f pairs per particle\n", N,
                  list_s, fl.leaf_begin.size(), double(fl.pairs()) / N);
      std::fflush(stdout);

      // CPU reference on sampled leaves (evenly spaced in Morton order).
      const int nleaf = static_cast<int>(fl.leaf_begin.size());
      const int ns = std::min(o.sample, nleaf);
      std::vector<int> leaves(ns);
      for (int s = 0; s < ns; ++s) leaves[s] = static_cast<int>(static_cast<long long>(s) * nleaf / ns);
      std::vector<std::vector<Vec3>> uref(ns);
      std::vector<std::vector<Mat3>> gref(ns);
#pragma omp parallel for schedule(dynamic, 1)
      for (int s = 0; s < ns; ++s) {
        const int l = leaves[s], b = fl.leaf_begin[l], nt = fl.leaf_end[l] - b;
        uref[s].assign(nt, Vec3{});
        gref[s].assign(nt, Mat3{});
        for (int e = fl.offset[l]; e < fl.offset[l + 1]; ++e) {
          const int sb = fl.src_begin[e];
          const Vec3& sh = shifts[fl.src_shift[e]];
          const bool zero = sh[0] == 0 && sh[1] == 0 && sh[2] == 0;
          p2p(&tree.x[b], nt, b, &tree.x[sb], &as[sb], &ss[sb], fl.src_end[e] - sb, sb, sh, zero, uref[s].data(),
              gref[s].data());
        }
      }

      for (GpuPrecision prec : o.precs) {
        Row r;
        r.n = N;
        r.prec = prec_name(prec);
        r.list_s = list_s;
        r.leaves = nleaf;
        r.pairs_per_particle = double(fl.pairs()) / N;
        P2PGpu gpu(fl, prec, o.tolerance);
        gpu.set_sources(tree.x, as, ss);
        gpu.run();  // warm-up
        std::vector<double> ms;
        for (int k = 0; k < o.repeat; ++k) ms.push_back(gpu.run());
        r.p2p_s = 1e-3 * median(ms);
        r.p2p_min_s = 1e-3 * *std::min_element(ms.begin(), ms.end());
        r.rate = double(gpu.pairs()) / r.p2p_s;
        std::vector<Vec3> u;
        std::vector<Mat3> g;
        gpu.get(u, g);
        double nu = 0, du = 0, ng = 0, dg = 0;
        for (int s = 0; s < ns; ++s) {
          const int b = fl.leaf_begin[leaves[s]];
          for (std::size_t i = 0; i < uref[s].size(); ++i)
            for (int m = 0; m < 3; ++m) {
              const double d = u[b + i][m] - uref[s][i][m];
              nu += d * d;
              du += uref[s][i][m] * uref[s][i][m];
              for (int k = 0; k < 3; ++k) {
                const double dk = g[b + i][m][k] - gref[s][i][m][k];
                ng += dk * dk;
                dg += gref[s][i][m][k] * gref[s][i][m][k];
              }
            }
        }
        r.err_u = rel(nu, du);
        r.err_g = rel(ng, dg);

        if (lg <= o.direct_max_log2n) {
          std::vector<double> dms;
          std::vector<Vec3> ud;
          std::vector<Mat3> gd;
          for (int k = 0; k <= o.direct_repeat; ++k) {  // first: warm-up
            const double t = direct_sum_gpu(x, alpha, sigma, ud, gd, prec);
            if (k > 0) dms.push_back(t);
          }
          r.direct_s = 1e-3 * median(dms);
          r.direct_rate = double(N) * double(N - 1) / r.direct_s;
          const int nsample = 256;
          std::vector<Vec3> uc(nsample);
          std::vector<Mat3> gc(nsample);
#pragma omp parallel for schedule(dynamic, 1)
          for (int s = 0; s < nsample; ++s) {
            const long long i = static_cast<long long>(s) * N / nsample;
            uc[s] = Vec3{};
            gc[s] = Mat3{};
            p2p(&x[i], 1, static_cast<int>(i), x.data(), alpha.data(), sigma.data(), static_cast<int>(N), 0,
                Vec3{}, true, &uc[s], &gc[s]);
          }
          nu = du = ng = dg = 0;
          for (int s = 0; s < nsample; ++s) {
            const long long i = static_cast<long long>(s) * N / nsample;
            for (int m = 0; m < 3; ++m) {
              nu += (ud[i][m] - uc[s][m]) * (ud[i][m] - uc[s][m]);
              du += uc[s][m] * uc[s][m];
              for (int k = 0; k < 3; ++k) {
                ng += (gd[i][m][k] - gc[s][m][k]) * (gd[i][m][k] - gc[s][m][k]);
                dg += gc[s][m][k] * gc[s][m][k];
              }
            }
          }
          r.direct_err_u = rel(nu, du);
          r.direct_err_g = rel(ng, dg);
        }
        std::printf("  %-9s P2P %9.3f ms (min %9.3f)  %7.1f Gpairs/s  err u %.2e  grad %.2e", r.prec.c_str(),
                    1e3 * r.p2p_s, 1e3 * r.p2p_min_s, 1e-9 * r.rate, r.err_u, r.err_g);
        if (r.direct_s >= 0)
          std::printf("  | direct %9.2f ms  %7.1f Gpairs/s  err u %.2e  grad %.2e", 1e3 * r.direct_s,
                      1e-9 * r.direct_rate, r.direct_err_u, r.direct_err_g);
        std::printf("\n");
        std::fflush(stdout);
        rows.push_back(r);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "p2p_gpu_bench: %s\n", e.what());
    return 1;
  }

  std::printf("\n%10s %-9s %8s %9s %10s %10s %9s %9s %10s %9s\n", "N", "prec", "lists[s]", "pairs/N", "P2P[ms]",
              "Gpairs/s", "err u", "err grad", "direct[ms]", "Gpairs/s");
  for (const auto& r : rows) {
    std::printf("%10lld %-9s %8.1f %9.0f %10.3f %10.1f %9.2e %9.2e", r.n, r.prec.c_str(), r.list_s,
                r.pairs_per_particle, 1e3 * r.p2p_s, 1e-9 * r.rate, r.err_u, r.err_g);
    if (r.direct_s >= 0) std::printf(" %10.2f %9.1f", 1e3 * r.direct_s, 1e-9 * r.direct_rate);
    std::printf("\n");
  }

  if (!o.csv.empty()) {
    std::ofstream f(o.csv);
    if (!f) {
      std::fprintf(stderr, "p2p_gpu_bench: cannot write %s\n", o.csv.c_str());
      return 2;
    }
    vh::bench::CsvRows csv(f, "p2p_gpu", dev, VH_GIT_HASH);
    auto row = [&](const std::string& cs, const char* metric, double v, const char* unit) { csv.row(cs, metric, v, unit); };
    char th[32], tl[32];
    std::snprintf(th, sizeof th, "%g", o.theta);
    std::snprintf(tl, sizeof tl, "%g", o.tolerance);
    for (const auto& r : rows) {
      const std::string base = "periodic lattice N=" + std::to_string(r.n) + " sigma=h ncrit=" +
                               std::to_string(o.ncrit) + " theta=" + th + " tol=" + tl + " " + r.prec;
      const std::string cs = base + " median of " + std::to_string(o.repeat);
      row(cs, "time_p2p", r.p2p_s, "s");
      row(cs, "p2p_pair_rate", r.rate, "1/s");
      row(base, "p2p_pairs_per_particle", r.pairs_per_particle, "1");
      row(base, "u_rel_l2_error_vs_cpu", r.err_u, "1");
      row(base, "grad_u_rel_l2_error_vs_cpu", r.err_g, "1");
      if (r.direct_s >= 0) {
        const std::string cd = "free-space direct N=" + std::to_string(r.n) + " lattice sigma=h " + r.prec +
                               " median of " + std::to_string(o.direct_repeat);
        row(cd, "time_direct", r.direct_s, "s");
        row(cd, "direct_pair_rate", r.direct_rate, "1/s");
        row(cd, "u_rel_l2_error_vs_cpu", r.direct_err_u, "1");
        row(cd, "grad_u_rel_l2_error_vs_cpu", r.direct_err_g, "1");
      }
    }
    std::printf("CSV rows written to %s\n", o.csv.c_str());
  }
  return 0;
}
