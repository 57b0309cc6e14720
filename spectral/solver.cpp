#include "spectral/solver.h"

#include "core/error.h"
#include "spectral/cpu_solver.h"
#include "spectral/gpu_solver.h"

namespace vh::spectral {

std::vector<vh::OptionSpec> option_specs() {
  return {
      {"spectral.dealias", "3/2|2/3|none", "3/2", "",
       "dealiasing of u×ω: 3/2-rule zero padding, 2/3-rule truncation, or none"},
      {"spectral.viscosity", "integrating-factor|explicit", "integrating-factor", "",
       "viscous term: exact integrating factor exp(-nu k^2 dt), or explicit in RK4"},
      {"spectral.precision", "double|single", "double", "",
       "floating-point precision of the spectral solver (single: GPU only)"},
      {"spectral.fft_callbacks", "bool", "false", "",
       "GPU: fold the per-point passes into cuFFT LTO callbacks (same results; 4 % faster at 512^3 "
       "with 2/3, 5 % slower at 256^3 with 3/2 on an H200; ignored on the CPU)"},
      {"spectral.transforms", "auto|cufft|fused", "auto", "",
       "GPU: 3-D transforms by cuFFT, or fused pruned passes of cuFFTDx line FFTs (falls back to "
       "cuFFT where unsupported); auto takes the one measured faster for the case"},
      {"spectral.overlap", "bool", "true", "",
       "GPU, several ranks, fused transforms, NCCL or peer copies: the rank's planes in chunks, each "
       "chunk's exchanges beside the passes of another (same results; 512^3 2/3 on 4 H200s 21.87 "
       "against 27.10 ms a step: bench/RESULTS.md, 2026-11-28 \"peer copies\")"},
  };
}

Params params_from(const vh::Options& o, double nu) {
  Params p;
  const std::string d = o.choice("spectral.dealias", {"3/2", "2/3", "none"});
  p.dealias = d == "3/2" ? Dealias::three_halves : d == "2/3" ? Dealias::two_thirds : Dealias::none;
  const std::string v = o.choice("spectral.viscosity", {"integrating-factor", "explicit"});
  p.viscosity = v == "explicit" ? Viscosity::explicit_rk4 : Viscosity::integrating_factor;
  p.single_precision = o.choice("spectral.precision", {"double", "single"}) == "single";
  p.fft_callbacks = o.boolean("spectral.fft_callbacks");
  const std::string t = o.choice("spectral.transforms", {"auto", "cufft", "fused"});
  p.transforms = t == "cufft" ? Transforms::cufft : t == "fused" ? Transforms::fused : Transforms::automatic;
  p.overlap_exchange = o.boolean("spectral.overlap");
  if (!(nu >= 0)) throw vh::InputError("flow.nu: viscosity must be >= 0 for the spectral solver");
  p.nu = nu;
  return p;
}

const char* to_string(Dealias d) {
  switch (d) {
    case Dealias::three_halves: return "3/2";
    case Dealias::two_thirds: return "2/3";
    case Dealias::none: return "none";
  }
  return "?";
}

int kept_kmax(Dealias d, int n) { return d == Dealias::two_thirds ? (n - 1) / 3 : n / 2 - 1; }

double resolved_kmax(const Params& p, int n) { return kept_kmax(p.dealias, n); }

std::unique_ptr<Solver> make_solver(const Params& p, const vh::Grid& g, vh::Backend b) {
  return make_solver(p, vh::Slab::whole_grid(g, kept_kmax(p.dealias, g.n)), b);
}

std::unique_ptr<Solver> make_solver(const Params& p, const vh::Slab& s, vh::Backend b) {
  const vh::Grid& g = s.grid;
  if (g.n < 8 || g.n % 2 != 0) throw vh::InputError("domain.n: the spectral solver needs an even N >= 8");
  if (p.dealias == Dealias::three_halves && g.n % 4 != 0)
    throw vh::InputError("domain.n: the 3/2 rule needs N divisible by 4 (even 3N/2)");
  if (s.ranks() > g.n)
    throw vh::InputError("ranks: " + std::to_string(s.ranks()) + " ranks for domain.n = " + std::to_string(g.n) +
                         " (allowed: at most N ranks, one z-plane each)");
  VH_CHECK(s.kmax == kept_kmax(p.dealias, g.n), "make_solver: the slab orders ky for another dealiasing");
  if (b == vh::Backend::gpu) return make_gpu_solver(p, s);
  if (p.single_precision)
    throw vh::InputError("spectral.precision: single precision is available on the GPU only");
  return make_cpu_solver(p, s);
}

void Solver::set_velocity(const vh::SpectralVector& u, double t) {
  set_velocity(vh::SpectralSlab::whole(u), t);
}

void Solver::velocity(vh::SpectralVector& u) {
  vh::SpectralSlab s;
  velocity(s);
  u = std::move(s).to_vector();
}

void Solver::nonlinear_term(vh::SpectralVector& out) {
  vh::SpectralSlab s;
  nonlinear_term(s);
  out = std::move(s).to_vector();
}

}  // namespace vh::spectral
