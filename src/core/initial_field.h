// The initial velocity field both solvers start from.
//
// Random fields follow Rogallo (1981, NASA TM 81315, eq. 3.6): for each wavenumber k,
//   û = (α|k|k₂ + βk₁k₃, βk₂k₃ − α|k|k₁, −βk₁₂|k|) / (|k| k₁₂),   k₁₂ = √(k₁² + k₂²),
//   α = A e^{iθ₁} cos φ,  β = A e^{iθ₂} sin φ,   θ₁, θ₂, φ uniform,
// which is solenoidal with |û|² = A². The amplitude A depends on the shell n = round(|k|)
// only: A_n² = 2 E_n / M_n with M_n the number of modes in the shell, so every shell holds
// exactly its prescribed energy E_n (the "shell by shell rescaling" done once, analytically).
// The k = 0 mode and every mode with a Nyquist index are zero; on the kx = 0 plane the
// coefficient of −k is the conjugate of that of k (Hermitian symmetry).
//
// Determinism: the random numbers of a mode come from a counter-based generator keyed by
// (seed, global wavenumber, draw), and the mode's coefficients use only +, −, ×, ÷ and √
// (unit vectors by rejection, no trigonometry), all correctly rounded in IEEE 754 on host
// and device. The coefficients are therefore bit-identical on the CPU and GPU paths and for
// any decomposition of the grid.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/grid.h"
#include "core/slab.h"

namespace vh {

enum class SpectrumShape {
  k4exp,        ///< E(k) ∝ k⁴ exp(−2 (k/k_p)²)
  pope,         ///< Pope, Turbulent Flows (2000), eq. 6.246 with C = 1.5, p₀ = 2, β = 5.2
  taylor_green, ///< u = V₀ (sin x cos y cos z, −cos x sin y cos z, 0): not random
  abc           ///< u = V₀ (sin z + cos y, sin x + cos z, sin y + cos x): Beltrami, not random
};

/// Parses "k4exp", "pope", "taylor-green" or "abc"; throws vh::InputError naming `key` otherwise.
SpectrumShape parse_spectrum_shape(const std::string& s, const std::string& key);
std::string to_string(SpectrumShape s);

struct InitialFieldSpec {
  SpectrumShape shape = SpectrumShape::k4exp;
  double k_p = 4.0;        ///< peak wavenumber of k4exp [1/length]
  double pope_L = 1.0;     ///< Pope's L = k^{3/2}/ε of the model spectrum [length]
  double pope_eta = 0.02;  ///< Pope's Kolmogorov scale η of the model spectrum [length]
  double u_prime = std::numeric_limits<double>::quiet_NaN();    ///< target u′ = √(2K/3)
  double K0 = std::numeric_limits<double>::quiet_NaN();         ///< or target K = ½⟨u·u⟩
  double Re_lambda = std::numeric_limits<double>::quiet_NaN();  ///< ν from this Re_λ …
  double nu = std::numeric_limits<double>::quiet_NaN();         ///< … or ν given directly
  std::uint64_t seed = 1;
};

/// The prescribed shape E(k) before scaling (any positive multiple of the model).
double model_spectrum(const InitialFieldSpec& spec, double k);

/// Per-shell tables of the half-layout grid, counted over the full spectrum (integers,
/// so they are exact and independent of summation order).
struct ShellTable {
  std::vector<std::int64_t> modes;  ///< M_n: number of modes with round(|k|) = n
  std::vector<std::int64_t> k2sum;  ///< Σ |k|² over those modes
  explicit ShellTable(const Grid& g);
};

/// Everything the per-mode generator needs: the amplitude A_n of each shell.
struct ModeAmplitudes {
  std::vector<double> A;  ///< A_n, n = 0 … max_shell
  double K0 = 0;          ///< Σ_n E_n, the kinetic energy of the field
  double dissipation_over_nu = 0;  ///< Σ_k |k|² |û|², so ε = ν · this
};

/// The initial field and the scalars derived from it.
struct InitialField {
  SpectralVector u;   ///< coefficients of the velocity (grid.h normalisation)
  double K0 = 0;      ///< ½⟨u·u⟩
  double u_prime = 0; ///< √(2K₀/3)
  double nu = 0;      ///< viscosity: given, or from the Re_λ target
};

/// Validates `spec` (throws vh::InputError naming the flow.* key at fault).
void validate(const InitialFieldSpec& spec);

/// Shell amplitudes for a random spectrum scaled to the requested u′ or K₀.
ModeAmplitudes mode_amplitudes(const InitialFieldSpec& spec, const Grid& g);

/// Viscosity that gives the requested Re_λ (or the given ν): with ε = ν D,
/// λ = √(15 u′²/D) and ν = u′λ/Re_λ.
double viscosity(const InitialFieldSpec& spec, double u_prime, double dissipation_over_nu);

/// The scalars of the field `spec` describes on g and what its per-mode generator needs
/// (init::ModeField, initial_field_kernel.h), for the CPU and the GPU alike (validates spec).
struct InitialScalars {
  double K0 = 0, u_prime = 0, nu = 0;  ///< as InitialField
  SpectrumShape shape = SpectrumShape::k4exp;
  std::uint64_t seed = 1;
  double V0 = 0;          ///< Taylor–Green and ABC: the amplitude V₀
  std::vector<double> A;  ///< random spectra: the shell amplitudes A_n (mode_amplitudes)
};
InitialScalars initial_scalars(const InitialFieldSpec& spec, const Grid& g);

/// Builds the field on the CPU.
InitialField make_initial_field(const InitialFieldSpec& spec, const Grid& g);

/// The same scalars and this rank's modes of the field (the values the whole field has there).
struct InitialSlab {
  SpectralSlab u;
  double K0 = 0, u_prime = 0, nu = 0;
};
InitialSlab make_initial_field(const InitialFieldSpec& spec, const Slab& s);

#ifdef VH_HAVE_CUDA
/// Builds the same coefficients on the GPU into device arrays d_u[0..2], each holding
/// g.modes() complex doubles (cuDoubleComplex layout). Returns the same scalars as the CPU.
InitialField make_initial_field_device(const InitialFieldSpec& spec, const Grid& g,
                                       void* d_u[3]);
#endif

}  // namespace vh
