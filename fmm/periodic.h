// Periodic images for the box [0, L)^3, L = 2 pi (fmm::kBoxLength).
//
// Near images: the box translated by n L, n in [-R0, R0]^3, enter the dual tree traversal as
// ordinary source cells.  Far lattice: everything outside, from the root multipole M_0 of the
// box replicated over `images` levels.  Level k uses blocks of 3^k x 3^k x 3^k boxes with
// multipole M_k (M_{k+1} = M2M of the 27 copies of M_k) placed at n 3^k L for
//   n in [-(3W-1)/2, (3W-1)/2]^3 minus [-(W-1)/2, (W-1)/2]^3,   W = 2 R0 + 1,
// so the levels tile the cube of (W 3^images)^3 boxes (half width R = (W 3^images - 1)/2 boxes)
// shell by shell; each level adds one M2L with the summed table sum_n I_lm(n 3^k L).
// R0 comes from the traversal's own criterion: the closest level-0 block (centre distance
// (R0 + 1) L, radius sqrt(3)/2 L, target = root of the same radius) must satisfy
// sqrt(3) L < theta (R0 + 1) L, and then every coarser level satisfies it too; the regularisation
// cut-off R0 L >= rcut(sigma_max) is checked as well.
//
// The cube summation converges to the periodic field plus terms fixed by the box's total
// strength Q = sum alpha and its moment D = sum (x_q - c) x alpha_q (c = box centre, V = L^3):
//   u_per(x) = u_cube(x) + [ (x - c) x Q - D ] / (3 V),   du_m/dx_l += eps_{mlk} Q_k / (3 V),
// which removes the mean velocity (the spectral solver's k = 0 mode) and the k = 0 mode of the
// vorticity (a uniform background, present when Q != 0).  periodic_correction() adds this.
#pragma once

#include <cmath>
#include <vector>

#include "fmm/expansions.h"
#include "fmm/mean_correction.h"
#include "fmm/morton.h"
#include "fmm/types.h"

namespace vh::fmm {

/// Side of the periodic box.
constexpr double kBoxLength = 6.283185307179586476925286766559;

/// Half width R0 (in boxes) of the near-image cube [-R0, R0]^3 required by theta (>= 1).
int near_image_range(double theta);

/// Near-image shifts n L, n in [-R0, R0]^3, with n = 0 first.
std::vector<Vec3> near_image_shifts(int r0);

/// Half width (in boxes) of the whole lattice cube summed with `images` far levels.
long long lattice_half_width(int r0, int images);

/// Checks that every lattice M2L satisfies the acceptance criterion (for tests and validation):
/// returns the largest (R_t + R_s) / (theta * d) over all levels (must be < 1).
double lattice_worst_ratio(int r0, int images, double theta);

/// Summed tables of the far lattice, per level k (block side b = 3^k L): T[k] = the sum over the
/// level's shell of I_lm(n b) and S[k] = the sum over the 27 offsets (-1, 0, 1)^3 b of R_lm (the
/// M2M of a block to its 3 x 3 x 3 super-block), ncoef(p) each.  Computed once per
/// (p, r0, images) and kept (thread-safe; the reference stays valid).
struct LatticeTables {
  std::vector<std::vector<cplx>> T, S;
};
const LatticeTables& lattice_tables(int p, int r0, int images);

/// Adds the far-lattice contribution to the local expansion Lroot about the box centre, from
/// the root multipole Mroot about the box centre (both order p, three components): per level
/// one m2l_table with T[k], then M <- m2m_table with S[k].  The GPU runs the same operations
/// (far_gpu.h lattice_m2l_gpu, the same bits).
void lattice_m2l(int p, int r0, int images, const cplx* Mroot, cplx* Lroot);

/// One coordinate wrapped into [0, L) (a value that rounds to L becomes 0; fmm/morton.h).
inline double wrap_coordinate(double v) { return morton::wrap(v); }

/// Wraps every coordinate into [0, L).
void wrap_into_box(std::vector<Vec3>& x);

/// Q = sum alpha_q and D = sum (x_q - c) x alpha_q of the header comment.  Fixed summation
/// order (chunks of 4096 sources summed in parallel, the chunk sums added in order), so the
/// result does not depend on the number of threads.  With wrap the positions are wrapped
/// into the box first (positions as the caller gave them).
MeanTerms mean_terms(const std::vector<Vec3>& xs, const std::vector<Vec3>& alpha, bool wrap = false);

/// Adds the correction of the header comment to u and grad at the targets xt (wrapped); the
/// per-point formula is mean_correction() of fmm/mean_correction.h, as on the GPU.
void periodic_correction(const MeanTerms& m, const std::vector<Vec3>& xt, std::vector<Vec3>& u,
                         std::vector<Mat3>& grad);

}  // namespace vh::fmm
