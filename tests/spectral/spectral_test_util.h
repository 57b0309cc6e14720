// Helpers shared by the spectral tests: fields from grid functions, norms, energies, and an
// independent (slow, straightforward) evaluation of the dealiased nonlinear term.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>

#include "core/fft.h"
#include "core/grid.h"
#include "core/initial_field.h"
#include "spectral/solver.h"

namespace vh::spectral::test {

/// Coefficients of the vector field f(x, y, z) → (u, v, w) sampled on the N³ grid.
inline SpectralVector from_grid(const Grid& g,
                                const std::function<void(double, double, double, double*)>& f) {
  VectorField u(g);
  const double h = g.h();
  for (int k = 0; k < g.n; ++k)
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.n; ++i) {
        double v[3];
        f(i * h, j * h, k * h, v);
        for (int c = 0; c < 3; ++c) u.c[c][g.index(i, j, k)] = v[c];
      }
  Fft3d fft(g.n);
  SpectralVector c(g);
  fft.forward(u, c);
  return c;
}

/// Σ_k w_k |a − b|² over the full spectrum (b may be null: Σ w |a|²).
inline double norm2(const SpectralVector& a, const SpectralVector* b = nullptr) {
  const Grid& g = a.grid;
  double s = 0;
  for (int iz = 0; iz < g.n; ++iz)
    for (int iy = 0; iy < g.n; ++iy)
      for (int ix = 0; ix <= g.n / 2; ++ix) {
        const std::size_t m = g.mode_index(ix, iy, iz);
        for (int c = 0; c < 3; ++c) {
          const Complex d = b ? a.c[c][m] - b->c[c][m] : a.c[c][m];
          s += mode_weight(ix, g.n) * std::norm(d);
        }
      }
  return s;
}

/// Relative L2 difference ‖a − b‖/‖b‖ (Parseval: the same on the grid and in k).
inline double rel_l2(const SpectralVector& a, const SpectralVector& b) {
  return std::sqrt(norm2(a, &b) / norm2(b));
}

/// K = ½⟨u·u⟩ = Σ ½|û|².
inline double energy(const SpectralVector& u) { return 0.5 * norm2(u); }

/// A random solenoidal field of the initial-field generator (nu 0.01, peak k_p), in coefficients.
inline SpectralVector random_field(int n, std::uint64_t seed, double k_p = 3) {
  InitialFieldSpec s;
  s.nu = 0.01;
  s.k_p = k_p;
  s.seed = seed;
  return make_initial_field(s, Grid{n}).u;
}

/// Independent reference of P FFT[u × ω] dealiased as `d`: evaluated on a 2N grid (alias
/// free for the retained set) with vh::Fft3d, then truncated to the retained set. For
/// `none` it is the plain aliased evaluation on the N grid.
SpectralVector reference_nonlinear(const SpectralVector& u, Dealias d);

}  // namespace vh::spectral::test
