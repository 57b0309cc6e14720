// The weights of one Gaussian blob at the lattice points, one axis at a time: the per-particle
// and per-axis math of the blob sums (vortex/blobs.h), shared by the CPU scatter (blobs.cpp) and
// the GPU gather (blobs_gpu.cu), so that both cut a stencil off at the same points and weigh
// them by one formula. ζ_σ is separable, ζ_σ(x_i − x_p) = Π_d w(δ_d) with δ_d = i_d h − x_{p,d}:
//   w(δ) = (2πσ²)^{-1/2} exp(−δ²/2σ²),   ∂w/∂x_i = −δ/σ² w      (docs/design.md, blob ζ_σ),
// kept where |δ| ≤ R = cutoff σ and zero elsewhere (the cut-off rule). Offsets and the stencil
// start round as on the host also where the device contracts multiply-adds (sub_rn, mul_rn of
// base/hd.h), so the CPU and GPU keep the same points; the weights then differ only in exp.
#pragma once

#include <math.h>

#include "base/hd.h"
#include "base/planes.h"
#include "core/grid.h"

namespace vh::vortex::blob {

/// What the weights of a particle of core σ need: the cut-off radius R = cutoff σ, the
/// normalisation (2πσ²)^{-1/2} and the exponent's factor a = 1/2σ² (so that no point divides).
struct Core {
  double R, norm, a;
};
VH_HD inline Core core(double sigma, double cutoff) {
  return {cutoff * sigma, 1.0 / sqrt(2.0 * kPi * sigma * sigma), 0.5 / (sigma * sigma)};
}

/// The first lattice index of the stencil along an axis: ceil((x − R)/h) (unwrapped).
VH_HD inline int stencil_start(double x, double R, double h) { return static_cast<int>(ceil(sub_rn(x, R) / h)); }

/// The offset δ = i h − x of lattice index i (unwrapped) from the coordinate x.
VH_HD inline double offset(int i, double h, double x) { return sub_rn(mul_rn(static_cast<double>(i), h), x); }

/// The cut-off rule: the weight at offset δ is kept where |δ| ≤ R.
VH_HD inline bool inside(double delta, const Core& c) { return fabs(delta) <= c.R; }

/// The Gaussian (2πσ²)^{-1/2} exp(−δ²/2σ²) at offset δ, without the cut-off.
VH_HD inline double gaussian(double delta, const Core& c) { return c.norm * exp(-delta * delta * c.a); }

/// dw = ∂w/∂x_i = −δ/σ² w from the weight w at offset δ.
VH_HD inline double slope(double delta, const Core& c, double w) { return -2.0 * c.a * delta * w; }

/// w(δ) and dw = ∂w/∂x_i = −δ/σ² w at offset δ; w = 0 outside the cut-off.
VH_HD inline void weight(double delta, const Core& c, double& w, double& dw) {
  w = inside(delta, c) ? gaussian(delta, c) : 0.0;
  dw = slope(delta, c, w);
}

/// The weights at the consecutive lattice indices i, i + 1, … from two exponentials instead of one
/// a point (the GPU gather's staging): with a = 1/2σ², w(δ + h) = w(δ) r and the next ratio r q,
///   r = exp(−a (2 δ h + h²)),   q = exp(−2 a h²) (weight_run_q: one per particle),
/// so each step is two multiplications; over the 8 points of a gather tile the weights stay
/// within 1e-13 (relative) of `weight`'s, the most at the cut-off's tail
/// (tests/vortex/test_blobs_kernel.cpp). No cut-off test: the caller walks a run whose points
/// are inside the cut-off.
struct WeightRun {
  double w, r, q;
  /// At offset δ: the weight there by the closed form, and its ratio to the next.
  VH_HD WeightRun(double delta, const Core& c, double h, double q_) : q(q_) {
    w = gaussian(delta, c);
    r = exp(-(2.0 * delta * h + h * h) * c.a);
  }
  /// To the next index: its weight, and the ratio after it.
  VH_HD void next() {
    w *= r;
    r *= q;
  }
};
VH_HD inline double weight_run_q(const Core& c, double h) { return exp(-2.0 * h * h * c.a); }

/// Whether a particle whose z lies in lattice cell `cell` (floor(z/h)) may have weights at the
/// planes z0 … z0 + nz − 1 of an n-point lattice: its cell within `reach` cells of them,
/// periodically. reach = m/2 + 1 for a stencil of m points covers its ceil(cutoff σ/h) points
/// each side and the rounding of the cell (the blob sums of a rank's planes, solver_gpu.cu).
VH_HD inline bool near_planes(int cell, int z0, int nz, int n, int reach) {
  return near_window(cell, z0, nz, n, reach);
}

}  // namespace vh::vortex::blob
