// The periodic FMM's mean correction at one target (fmm/periodic.h): the cube sum plus
//   u += [(x - c) x Q - D] / (3 V),   du_m/dx_l += eps_{mlk} Q_k / (3 V),
// c the box centre, V = L^3, from the sums Q and D over the sources.  One inline definition of
// each source's terms and of the correction for the CPU (mean_terms, periodic_correction) and
// the GPU (periodic_gpu.cu, the L2P): __host__ __device__ under nvcc.
#pragma once

#include "base/hd.h"

namespace vh::fmm {

/// Q = sum alpha_q and D = sum (x_q - c) x alpha_q over the sources (fmm::mean_terms).
struct MeanTerms {
  double Q[3] = {0, 0, 0}, D[3] = {0, 0, 0};
};

/// One source's terms of Q and D: v[0..2] = alpha, v[3..5] = r x alpha with r = x_q - c.
VH_HD inline void mean_source_terms(const double r[3], const double a[3], double v[6]) {
  v[0] = a[0];
  v[1] = a[1];
  v[2] = a[2];
  v[3] = r[1] * a[2] - r[2] * a[1];
  v[4] = r[2] * a[0] - r[0] * a[2];
  v[5] = r[0] * a[1] - r[1] * a[0];
}

/// Adds the correction to u[3] and grad[9] (row-major, grad[3 m + l] = du_m/dx_l) at x[3].
VH_HD inline void mean_correction(const MeanTerms& m, const double* x, double* u, double* grad) {
  const double L = 6.283185307179586476925286766559;  // kBoxLength
  const double c = 0.5 * L, v3 = 3 * L * L * L;
  const double* Q = m.Q;
  const double r0 = x[0] - c, r1 = x[1] - c, r2 = x[2] - c;
  u[0] += (r1 * Q[2] - r2 * Q[1] - m.D[0]) / v3;
  u[1] += (r2 * Q[0] - r0 * Q[2] - m.D[1]) / v3;
  u[2] += (r0 * Q[1] - r1 * Q[0] - m.D[2]) / v3;
  grad[1] += Q[2] / v3;  // eps_{mlk} Q_k
  grad[2] -= Q[1] / v3;
  grad[3] -= Q[2] / v3;
  grad[5] += Q[0] / v3;
  grad[6] += Q[1] / v3;
  grad[7] -= Q[0] / v3;
}

}  // namespace vh::fmm
