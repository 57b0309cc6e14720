// The per-particle update of a vortex step (vortex/solver.h), shared by the CPU solver and its
// GPU twin (solver_gpu.cu): the stretching term, the variable-step second-order Adams–Bashforth
// update, core spreading and the wrap into the periodic box. Plain inline functions on raw
// arrays, __host__ __device__ under nvcc.
#pragma once

#include <cmath>

#include "core/hd.h"

namespace vh::vortex {

/// The rate of a strength a under the velocity gradient G (row-major, G[3m + k] = ∂u_m/∂x_k):
/// classical (a·∇)u, out_m = Σ_k G_mk a_k; transpose (∇u)ᵀa, out_m = Σ_k G_km a_k (conserves Σa).
VH_HD inline void stretching(const double* G, const double* a, bool classical, double* out) {
  for (int m = 0; m < 3; ++m)
    out[m] = classical ? G[3 * m] * a[0] + G[3 * m + 1] * a[1] + G[3 * m + 2] * a[2]
                       : G[m] * a[0] + G[3 + m] * a[1] + G[6 + m] * a[2];
}

/// Weights of the variable-step AB2 update y ← y + Δt (c0 fⁿ + c1 fⁿ⁻¹) for the step dt after a
/// step dt_prev: c0 = 1 + r/2, c1 = −r/2 with r = dt/dt_prev (exact for quadratic y(t)); forward
/// Euler (1, 0) when there is no history.
struct Ab2Weights {
  double c0 = 1, c1 = 0;
};
VH_HD inline Ab2Weights ab2_weights(double dt, double dt_prev, bool history) {
  Ab2Weights w;
  if (history) {
    const double r = dt / dt_prev;
    w.c0 = 1 + 0.5 * r;
    w.c1 = -0.5 * r;
  }
  return w;
}

/// y ← y + dt (c0 f + c1 f_prev) for one 3-vector.
VH_HD inline void ab2_update(double* y, const double* f, const double* f_prev, double dt, Ab2Weights w) {
  for (int d = 0; d < 3; ++d) y[d] += dt * (w.c0 * f[d] + w.c1 * f_prev[d]);
}

/// y ← y + v for one 3-vector: an increment outside the AB2 extrapolation (the first viscous
/// half of vortex.diffusion = integrating-factor).
VH_HD inline void add_increment(double* y, const double* v) {
  for (int d = 0; d < 3; ++d) y[d] += v[d];
}

/// Core spreading over dt: σ² ← σ² + 2νΔt (the heat equation's exact solution for one blob).
VH_HD inline double spread_core(double sigma, double nu, double dt) { return sqrt(sigma * sigma + 2.0 * nu * dt); }

/// A coordinate wrapped into [0, L).
VH_HD inline double wrap_coordinate(double v, double L) {
  double w = v - L * floor(v / L);
  if (w >= L) w -= L;  // floor rounding at the top edge
  return w;
}

}  // namespace vh::vortex
