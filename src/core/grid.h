// The periodic grid and the field types every module shares.
//
// Box [0, 2π)³ with N points per direction, spacing h = 2π/N, point (i, j, k) at
// x = (i h, j h, k h). Physical arrays are stored with x the fastest index: [z][y][x]
// (flat index (k N + j) N + i). Vector fields are three such arrays (structure of arrays).
//
// Spectral coefficients use the real-to-complex half layout over x: [kz][ky][kx] with
// kx = 0 … N/2 and ky, kz = 0 … N−1 standing for the signed wavenumbers of `wavenumber()`.
// Normalisation: a field u(x) = Σ_k c(k) e^{i k·x}, i.e. c = FFT_forward(u) / N³. The
// half layout stores kx ≥ 0 only; every mode with 0 < kx < N/2 stands for itself and its
// conjugate, hence the weights of `mode_weight()`. The per-mode math of this layout (index,
// wavenumber, weight, curl, projection) lives in core/modes_kernel.h, host and device.
#pragma once

#include <array>
#include <complex>
#include <cstddef>
#include <vector>

#include "core/modes_kernel.h"

namespace vh {

using Complex = std::complex<double>;
constexpr double kPi = 3.14159265358979323846;

/// The N³ periodic grid on [0, 2π)³.
struct Grid {
  int n = 0;  ///< points per direction (even, ≥ 8)

  double h() const { return 2.0 * kPi / n; }
  std::size_t points() const { return std::size_t(n) * n * n; }
  /// Number of complex coefficients in the half layout: N · N · (N/2 + 1).
  std::size_t modes() const { return std::size_t(n) * n * (n / 2 + 1); }
  std::size_t index(int i, int j, int k) const { return (std::size_t(k) * n + j) * n + i; }
  std::size_t mode_index(int ix, int iy, int iz) const { return vh::modes::mode_index(ix, iy, iz, n); }
  /// Signed wavenumber of array index `i` along y or z (Nyquist index N/2 maps to −N/2).
  int wavenumber(int i) const { return vh::modes::signed_k(i, n); }
  /// Largest shell index |k| rounded to the nearest integer that the half layout holds.
  int max_shell() const;
  /// Largest |k_i| a field on the grid carries: N/2 − 1 (the Nyquist modes, whose sign is
  /// ambiguous, are zero in every field of this code). The initial field's k_max, and the
  /// bound of every solver's (spectral::resolved_kmax, vortex::resolved_kmax).
  int kmax() const { return n / 2 - 1; }
};

/// Weight of a half-layout mode in a sum over the full spectrum, mode_weight(ix, n): 1 on the
/// kx = 0 and kx = N/2 planes, 2 elsewhere (the mode stands for its conjugate too).
using modes::mode_weight;

/// A real vector field on the grid: three arrays in [z][y][x] order. Spread over ranks
/// (core/slab.h), each rank's arrays hold its `planes` z-planes only.
struct VectorField {
  Grid grid;
  std::array<std::vector<double>, 3> c;

  VectorField() = default;
  explicit VectorField(Grid g) : grid(g) {
    for (auto& a : c) a.assign(g.points(), 0.0);
  }
  VectorField(Grid g, int planes) : grid(g) {
    for (auto& a : c) a.assign(std::size_t(planes) * g.n * g.n, 0.0);
  }
};

/// A real scalar field on the grid in [z][y][x] order (or a slab's z-planes, as VectorField).
struct ScalarField {
  Grid grid;
  std::vector<double> v;

  ScalarField() = default;
  explicit ScalarField(Grid g) : grid(g), v(g.points(), 0.0) {}
  ScalarField(Grid g, int planes) : grid(g), v(std::size_t(planes) * g.n * g.n, 0.0) {}
};

/// Spectral coefficients of a vector field in the half layout (see the header comment).
struct SpectralVector {
  Grid grid;
  std::array<std::vector<Complex>, 3> c;

  SpectralVector() = default;
  explicit SpectralVector(Grid g) : grid(g) {
    for (auto& a : c) a.assign(g.modes(), Complex(0.0, 0.0));
  }
};

}  // namespace vh
