// Particle-particle (near-field) sums of the regularised Biot-Savart kernel, double precision,
// with the per-pair math of fmm/p2p_kernel.h.
#pragma once

#include <vector>

#include "fmm/types.h"

namespace vh::fmm {

/// Adds to u[i], grad[i] (i < nt) the field at xt[i] of the ns blobs (xs + shift, as, ss).
/// When skip_same, the pair with t_offset + i == s_offset + j is left out (self interaction).
void p2p(const Vec3* xt, int nt, int t_offset, const Vec3* xs, const Vec3* as, const double* ss, int ns,
         int s_offset, const Vec3& shift, bool skip_same, Vec3* u, Mat3* grad);

/// O(N M) free-space direct sum at `targets` (OpenMP over targets); the reference of the tests
/// and the benchmark.  With self == true the targets are the sources and pairs i == i are left out.
void direct_sum(const std::vector<Vec3>& x, const std::vector<Vec3>& alpha, const std::vector<double>& sigma,
                const std::vector<Vec3>& targets, bool self, std::vector<Vec3>& u, std::vector<Mat3>& grad);

}  // namespace vh::fmm
