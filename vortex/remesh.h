// Reinitialisation from the particles' points (vortex.reinit_from = points): the vorticity
// field a set of moved particles represents, the spectral steps applied to it on the periodic
// lattice, and the lattice values of the new particles.
//
// The field.  A particle carries the point strength γ_p = ω V_p of its volume V_p = h³.  The
// lattice field it represents is the interpolation of those points by the cardinal functions of
// the Gaussian RBF on the lattice,
//   ω(x_i) = Σ_p γ_p / h³ C(x_i − x_p),   Ĉ(q) = ζ̂_σ(q) / s(q mod N)    (grid.h normalisation),
// computed as the blob sums of γ with the particles' cores, one FFT and a division by the
// lattice symbol s(k) = Σ_a ζ̂_σ₀(k + aN) (vortex/rbf.h, symbol_factors; floored as the fft RBF
// solve is).  C(x_i − x_j) = δ_ij on the lattice, so particles that have not moved give back
// their vorticity exactly; and C reproduces polynomials to the weight of the symbol's aliases
// (exp(−2π² σ₀²/h²) = 3e-9 at σ₀ = h), so the sum over moved particles is the Taylor expansion
// of the transported field with spectral accuracy: unlike a Gaussian blob sum, it does not
// smooth the field by O(σ² k²).  (Measured on the quick case, 32³, one step per remesh: the
// blob-field reinitialisation (reinit_from = blobs) leaves E(k = 4) at 0.73 of the spectral
// value after a quarter turnover, this one at 0.98 — the rest is the Euler step's error.)
//
// The spectral steps, on the coefficients ω̂(k) of that field:
//   diffusion (vortex.diffusion = lattice): ω̂ ← exp(−ν|k|²τ) ω̂, the exact viscous step for the
//     time τ since the last reinitialisation (the particles themselves then keep σ₀);
//   projection: ω̂ ← ω̂ − k (k·ω̂)/|k|², and ω̂(0) = 0: the reinitialised vorticity is solenoidal
//     (and has no mean, as a periodic vorticity must not);
//   filter (vortex.filter): the modes the lattice cannot carry without aliasing are removed.
// The new particles sit on the lattice with γ = ω V and the blob strengths α = ω̂/S (the RBF
// solve on the same symbol), so their blob field reproduces ω at the lattice points.
//
// Any other quantity the particles carry (the AB2 history: velocity and the strengths' rates)
// is remeshed the same way: its values at the particles times V, summed, deconvolved.
//
// The per-mode steps are remesh_kernel.h's, which the GPU solver (solver_gpu.h) runs too.
#pragma once

#include <memory>
#include <vector>

#include "core/fft.h"
#include "core/grid.h"
#include "vortex/particles.h"
#include "vortex/remesh_kernel.h"

namespace vh::vortex {

/// The coefficients of `from` on the lattice `to_grid` (allocated there): every mode that both
/// hold with |k_d| < min(N_from, N_to)/2 in each direction; the rest, Nyquist modes included,
/// zero. Refining (N_to > N_from) is the exact spectral interpolation; coarsening the
/// truncation (remesh_kernel.h, resample_source).
void resample(const SpectralVector& from, const Grid& to_grid, SpectralVector& to);
/// The same between slab-distributed fields (core/slab.h) of any two grids and layouts over the
/// same ranks: `to` holds its slab (to.slab) on entry and every value on return.  One rank: the
/// loop above; R > 1: each rank asks the owners of the modes it needs for them (two
/// all-to-alls).  Collective.
void resample(const SpectralSlab& from, SpectralSlab& to);

/// The exchange of resample(SpectralSlab) between two slab layouts over R > 1 ranks, planned once
/// (collective: one all-to-all of the requests). A rank sends, to each rank r in turn,
/// send_counts[r] of its source modes, at the storage indices `send` of its slab of `from`
/// (each mode's three components); it receives recv_counts[r] modes from each rank r in turn,
/// which go to its storage indices `where` of `to` (every other mode of `to` is zero).
struct ResamplePlan {
  std::vector<std::size_t> send_counts, send, recv_counts, where;
};
ResamplePlan plan_resample(const Slab& from, const Slab& to);

/// The particle lattice and its spectral operations (one FFT plan, the symbol tables), on this
/// rank's slab of it (core/slab.h): coefficients in the slab's [kz][slot][kx] order, point
/// values on its z-planes in [z][y][x] order.  One rank: the whole lattice in grid.h's layout.
class Lattice {
 public:
  /// s: this rank's slab of the particle lattice; sigma0: the lattice particles' core;
  /// symbol_floor: as RbfParams; cutoff: blob sums cut off at this many σ; gpu: blob sums on the
  /// GPU (one rank).
  Lattice(const Slab& s, double sigma0, double symbol_floor, double cutoff, bool gpu);

