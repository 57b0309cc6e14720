// fmm_bench: CPU FMM of the regularised Biot-Savart kernel, time per evaluation of u and grad u
// for N = 2^min ... 2^max random blobs in [0, 2 pi)^3 (sigma = mean spacing h = 2 pi / N^(1/3),
// alpha uniform with zero mean), split by stage; relative L2 error of u and grad u against the
// free-space direct sum on 1000 sampled targets; least-squares slope of log time vs log N.
//
//   fmm_bench [--device cpu] [--min-log2n 14] [--max-log2n 18] [--p 10] [--theta 0.5]
//             [--ncrit 64] [--tolerance 1e-6] [--images 5] [--p2p-max-pairs -1] [--periodic]
//             [--lattice] [--gpu-p2p] [--precision single|double] [--repeat 3] [--csv]
//
// --lattice: particles on the n^3 lattice (cell centres) displaced by up to +-0.1 h (only the
// sizes with log2 N divisible by 3).  --gpu-p2p: near field on the GPU (Params::use_gpu, CUDA
// builds), far field on the CPU meanwhile; --precision sets its working precision.
//
// Each size: one warm-up evaluation, then the median of --repeat.  With --periodic the error
// column is left out (the direct sum is free space).  --csv prints rows
// date,commit,device,benchmark,case,metric,value,unit (../shared/RESULTS-FORMAT.md) after the
// table.  Cost on 2 cores of an AMD EPYC: about 1 minute up to 2^16, ~10 minutes up to 2^18.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fmm/fmm.h"
#include "fmm/p2p.h"
#ifdef VH_FMM_HAVE_CUDA
#include "fmm/p2p_gpu.h"
#endif

#ifndef VH_GIT_HASH
#define VH_GIT_HASH "unknown"
#endif

namespace {

using vh::fmm::Mat3;
using vh::fmm::Vec3;

struct Options {
  int min_log2n = 14, max_log2n = 18, repeat = 3;
  bool csv = false, lattice = false;
  std::string device = "cpu";
  vh::fmm::Params prm;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("missing value after " + a);
      return argv[++i];
    };
    if (a == "--csv") o.csv = true;
    else if (a == "--periodic") o.prm.periodic = true;
    else if (a == "--lattice") o.lattice = true;
    else if (a == "--gpu-p2p") o.prm.use_gpu = true;
    else if (a == "--precision") o.prm.set("precision", next());
    else if (a == "--device") o.device = next();
    else if (a == "--min-log2n") o.min_log2n = std::stoi(next());
    else if (a == "--max-log2n") o.max_log2n = std::stoi(next());
    else if (a == "--repeat") o.repeat = std::stoi(next());
    else if (a == "--p") o.prm.set("p", next());
    else if (a == "--theta") o.prm.set("theta", next());
    else if (a == "--ncrit") o.prm.set("ncrit", next());
    else if (a == "--tolerance") o.prm.set("tolerance", next());
    else if (a == "--images") o.prm.set("images", next());
    else if (a == "--p2p-max-pairs") o.prm.set("p2p_max_pairs", next());
    else if (a == "--help" || a == "-h") {
      std::printf("usage: fmm_bench [--device cpu] [--min-log2n N] [--max-log2n N] [--p P] [--theta T] "
                  "[--ncrit N] [--tolerance E] [--images K] [--p2p-max-pairs M] [--periodic] [--lattice] [--gpu-p2p] [--precision single|double] [--repeat R] "
                  "[--csv]\n");
      std::exit(0);
    } else {
      throw std::invalid_argument("unknown option " + a);
    }
  }
  if (o.device != "cpu") throw std::invalid_argument("--device " + o.device + ": only cpu is available in this build");
  if (o.min_log2n < 1 || o.max_log2n < o.min_log2n || o.max_log2n > 26)
    throw std::invalid_argument("bad --min/max-log2n");
  if (o.repeat < 1) throw std::invalid_argument("--repeat must be >= 1");
  o.prm.validate();
  return o;
}

