// Vortex particles (docs/design.md, "Vortex method definitions") in the periodic box [0, 2π)³.
// Each particle carries two vector strengths:
//   α_p  its blob strength: the blob field ω_σ(x) = Σ_p α_p ζ_σp(x − x_p) of Gaussian blobs
//        ζ_σ(r) = (2πσ²)^{-3/2} exp(−r²/2σ²) is what the FMM turns into u and ∇u; on the lattice
//        α is the RBF solution that makes ω_σ reproduce ω at the lattice points (vortex/rbf.h);
//   γ_p  its point strength ω V_p (V_p = h³, the particle's volume): the vorticity it carries,
//        which the reinitialisation from the particles' points interpolates (vortex/remesh.h).
// Both are moved and stretched with the particle. γ is unused (zeros) when the solver
// reinitialises from the blob field (vortex.reinit_from = blobs).
#pragma once

#include <cstddef>
#include <vector>

#include "core/grid.h"
#include "fmm/types.h"

namespace vh::vortex {

using fmm::Mat3;
using fmm::Vec3;

struct Particles {
  std::vector<Vec3> x;         ///< positions, wrapped into [0, 2π)³
  std::vector<Vec3> alpha;     ///< blob strengths [vorticity × volume] (the FMM's sources)
  std::vector<Vec3> gamma;     ///< point strengths ω V_p [vorticity × volume]
  std::vector<double> sigma;   ///< core radii [length]
  std::size_t size() const { return x.size(); }
};

/// One particle per grid point, x_p = h (i, j, k), in the grid's [z][y][x] order, with zero
/// strengths and core radius `sigma`.
Particles lattice_particles(const Grid& g, double sigma);
/// The same for the z-planes z0 … z0 + nz − 1 only (a rank's slab, core/slab.h).
Particles lattice_particles(const Grid& g, double sigma, int z0, int nz);

/// The grid points as positions, in [z][y][x] order (targets for grid sampling).
std::vector<Vec3> lattice_points(const Grid& g);
/// Those of the z-planes z0 … z0 + nz − 1.
std::vector<Vec3> lattice_points(const Grid& g, int z0, int nz);

/// Σ_p s_p of one of the strengths (α or γ): ≈ 0 for a periodic field, whose mean vorticity is 0.
Vec3 total_strength(const std::vector<Vec3>& s);

/// Wraps every position into [0, 2π)³.
void wrap(Particles& p);

}  // namespace vh::vortex
