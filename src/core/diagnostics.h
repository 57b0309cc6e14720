// Diagnostics shared by both solvers (docs/design.md, "Shared definitions").
//
// All take the velocity on the N³ grid (or its coefficients, grid.h normalisation) and
// nothing else. Sums run over the full spectrum (half layout with mode_weight()).
//   K   = ½⟨u·u⟩ = Σ_k ½|û|²            u′ = √(2K/3)
//   E_n = Σ_{round|k| = n} ½|û|²          (shells of width 1 centred on integers; Σ E_n = K)
//   ε   = 2ν Σ_k |k|² ½|û|²              (mode by mode, not from E_n)
//   λ   = √(15 ν u′²/ε),  Re_λ = u′λ/ν,  L = π/(2u′²) Σ_{n≥1} E_n/n,  T = L/u′
//   S₃  = ⅓ Σ_i ⟨(∂u_i/∂x_i)³⟩/⟨(∂u_i/∂x_i)²⟩^{3/2}
//   Q   = −½ ∂_i u_j ∂_j u_i                (spectral derivatives)
//   R   = −⅓ ∂_i u_j ∂_j u_k ∂_k u_i         (gradient_invariants(), with Q and ⟨ω·ω⟩/4)
// Derivatives use i k with the Nyquist wavenumber set to zero.
// Each function also comes for a field spread over ranks (SpectralSlab, core/slab.h): the
// sums are then reduced over the ranks (every rank gets the result; collective), and
// fields on the grid hold the rank's z-planes. With one rank the two are the same loops.
#pragma once

#include <memory>
#include <vector>

#include "core/fft.h"
#include "core/grid.h"
#include "core/slab.h"

