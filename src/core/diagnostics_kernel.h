// Per-mode and per-point terms of the diagnostics (diagnostics.h), shared by the CPU
// (diagnostics.cpp) and the GPU (diagnostics.cu) so that both sum the same terms; the
// wavenumbers, weights and curl are core/modes_kernel.h's. A mode is (ix, iy, iz) of the half
// layout of an n³ grid, its three coefficients u[0..2] normalised as grid.h; w is its
// mode_weight (2 where it stands for its conjugate too).
#pragma once

#include "base/hd.h"
#include "core/modes_kernel.h"

namespace vh::diag {

using C = modes::Cx<double>;

/// |û|² = Σ_c |û_c|².
VH_HD inline double abs2(const C u[3]) { return modes::abs2(u[0]) + modes::abs2(u[1]) + modes::abs2(u[2]); }

/// A mode's shell round(|k|) and its terms in E_n (½ w |û|²) and in D = Σ|k|²|û|² (w |k|² |û|²).
struct SpectrumTerms {
  int shell;
  double energy, grad2;
};
VH_HD inline SpectrumTerms spectrum_terms(int n, int ix, int iy, int iz, const C u[3]) {
  const double k2 = modes::k2(ix, modes::signed_k(iy, n), modes::signed_k(iz, n));
  const double w = modes::mode_weight(ix, n), a = abs2(u);
  return {modes::shell(k2), 0.5 * w * a, w * k2 * a};
}

/// A mode's terms in ‖∇·u‖² (w |k·û|²) and in the helicity ⟨u·ω⟩ (w Re(û*·ω̂), ω̂ = i k × û),
/// with the derivative wavenumbers (modes::derivative_k: the Nyquist mode's derivative is 0).
struct DivergenceHelicityTerms {
  double div2, helicity;
};
VH_HD inline DivergenceHelicityTerms divergence_helicity_terms(int n, int ix, int iy, int iz, const C u[3]) {
  double k[3];
  modes::derivative_wavevector(n, ix, iy, iz, k);
  const C kd = k[0] * u[0] + k[1] * u[1] + k[2] * u[2];  // the divergence is i k·û; its modulus counts
  C w[3];
  modes::curl(k[0], k[1], k[2], u, w);
  const double h = modes::re_conj_mul(u[0], w[0]) + modes::re_conj_mul(u[1], w[1]) + modes::re_conj_mul(u[2], w[2]);
  const double wt = modes::mode_weight(ix, n);
  return {wt * modes::abs2(kd), wt * h};
}

/// The coefficient of ∂u_c/∂x_d at mode (ix, iy, iz) from uc = û_c: i k_d û_c with the
/// derivative wavenumber.
VH_HD inline C derivative_term(int n, int d, int ix, int iy, int iz, C uc) {
  double k[3];
  modes::derivative_wavevector(n, ix, iy, iz, k);
  return modes::times_i(k[d] * uc);
}

/// Adds a point value v of a longitudinal derivative to the sums Σv² (sum[0]) and Σv³ (sum[1]).
VH_HD inline void add_moments(double v, double* sum) {
  sum[0] += v * v;
  sum[1] += v * v * v;
}

/// One direction's skewness ⟨v³⟩/⟨v²⟩^{3/2} from the sums Σv², Σv³ over `points` values (0 for
/// a zero field).
inline double skewness(double sum2, double sum3, double points) {
  const double m2 = sum2 / points, m3 = sum3 / points;
  return m2 > 0 ? m3 / pow(m2, 1.5) : 0.0;
}

/// ‖∇·u‖₂/‖∇u‖₂ from Σ w|k·û|² and D = Σ w|k|²|û|² (0 for a zero field).
inline double divergence_rel(double div2, double D) { return D > 0 ? sqrt(div2 / D) : 0.0; }

}  // namespace vh::diag
