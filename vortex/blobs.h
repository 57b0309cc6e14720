// Sums of Gaussian blobs at the lattice points (reinitialisation and monitors).
//
// ω_σ(x_i) = Σ_p α_p ζ_σp(x_i − x_p) over the nearest periodic image, with the Gaussian cut
// off outside a cube of half-width `cutoff`·σ_p around each particle (the neglected part is
// below exp(−cutoff²/2) of the peak: 1.5e-8 at the default 6). ζ is separable, so each
// particle's weights are three 1-D vectors. CPU: each particle's stencil is added to the
// lattice, the z-planes split among the threads and the particles taken in index order, so
// every point sums in the same order for any thread count (restarts are bit-exact). GPU
// (blobs_gpu.cu): the particles sorted into lattice cells on the device, then a block per 8^3
// tile of points stages the particles that reach the tile and every thread sums its own points
// in a fixed order (no atomics, the same bits on every run).
#pragma once

#include "core/grid.h"
#include "vortex/particles.h"

namespace vh::vortex {

/// Σ_p s_p ζ_σp(x_i − x_p) at the lattice points x_i of g, for particles at x with strengths s
/// and cores sigma (equal sizes).  gpu: the same sums on the GPU (blobs_gpu.cu; CUDA builds,
/// std::invalid_argument otherwise), equal to the CPU's to round-off.
void blob_sums(const std::vector<Vec3>& x, const std::vector<Vec3>& s, const std::vector<double>& sigma,
               const Grid& g, double cutoff, VectorField& out, bool gpu = false);

/// The same sums at the points of the z-planes z0 … z0 + nz − 1 of g only (a rank's slab,
/// core/slab.h; out holds nz planes), on the CPU.  The particles given are those whose stencils
/// may reach the planes (the rank's own and its ghosts, vortex/halo.h); each point sums them in
/// index order, as blob_sums over the whole lattice does.
void blob_sums(const std::vector<Vec3>& x, const std::vector<Vec3>& s, const std::vector<double>& sigma,
               const Grid& g, double cutoff, int z0, int nz, VectorField& out);

/// Lattice points per direction of every particle's stencil when the largest core is
/// sigma_max (lattice spacing h, cut off at `cutoff` σ): 2 ceil(cutoff σ_max/h) + 2.
int stencil_points(double sigma_max, double h, double cutoff);

/// ω_σ at the lattice points of g: blob_sums of the blob strengths α.
void vorticity_on_lattice(const Particles& p, const Grid& g, double cutoff, VectorField& omega, bool gpu = false);

/// ∇·ω_σ at the lattice points of g (Σ_p α_p · ∇ζ_σp(x_i − x_p)).
void divergence_on_lattice(const Particles& p, const Grid& g, double cutoff, ScalarField& div, bool gpu = false);
/// ∇·ω_σ at the points of the z-planes z0 … z0 + nz − 1 only (as blob_sums on planes).
void divergence_on_lattice(const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                           const std::vector<double>& sigma, const Grid& g, double cutoff, int z0, int nz,
                           ScalarField& div);

}  // namespace vh::vortex
