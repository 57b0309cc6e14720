// tgv_check: the Taylor–Green vortex at Re = 1600 (ν = 1/1600, u = sin x cos y cos z,
// v = −cos x sin y cos z, w = 0) to t = 20, against the 512³ pseudo-spectral reference
// validation/data/spectral_Re1600_512.gdiag (columns t, E, ε = −dE/dt, ½⟨ω²⟩; peak
// ε = 1.28575e-2 at t = 8.97). Issue 3, "Must show" 6.
//
//   tgv_check [--device gpu|cpu] [--n 256] [--dealias 3/2|2/3|none] [--dt 0.01]
//             [--t-end 20] [--ref FILE] [--csv] [--check] [--pruned]
//
// K and ε = 2ν·½⟨ω²⟩ (mode by mode) are sampled every 0.01 (dt must divide 0.01), at the
// reference's times. Prints the peak of ε (parabola through the largest sample and its
// neighbours) and its time, and relative L2 misfits ‖f − f_ref‖₂/‖f_ref‖₂ of K(t) and ε(t)
// over the samples in [0, t_end]. --check: exit 1 unless the peak is within 1 % and its
// time within ±0.1 of the reference's. Cost: 2000 steps; ~2 min at 256³ on an H200.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/args.h"
#include "bench/csv_rows.h"
#include "core/device.h"
#include "core/error.h"
#include "core/initial_field.h"
#include "spectral/solver.h"
#include "validation/reference_data.h"

using namespace vh;
using namespace vh::spectral;

namespace {

struct Series {
  std::vector<double> t, K, eps;
};

Series read_reference(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError("--ref: cannot open " + path);
  Series s;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    double t, E, eps, Om;
    if (is >> t >> E >> eps >> Om) {
      s.t.push_back(t);
      s.K.push_back(E);
      s.eps.push_back(eps);
    }
  }
  if (s.t.empty()) throw InputError("--ref: no data rows in " + path);
  return s;
}