std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      std::string s = line.substr(p + 2);
      return s + " (" + std::to_string(omp_get_max_threads()) + " threads)";
    }
  return "CPU (" + std::to_string(omp_get_max_threads()) + " threads)";
}

struct Row {
  int n;
  vh::fmm::Timings t;  // median total, with the stages of that run
  double err_u = -1, err_g = -1;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fmm_bench: %s\n", e.what());
    return 2;
  }
  const auto& prm = o.prm;
  const std::string near = prm.use_gpu ? "GPU near field (" + prm.precision + ")" : "CPU near field";
  std::printf("fmm_bench: %s, %s, %s%s, p = %d, theta = %g, ncrit = %d, tolerance = %g%s, commit %s\n",
              o.device.c_str(), near.c_str(), prm.periodic ? "periodic" : "free space", o.lattice ? " lattice" : "",
              prm.p, prm.theta, prm.ncrit, prm.tolerance,
              prm.periodic ? (", images = " + std::to_string(prm.images)).c_str() : "", VH_GIT_HASH);
  std::printf("%9s %9s %8s %8s %8s %8s %8s %8s %10s %10s %11s\n", "N", "total[s]", "tree", "p2m/m2m", "m2l*",
              "l2l/l2p", "p2p", "us/part", "err u", "err grad", "P2P pairs/N");
  std::vector<Row> rows;
  for (int lg = o.min_log2n; lg <= o.max_log2n; ++lg) {
    const int n = 1 << lg;
    if (o.lattice && lg % 3 != 0) continue;
    std::mt19937_64 gen(1234 + lg);
    std::uniform_real_distribution<double> U(0.0, 1.0);
    const double L = 2 * M_PI, h = L / std::cbrt(double(n));
    std::vector<Vec3> x(n), a(n);
    std::vector<double> s(n, h);
    Vec3 mean{};
    const int m = 1 << (lg / 3);  // lattice points per side
    for (int i = 0; i < n; ++i) {
      if (o.lattice) {
        const int ijk[3] = {i / (m * m), (i / m) % m, i % m};
        for (int d = 0; d < 3; ++d) x[i][d] = (ijk[d] + 0.5 + 0.2 * (U(gen) - 0.5)) * h;
      } else {
        for (int d = 0; d < 3; ++d) x[i][d] = L * U(gen);
      }
      for (int d = 0; d < 3; ++d) mean[d] += (a[i][d] = U(gen) - 0.5) / n;
    }
    for (auto& v : a)
      for (int d = 0; d < 3; ++d) v[d] -= mean[d];
    std::vector<Vec3> u;
    std::vector<Mat3> g;
    vh::fmm::evaluate_self(prm, x, a, s, u, g);  // warm-up
    std::vector<vh::fmm::Timings> runs;
    for (int r = 0; r < o.repeat; ++r) runs.push_back(vh::fmm::evaluate_self(prm, x, a, s, u, g));
    std::sort(runs.begin(), runs.end(), [](const auto& p, const auto& q) { return p.total < q.total; });
    Row row{n, runs[runs.size() / 2]};
    if (!prm.periodic) {
      // 1000 sampled targets (the particles themselves, self pair left out).
      const int ns = std::min(n, 1000);
      std::vector<Vec3> tg(ns), us(ns);
      std::vector<Mat3> gs(ns);
      std::vector<int> idx(ns);
      for (int i = 0; i < ns; ++i) idx[i] = int((long long)i * n / ns);
      for (int i = 0; i < ns; ++i) {
        tg[i] = x[idx[i]];
        us[i] = u[idx[i]];
        gs[i] = g[idx[i]];
      }
      std::vector<Vec3> ud(ns);
      std::vector<Mat3> gd(ns);
#pragma omp parallel for schedule(dynamic, 8)
      for (int i = 0; i < ns; ++i) {
        ud[i] = Vec3{};
        gd[i] = Mat3{};
        vh::fmm::p2p(&tg[i], 1, idx[i], x.data(), a.data(), s.data(), n, 0, Vec3{}, true, &ud[i], &gd[i]);
      }
      double nu = 0, du = 0, ng = 0, dg = 0;
      for (int i = 0; i < ns; ++i)
        for (int m = 0; m < 3; ++m) {
          nu += (us[i][m] - ud[i][m]) * (us[i][m] - ud[i][m]);
          du += ud[i][m] * ud[i][m];
          for (int k = 0; k < 3; ++k) {
            ng += (gs[i][m][k] - gd[i][m][k]) * (gs[i][m][k] - gd[i][m][k]);
            dg += gd[i][m][k] * gd[i][m][k];
          }
        }
      row.err_u = std::sqrt(nu / du);
      row.err_g = std::sqrt(ng / dg);
    }
    const auto& t = row.t;
    char eu[32] = "-", eg[32] = "-";
    if (row.err_u >= 0) {
      std::snprintf(eu, sizeof eu, "%.2e", row.err_u);
      std::snprintf(eg, sizeof eg, "%.2e", row.err_g);
    }
    std::printf("%9d %9.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.2f %10s %10s %11.0f\n", n, t.total, t.tree, t.p2m_m2m,
                t.traverse + t.m2l, t.l2l_l2p, t.p2p, 1e6 * t.total / n, eu, eg, double(t.n_p2p_pairs) / n);
    std::fflush(stdout);
    rows.push_back(row);
  }
  // Least-squares slope of log(total) against log(N).
  double slope = NAN;
  if (rows.size() >= 2) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& r : rows) {
      const double lx = std::log(double(r.n)), ly = std::log(r.t.total);
      sx += lx;
      sy += ly;
      sxx += lx * lx;
      sxy += lx * ly;
    }
    const double k = double(rows.size());
    slope = (k * sxy - sx * sy) / (k * sxx - sx * sx);
  }
  std::printf("m2l* includes the traversal (list building).  fitted slope d log t / d log N = %.3f\n", slope);

  if (o.csv) {
    char date[16];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
    std::string dev = cpu_name();
#ifdef VH_FMM_HAVE_CUDA
    if (prm.use_gpu) dev = vh::fmm::gpu_name() + " + " + dev;
#endif
    std::string commit = VH_GIT_HASH;
    auto row = [&](const std::string& cs, const char* metric, double v, const char* unit) {
      std::printf("%s,%s,%s,fmm,%s,%s,%.6g,%s\n", date, commit.c_str(), dev.c_str(), cs.c_str(), metric, v, unit);
    };
    std::printf("date,commit,device,benchmark,case,metric,value,unit\n");
    for (const auto& r : rows) {
      const std::string cs = std::string(prm.periodic ? "periodic" : "free space") + (o.lattice ? " lattice" : "") +
                             (prm.use_gpu ? " gpu-p2p " + prm.precision : "") + " N=" + std::to_string(r.n) +
                             " p=" + std::to_string(prm.p) + " theta=" + std::to_string(prm.theta).substr(0, 4) +
                             " ncrit=" + std::to_string(prm.ncrit) + " sigma=h median of " + std::to_string(o.repeat);
      row(cs, "time_per_eval", r.t.total, "s");
      row(cs, "time_tree", r.t.tree, "s");
      row(cs, "time_p2m_m2m", r.t.p2m_m2m, "s");
      row(cs, "time_traverse_m2l", r.t.traverse + r.t.m2l, "s");
      row(cs, "time_l2l_l2p", r.t.l2l_l2p, "s");
      row(cs, "time_p2p", r.t.p2p, "s");
      if (r.err_u >= 0) {
        row(cs, "u_rel_l2_error", r.err_u, "1");
        row(cs, "grad_u_rel_l2_error", r.err_g, "1");
      }
    }
    if (rows.size() >= 2)
      row(std::string(prm.periodic ? "periodic" : "free space") + " N=2^" + std::to_string(o.min_log2n) + "..2^" +
              std::to_string(o.max_log2n) + " p=" + std::to_string(prm.p),
          "time_slope_vs_n", slope, "1");
  }
  return 0;
}
