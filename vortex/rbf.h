// Radial-basis-function reinitialisation (docs/design.md; Barba, Leonard & Allen 2005): new
// particles on the lattice with core σ₀ whose strengths solve
//   Σ_q α_q ζ_σ₀(x_p − x_q) = ω(x_p)   at every lattice point x_p,
// i.e. the blobs reproduce ω at the lattice points.
//
// On the periodic lattice the matrix is circulant, so two solvers:
//  - fft: exact in Fourier space. The lattice symbol of the Gaussian is, by Poisson summation,
//      S(k) = h⁻³ Π_d Σ_a exp(−σ₀² (k_d + aN)² / 2),   a ∈ {−2 … 2},
//    and α̂ = ω̂ / max(S, floor·S(0)). The floor caps the gain of the near-Nyquist modes,
//    where S/S(0) falls to ~3e-6 at σ₀ = h (condition number ~3e5): uncapped, the little
//    energy an under-resolved field has there comes back as strengths 10³× too large and
//    of alternating sign (seen at 8³ with k_p = 3: one step multiplied max|u| by 3). The
//    default floor 1e-3 limits the gain to 10³; at σ₀ = h it touches only modes with
//    Σ(k_d h)² > 2 ln 10³, i.e. |k| > 0.59 N, the corners of the cube of modes.
//  - cg: conjugate gradients per component on the same matrix with the Gaussian cut off
//    outside a cube of half-width `cutoff`·σ₀ (separable: three 1-D circular convolutions per
//    mat-vec), to a relative residual `tol`, as the papers did (5–15 iterations to 1e-3).
#pragma once

#include <string>
#include <vector>

#include "core/grid.h"

namespace vh::vortex {

enum class RbfSolver { fft, cg };

struct RbfParams {
  RbfSolver solver = RbfSolver::fft;
  double tol = 1e-6;          ///< cg: relative residual ‖b − Aα‖/‖b‖
  int max_iter = 100;         ///< cg: iteration limit
  double symbol_floor = 1e-3; ///< fft: smallest S(k)/S(0) that is inverted as is
  double cutoff = 6.0;        ///< cg: Gaussian cut off at this many σ₀ (vortex.blob_cutoff)
};

struct RbfResult {
  double residual = 0;  ///< largest relative residual over the three components (cg), or of the capped solve (fft)
  int iterations = 0;   ///< cg: largest over the components
};

/// The separable lattice symbol of the Gaussian without its h⁻³: the factor
///   s(i) = Σ_a exp(−σ² (k_i + aN)² / 2),   a ∈ {−2 … 2},
/// for every array index i of one direction (k_i = g.wavenumber(i); the same table serves the
/// half-layout x index, whose wavenumbers are i). S(k) = h⁻³ s(i_x) s(i_y) s(i_z); s → 1 as σk → 0.
std::vector<double> symbol_factors(const Grid& g, double sigma);

/// Strengths α (returned as a vector field on the lattice, [vorticity × volume]) whose blobs
/// of core σ₀ reproduce `omega` at the lattice points.
RbfResult rbf_strengths(const VectorField& omega, double sigma0, const RbfParams& prm,
                        VectorField& alpha);

/// The lattice mat-vec (Aα)_p = Σ_q α_q ζ_σ₀(x_p − x_q) with the cube cutoff (cg's matrix).
void gaussian_matvec(const std::vector<double>& alpha, const Grid& g, double sigma0, double cutoff,
                     std::vector<double>& out);

}  // namespace vh::vortex