/// Peak of y(t) on uniform samples: parabola through the largest sample and its neighbours.
void peak(const std::vector<double>& t, const std::vector<double>& y, double& tp, double& yp) {
  std::size_t i = 0;
  for (std::size_t j = 1; j < y.size(); ++j)
    if (y[j] > y[i]) i = j;
  tp = t[i];
  yp = y[i];
  if (i == 0 || i + 1 >= y.size()) return;
  const double a = y[i - 1], b = y[i], c = y[i + 1], h = t[i + 1] - t[i];
  const double den = a - 2 * b + c;
  if (den >= 0) return;
  const double x = 0.5 * (a - c) / den;
  tp = t[i] + x * h;
  yp = b - 0.25 * (a - c) * x;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "gpu", dealias = "3/2", ref = validation::data_dir() + "/spectral_Re1600_512.gdiag";
  int n = 256;
  double dt = 0.01, t_end = 20;
  bool csv = false, check = false, pruned = false;
  try {
    for (vh::bench::Args a(argc, argv); a.next();) {
      if (a.is("--device")) device = a.value();
      else if (a.is("--n")) n = a.integer();
      else if (a.is("--dealias")) dealias = a.value();
      else if (a.is("--dt")) dt = a.real();
      else if (a.is("--t-end")) t_end = a.real();
      else if (a.is("--ref")) ref = a.value();
      else if (a.is("--csv")) csv = true;
      else if (a.is("--check")) check = true;
      else if (a.is("--pruned")) pruned = true;
      else a.unknown();
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "tgv_check: %s\n", e.what());
    return 2;
  }
  try {
    const Series r = read_reference(ref);
    const int per = int(std::lround(0.01 / dt));
    if (per < 1 || std::fabs(per * dt - 0.01) > 1e-12) throw InputError("--dt: must divide 0.01");
    const Backend b = resolve_backend(device);
    const Grid g{n};
    InitialFieldSpec spec;
    spec.shape = SpectrumShape::taylor_green;
    spec.nu = 1.0 / 1600;
    const InitialField f = make_initial_field(spec, g);
    Params p;
    p.nu = f.nu;
    p.pruned_transforms = pruned;
    p.dealias = dealias == "3/2" ? Dealias::three_halves : dealias == "2/3" ? Dealias::two_thirds : Dealias::none;
    auto s = make_solver(p, g, b);
    s->set_velocity(f.u, 0.0);
    Series m;
    const int samples = int(std::lround(t_end / 0.01));
    const auto t0 = std::chrono::steady_clock::now();
    for (int j = 0; j < int(std::min<std::size_t>(samples, r.t.size())); ++j) {
      if (j > 0)
        for (int k = 0; k < per; ++k) s->step(dt);
      const Energies e = s->energies();
      m.t.push_back(j * 0.01);
      m.K.push_back(e.K);
      m.eps.push_back(2 * p.nu * e.enstrophy);
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double sK = 0, sKr = 0, sE = 0, sEr = 0;
    for (std::size_t j = 0; j < m.t.size(); ++j) {
      sK += std::pow(m.K[j] - r.K[j], 2);
      sKr += r.K[j] * r.K[j];
      sE += std::pow(m.eps[j] - r.eps[j], 2);
      sEr += r.eps[j] * r.eps[j];
    }
    const double mK = std::sqrt(sK / sKr), mE = std::sqrt(sE / sEr);
    double tp, ep, tr, er;
    peak(m.t, m.eps, tp, ep);
    std::vector<double> rt(r.t.begin(), r.t.begin() + m.t.size()), re(r.eps.begin(), r.eps.begin() + m.t.size());
    peak(rt, re, tr, er);
    const std::string dev = device_name(b);
    std::printf("# tgv_check: Taylor-Green Re=1600, N=%d, dealias %s, dt %g, t in [0, %.2f], %s\n", n,
                dealias.c_str(), dt, m.t.back(), dev.c_str());
    std::printf("peak epsilon    %.6e at t = %.3f   (reference %.6e at t = %.3f)\n", ep, tp, er, tr);
    std::printf("peak rel error  %+.3e, time error %+.3f\n", ep / er - 1, tp - tr);
    std::printf("K   rel L2 misfit %.3e   (K(t_end) = %.6f, reference %.6f)\n", mK, m.K.back(), r.K[m.t.size() - 1]);
    std::printf("eps rel L2 misfit %.3e\n", mE);
    std::printf("wall time %.1f s, %.1f steps/s\n", wall, (m.t.size() - 1) * per / wall);
    if (csv) {
      std::string h = VH_GIT_HASH;
      h = h.substr(0, 7) + (h.find("dirty") != std::string::npos ? "-dirty" : "");
      char cs[160], v[6][32];
      std::snprintf(cs, sizeof cs, "TGV Re=1600 N=%d dealias=%s fp64%s dt=%g t<=%.2f", n, dealias.c_str(),
                    pruned ? " pruned" : "", dt, m.t.back());
      std::snprintf(v[0], sizeof v[0], "%.6e", ep);
      std::snprintf(v[1], sizeof v[1], "%.4f", tp);
      std::snprintf(v[2], sizeof v[2], "%.3e", ep / er - 1);
      std::snprintf(v[3], sizeof v[3], "%.3e", mK);
      std::snprintf(v[4], sizeof v[4], "%.3e", mE);
      std::snprintf(v[5], sizeof v[5], "%.1f", wall);
      std::fflush(stdout);  // the report went through printf, the rows go through std::cout
      vh::bench::CsvRows out(std::cout, "tgv_check", dev, h);
      out.row(cs, "peak_epsilon", v[0], "1/time");
      out.row(cs, "peak_time", v[1], "time");
      out.row(cs, "peak_epsilon_rel_error", v[2], "1");
      out.row(cs, "K_rel_l2_misfit", v[3], "1");
      out.row(cs, "epsilon_rel_l2_misfit", v[4], "1");
      out.row(cs, "wall_time", v[5], "s");
    }
    if (check && !(std::fabs(ep / er - 1) <= 0.01 && std::fabs(tp - tr) <= 0.1)) return 1;
  } catch (const InputError& e) {
    std::fprintf(stderr, "tgv_check: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tgv_check: %s\n", e.what());
    return 1;
  }
  return 0;
}