namespace vh {

class GpuSlabFft;

/// Statistics of one velocity field.
struct Statistics {
  double K = 0, epsilon = 0, u_prime = 0, L = 0, T = 0, lambda = 0, Re_lambda = 0, S3 = 0;
  double enstrophy = 0;       ///< ½⟨ω·ω⟩ = Σ_k |k|² ½|û|² (= ε/2ν)
  double divergence_rel = 0;  ///< ‖∇·u‖₂ / ‖∇u‖₂, spectral
  double helicity = 0;        ///< ⟨u·ω⟩ = Σ_k Re(û* · (i k × û))
};

/// η = (ν³/ε)^{1/4}, the Kolmogorov length of a flow of viscosity ν dissipating ε (infinite
/// for ε = 0: nothing to resolve). k_max η ≥ 1 is the usual lower bound of a resolved
/// dissipation range (Pope 2000, ch. 9, takes 1.5 for good resolution), k_max the largest
/// wavenumber the solver keeps (resolved_kmax of spectral/solver.h and vortex/solver.h).
double kolmogorov_length(double nu, double epsilon);

/// E_n for n = 0 … grid.max_shell().
std::vector<double> energy_spectrum(const SpectralVector& u);
std::vector<double> energy_spectrum(const SpectralSlab& u);

/// Σ_k |k|² |û|² over the full spectrum: ε = ν · this, enstrophy = ½ · this.
double gradient_norm2(const SpectralVector& u);
double gradient_norm2(const SpectralSlab& u);

/// Statistics that need only a shell spectrum E_n at integer shells k_n (n ≥ 1 entries used;
/// ε here is the shell-binned 2ν Σ k² E(k)). For spectra read from elsewhere.
struct SpectrumStatistics {
  double K = 0, u_prime = 0, L = 0, T = 0, epsilon = 0, lambda = 0, Re_lambda = 0;
};
SpectrumStatistics spectrum_statistics(const std::vector<double>& k, const std::vector<double>& E,
                                       double nu);

/// The statistics that follow from E_n and D = Σ|k|²|û|² alone (K, u′, ε, enstrophy, L, T,
/// λ, Re_λ); S₃, divergence and helicity are left zero.
Statistics spectral_statistics(const std::vector<double>& E, double D, double nu);

/// Every statistic of the field with coefficients `u` (S₃ needs three inverse FFTs).
Statistics statistics(const SpectralVector& u, double nu, Fft3d& fft);
Statistics statistics(const SpectralSlab& u, double nu, SlabFft& fft);

/// The same from the velocity on the grid.
Statistics statistics(const VectorField& u, double nu, Fft3d& fft);

/// ω = ∇×u on the grid.
void vorticity(const SpectralVector& u, Fft3d& fft, VectorField& omega);
void vorticity(const SpectralSlab& u, SlabFft& fft, VectorField& omega);

/// Q = −½ ∂_i u_j ∂_j u_i on the grid.
void q_criterion(const SpectralVector& u, Fft3d& fft, ScalarField& q);
void q_criterion(const SpectralSlab& u, SlabFft& fft, ScalarField& q);

/// u on the grid (the rank's planes).
void velocity_on_grid(const SpectralSlab& u, SlabFft& fft, VectorField& out);

/// The invariants of the velocity-gradient tensor A_ij = ∂u_i/∂x_j at every grid point
/// (Chong, Perry & Cantwell, Phys. Fluids A 2, 1990): the eigenvalues λ of A solve
/// λ³ + Pλ² + Qλ + R = 0, and with tr A = 0 (P = 0)
///   Q = −½ tr(A²) = −½ A_ij A_ji,   R = −⅓ tr(A³) = −⅓ A_ij A_jk A_ki = −det A.
/// The trace forms are used as written also where the discrete ∇·u is not exactly zero, so
/// that Q is q_criterion()'s to round-off. ⟨Q_W⟩ = ⟨ω·ω⟩/4 (Q_W = ½ W_ij W_ij with
/// W = ½(A − Aᵀ)) is the usual unit of the joint PDF of (Q, R) (Ooi et al., JFM 381, 1999):
/// Q/⟨Q_W⟩ and R/⟨Q_W⟩^{3/2}. A from the spectral derivative() (9 inverse FFTs); memory:
/// 9 N³ doubles besides the result.
struct GradientInvariants {
  ScalarField q;          ///< Q on the grid, [z][y][x]
  ScalarField r;          ///< R on the grid, [z][y][x]
  double q_w_mean = 0.0;  ///< ⟨Q_W⟩ = ⟨ω·ω⟩/4 over the grid
};
GradientInvariants gradient_invariants(const SpectralVector& u, Fft3d& fft);

/// Coefficients of ∂u_c/∂x_d (c, d ∈ {0,1,2}) into `out` (g.modes() values).
void derivative(const SpectralVector& u, int c, int d, std::vector<Complex>& out);

#ifdef VH_HAVE_CUDA
/// GPU counterpart of energy_spectrum() and gradient_norm2() on device coefficients
/// d_u[0..2] (g.modes() complex doubles each, one rank's whole grid). Fills E (host) and
/// returns Σ|k|²|û|².
double energy_spectrum_device(const void* const d_u[3], const Grid& g, std::vector<double>& E);

/// GPU counterpart of statistics() on device coefficients (cuFFT for S₃); fills E too. The
/// coefficients never leave the device. Both GPU functions add the CPU's terms
/// (diagnostics_kernel.h) in an order fixed by the code alone: the same bits on every run, and
/// the CPU's values to round-off (the CPU adds in another order).
Statistics statistics_device(const void* const d_u[3], const Grid& g, double nu, std::vector<double>& E);

/// The same on R ranks: d_u holds the rank's modes of slab s ([kz][slot][kx], core/slab.h), and
/// `fft` transforms on the ranks' slabs (S₃'s derivatives; GpuSlabFft of s). Each rank adds its
/// terms as above, the ranks' sums are summed (Comm::sum); every rank gets the whole field's
/// statistics and E. Collective. One rank (s.whole()): the function above, fft unused.
Statistics statistics_device(const void* const d_u[3], const Slab& s, GpuSlabFft* fft, double nu,
                             std::vector<double>& E);

/// statistics_device of a velocity held on the device as this rank's modes of the slab s, with
/// what it needs kept from one output to the next: on R > 1 ranks the slab transforms and their
/// exchange (GpuSlabFft over a DeviceComm of a stream of its own), made at the first call. The
/// run driver's steppers (src/app/steppers.cpp) and the step bench use it.
class DeviceStatistics {
 public:
  explicit DeviceStatistics(const Slab& s);
  ~DeviceStatistics();
  DeviceStatistics(const DeviceStatistics&) = delete;
  DeviceStatistics& operator=(const DeviceStatistics&) = delete;
  /// Collective on R ranks.
  Statistics operator()(const void* const d_u[3], double nu, std::vector<double>& E);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
#endif

}  // namespace vh
