// Vortex particles (docs/design.md, "Vortex method definitions"): Gaussian blobs
//   ζ_σ(r) = (2πσ²)^{-3/2} exp(−r²/2σ²),   ω(x) = Σ_p α_p ζ_σp(x − x_p),
// with vector strengths α_p = ω h³ on the lattice, in the periodic box [0, 2π)³.
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
  std::vector<Vec3> alpha;     ///< vector strengths [vorticity × volume]
  std::vector<double> sigma;   ///< core radii [length]
  std::size_t size() const { return x.size(); }
};

/// One particle per grid point, x_p = h (i, j, k), in the grid's [z][y][x] order, with zero
/// strength and core radius `sigma`.
Particles lattice_particles(const Grid& g, double sigma);

/// The grid points as positions, in [z][y][x] order (targets for grid sampling).
std::vector<Vec3> lattice_points(const Grid& g);

/// Σ_p α_p (must stay ≈ 0 for a periodic field with no mean vorticity).
Vec3 total_strength(const Particles& p);

/// Wraps every position into [0, 2π)³.
void wrap(Particles& p);

}  // namespace vh::vortex
