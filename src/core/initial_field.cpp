#include "core/initial_field.h"

#include <cmath>

#include "core/error.h"
#include "core/initial_field_kernel.h"

namespace vh {

SpectrumShape parse_spectrum_shape(const std::string& s, const std::string& key) {
  if (s == "k4exp") return SpectrumShape::k4exp;
  if (s == "pope") return SpectrumShape::pope;
  if (s == "taylor-green") return SpectrumShape::taylor_green;
  if (s == "abc") return SpectrumShape::abc;
  throw InputError(key + ": unknown spectrum '" + s + "' (allowed: k4exp, pope, taylor-green, abc)");
}

std::string to_string(SpectrumShape s) {
  switch (s) {
    case SpectrumShape::k4exp: return "k4exp";
    case SpectrumShape::pope: return "pope";
    case SpectrumShape::taylor_green: return "taylor-green";
    case SpectrumShape::abc: return "abc";
  }
  return "?";
}

double model_spectrum(const InitialFieldSpec& spec, double k) {
  if (k <= 0) return 0.0;
  switch (spec.shape) {
    case SpectrumShape::k4exp: {
      const double q = k / spec.k_p;
      return std::pow(k, 4) * std::exp(-2.0 * q * q);
    }
    case SpectrumShape::pope: {
      // Pope (2000) eq. 6.246–6.248: E = C ε^{2/3} k^{−5/3} f_L(kL) f_η(kη), with
      // c_L = 6.78, c_η = 0.40, β = 5.2, p₀ = 2 (the constants quoted with the model);
      // C ε^{2/3} is absorbed by the scaling to u′.
      const double cL = 6.78, ceta = 0.40, beta = 5.2, p0 = 2.0;
      const double kL = k * spec.pope_L, keta = k * spec.pope_eta;
      const double fL = std::pow(kL / std::sqrt(kL * kL + cL), 5.0 / 3.0 + p0);
      const double feta =
          std::exp(-beta * (std::pow(std::pow(keta, 4) + std::pow(ceta, 4), 0.25) - ceta));
      return std::pow(k, -5.0 / 3.0) * fL * feta;
    }
    case SpectrumShape::taylor_green:
    case SpectrumShape::abc: return 0.0;
  }
  return 0.0;
}

ShellTable::ShellTable(const Grid& g) {
  const int ns = g.max_shell() + 1, n = g.n, h = n / 2;
  modes.assign(ns, 0);
  k2sum.assign(ns, 0);
  // Full spectrum without Nyquist indices: kx, ky, kz ∈ (−N/2, N/2).
  for (int kz = 1 - h; kz < h; ++kz)
    for (int ky = 1 - h; ky < h; ++ky)
      for (int kx = 1 - h; kx < h; ++kx) {
        const int s = modes::shell(modes::k2(kx, ky, kz));
        ++modes[s];
        k2sum[s] += std::int64_t(kx) * kx + std::int64_t(ky) * ky + std::int64_t(kz) * kz;
      }
  modes[0] = 0;  // the mean is zero
}

void validate(const InitialFieldSpec& spec) {
  if (!std::isnan(spec.u_prime) && !std::isnan(spec.K0))
    throw InputError("flow.u_prime and flow.K0 are both given (allowed: one of them, or neither)");
  if (!std::isnan(spec.u_prime) && !(spec.u_prime > 0))
    throw InputError("flow.u_prime = " + std::to_string(spec.u_prime) + " (allowed: > 0)");
  if (!std::isnan(spec.K0) && !(spec.K0 > 0))
    throw InputError("flow.K0 = " + std::to_string(spec.K0) + " (allowed: > 0)");
  const bool has_re = !std::isnan(spec.Re_lambda), has_nu = !std::isnan(spec.nu);
  if (has_re && has_nu)
    throw InputError("flow.Re_lambda and flow.nu are both given (allowed: exactly one)");
  if (!has_re && !has_nu)
    throw InputError("neither flow.Re_lambda nor flow.nu is given (allowed: exactly one)");
  if (has_nu && !(spec.nu >= 0))
    throw InputError("flow.nu = " + std::to_string(spec.nu) + " (allowed: >= 0)");
  if (has_re && !(spec.Re_lambda > 0))
    throw InputError("flow.Re_lambda = " + std::to_string(spec.Re_lambda) + " (allowed: > 0)");
  if (spec.shape == SpectrumShape::k4exp && !(spec.k_p > 0))
    throw InputError("flow.k_p = " + std::to_string(spec.k_p) + " (allowed: > 0)");
  if (spec.shape == SpectrumShape::pope && !(spec.pope_L > 0 && spec.pope_eta > 0))
    throw InputError("flow.pope_L and flow.pope_eta must be > 0");
}

static double target_K0(const InitialFieldSpec& spec, double fallback_K0) {
  if (!std::isnan(spec.K0)) return spec.K0;
  if (!std::isnan(spec.u_prime)) return 1.5 * spec.u_prime * spec.u_prime;
  return fallback_K0;
}

ModeAmplitudes mode_amplitudes(const InitialFieldSpec& spec, const Grid& g) {
  const ShellTable shells(g);
  const std::size_t ns = shells.modes.size();
  std::vector<double> E(ns, 0.0);
  double sum = 0.0;
  for (std::size_t n = 1; n < ns; ++n)
    if (shells.modes[n] > 0) sum += (E[n] = model_spectrum(spec, double(n)));
  if (!(sum > 0)) throw InputError("flow: the prescribed spectrum has no energy on this grid");
  ModeAmplitudes a;
  a.K0 = target_K0(spec, 1.5);  // default u′ = 1
  a.A.assign(ns, 0.0);
  for (std::size_t n = 1; n < ns; ++n) {
    if (shells.modes[n] == 0) continue;
    const double En = E[n] * (a.K0 / sum);
    a.A[n] = std::sqrt(2.0 * En / double(shells.modes[n]));
    a.dissipation_over_nu += 2.0 * En * double(shells.k2sum[n]) / double(shells.modes[n]);
  }
  return a;
}

double viscosity(const InitialFieldSpec& spec, double u_prime, double dissipation_over_nu) {
  if (!std::isnan(spec.nu)) return spec.nu;
  const double lambda = std::sqrt(15.0 * u_prime * u_prime / dissipation_over_nu);
  return u_prime * lambda / spec.Re_lambda;
}

InitialScalars initial_scalars(const InitialFieldSpec& spec, const Grid& g) {
  validate(spec);
  InitialScalars r;
  r.shape = spec.shape;
  r.seed = spec.seed;
  if (spec.shape == SpectrumShape::taylor_green || spec.shape == SpectrumShape::abc) {
    // Deterministic fields with V₀ = 1: K = 1/8 (Taylor–Green) or 3/2 (ABC); |k|² = 3 or 1.
    const bool tg = spec.shape == SpectrumShape::taylor_green;
    const double K_unit = tg ? 0.125 : 1.5, k2 = tg ? 3.0 : 1.0;
    r.K0 = target_K0(spec, K_unit);
    r.V0 = std::sqrt(r.K0 / K_unit);
    r.u_prime = std::sqrt(2.0 * r.K0 / 3.0);
    r.nu = viscosity(spec, r.u_prime, 2.0 * k2 * r.K0);  // Σ|k|²|û|² = |k|² · 2K
    return r;
  }
  ModeAmplitudes a = mode_amplitudes(spec, g);
  r.K0 = a.K0;
  r.u_prime = std::sqrt(2.0 * r.K0 / 3.0);
  r.nu = viscosity(spec, r.u_prime, a.dissipation_over_nu);
  r.A = std::move(a.A);
  return r;
}

namespace {

/// The field's scalars and, into u (slab order), the coefficients of the rank's modes.
/// Every mode is computed from its global wavenumber alone, so any slab gets the values the
/// whole field has there.
void fill_initial_field(const InitialFieldSpec& spec, const Slab& s, std::array<std::vector<Complex>, 3>& u,
                        double& K0, double& u_prime, double& nu) {
  const InitialScalars sc = initial_scalars(spec, s.grid);
  K0 = sc.K0;
  u_prime = sc.u_prime;
  nu = sc.nu;
  const init::ModeField field = init::mode_field(sc, sc.A.data());
  for (auto& a : u) a.assign(s.local_modes(), Complex(0.0, 0.0));
  const int n = s.grid.n, nxh = n / 2 + 1, sl = s.slots();
#pragma omp parallel for collapse(2) schedule(static)
  for (int iz = 0; iz < n; ++iz)
    for (int j = 0; j < sl; ++j)
      for (int ix = 0; ix < nxh; ++ix) {
        double re[3], im[3];
        field(n, ix, s.ky_index(j), iz, re, im);
        for (int d = 0; d < 3; ++d) u[d][s.mode_index(ix, j, iz)] = Complex(re[d], im[d]);
      }
}

}  // namespace

InitialField make_initial_field(const InitialFieldSpec& spec, const Grid& g) {
  InitialField f;
  f.u.grid = g;
  fill_initial_field(spec, Slab::whole_grid(g), f.u.c, f.K0, f.u_prime, f.nu);
  return f;
}

InitialSlab make_initial_field(const InitialFieldSpec& spec, const Slab& s) {
  InitialSlab f;
  f.u.slab = s;
  fill_initial_field(spec, s, f.u.c, f.K0, f.u_prime, f.nu);
  return f;
}

}  // namespace vh