  const Grid& grid() const { return s_.grid; }
  const Slab& slab() const { return s_; }
  SlabFft& fft() { return *fft_; }
  /// V = h³, the volume of a lattice particle.
  double volume() const { return vol_; }

  /// Coefficients of the field whose values times V the particles at x carry as `qv` (cores
  /// sigma): blob sums at this rank's planes, FFT, ÷ s(k).  For γ this is ω̂.  The particles
  /// are all those that reach the planes (vortex/halo.h: one rank, its own).  Collective.
  void field(const std::vector<Vec3>& x, const std::vector<Vec3>& qv, const std::vector<double>& sigma,
             SpectralSlab& out);
  /// Coefficients of values given at this rank's lattice points themselves, times `scale`.
  void modes(const std::vector<Vec3>& values, double scale, SpectralSlab& out);

  /// ω̂ ← exp(−ν|k|²τ) ω̂ (nu_tau = ντ).
  void diffuse(SpectralSlab& c, double nu_tau) const;
  /// ω̂ ← (exp(−ν|k|²τ) − 1) ω̂ (nu_tau = ντ): the change diffuse() would make.
  void diffusion_increment(SpectralSlab& c, double nu_tau) const;
  /// ω̂ ← ω̂ − k (k·ω̂)/|k|², ω̂(0) = 0.  Returns ‖k·ω̂‖ / ‖|k| ω̂‖ before (the share removed), over
  /// all ranks (collective).
  double project(SpectralSlab& c) const;
  /// Zeroes the modes filter f does not keep with its largest wavenumber fraction · N/2.
  void filter(SpectralSlab& c, Filter f, double fraction) const;

  /// Values at this rank's lattice points, times `scale`: of the field (blob = false) or of the
  /// blob strengths whose blobs of core σ₀ reproduce it there (blob = true: ÷ S(k) = s(k)/V
  /// first, floored).  `c` is left unchanged.  Collective.
  void values(const SpectralSlab& c, bool blob, double scale, std::vector<Vec3>& out);
  /// The same as a field on this rank's planes (no scale).
  void points(const SpectralSlab& c, VectorField& out);

  /// The velocity of the vorticity ω̂: û = i k × ω̂ / |k|², û(0) = 0.
  void biot_savart(const SpectralSlab& omega, SpectralSlab& u) const;
  /// The field at the lattice points of blobs of core sigma sitting at every lattice point,
  /// whose strengths α have the coefficients c of α/V (modes(α, 1/V)): what = 0 its velocity
  /// û, what = 1 + l the coefficients of ∂u/∂x_l (remesh_kernel.h, blob_velocity: the
  /// periodic Biot–Savart sum of the blobs, each blob's own term included).
  void blob_velocity(const SpectralSlab& c, double sigma, int what, SpectralSlab& out) const;

 private:
  /// s(k) with the floor (what ÷ s uses).
  double symbol(int ix, int iy, int iz) const;

  Slab s_;
  double sigma0_, floor_, cutoff_, vol_;
  bool gpu_;
  std::vector<double> s1_;  ///< symbol_factors(g, σ₀)
  std::unique_ptr<SlabFft> fft_;
  VectorField work_;
};

}  // namespace vh::vortex
