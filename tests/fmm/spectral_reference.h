// Exact periodic reference for the FMM tests, independent of fmm/ code (docs/design.md "Exact
// reference for tests"): particles on the N^3 lattice x_j = h j, h = 2 pi / N, strengths alpha_j,
// common core radius sigma.  u(x_j) = sum_m e^{i m.x_j} sum_a U(m + a N), a in {-1,0,1}^3, with
//   U(k) = i k x omega_sigma(k) / |k|^2,  omega_sigma(k) = alpha^(k mod N) exp(-sigma^2 |k|^2 / 2) / (2 pi)^3,
// alpha^ the unnormalised forward DFT (FFTW_FORWARD), the sum over m a backward FFT; U(0) = 0.
// Gradient: the same with i k_l U_m(k).  Accurate to ~exp(-(3 pi sigma / h)^2 / 2) for sigma >= h.
#pragma once

#include <array>
#include <vector>

namespace vh::fmm::testing {

/// alpha, u, grad indexed [(i * N + j) * N + k] for the point (i, j, k) h (x index slowest).
void spectral_velocity(int n, double sigma, const std::vector<std::array<double, 3>>& alpha,
                       std::vector<std::array<double, 3>>& u, std::vector<std::array<std::array<double, 3>, 3>>& grad);

/// A random solenoidal vorticity on the N^3 lattice (curl of a random field, Nyquist modes
/// removed, zero mean), same indexing, unit rms.
std::vector<std::array<double, 3>> random_solenoidal(int n, unsigned seed);

/// Blobs on the N^3 lattice in the same order: x = h (i, j, k) and alpha = omega h^3.
void lattice_blobs(int n, const std::vector<std::array<double, 3>>& omega, std::vector<std::array<double, 3>>& x,
                   std::vector<std::array<double, 3>>& alpha);

}  // namespace vh::fmm::testing
