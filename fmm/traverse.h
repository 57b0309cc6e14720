// Dual tree traversal (Dehnen 2002; Yokota, exafmm) that builds, for every target cell, the list
// of source cells it takes by M2L and, for target leaves, the list it sums by P2P.
//
// A pair (target cell A, source cell B translated by a periodic shift s) is far, i.e. M2L, when
//   (1) R_A + R_B < theta |c_A - c_B - s|        (multipole acceptance, tight radii), and
//   (2) dist(box_A, box_B + s) >= rcut(sigma_max(B)),
// where box_* are the tight particle bounding boxes and rcut(sigma) = sqrt(2) rho_tol sigma with
// 1 - g(rho_tol) = tolerance, so that no pair in the far field differs from the singular
// kernel by more than the tolerance (docs/design.md "Far field").  Otherwise the larger cell (by
// radius) is split; two leaves that are not far go to P2P.  A far pair whose target is a leaf
// and whose direct cost is small (n_A n_B <= p2p_max_pairs, about the cost of one M2L plus its
// share of L2P) also goes to P2P: exact, and cheaper.  Only for shift 0 (shifts[0] must be the
// zero shift): the M2Ls of periodic images are cheaper, summed per (target, source) pair.
// Cost: O(N) list entries for a fixed particle density and fixed theta, sigma/spacing and ncrit
// (each cell meets a bounded number of cells of its own size), built in O(N) time.
// The lists are those of the serial recursion (shift by shift, depth first), entry for entry
// and in the same order, for any number of threads: build_lists runs the recursion per shift
// down to a task level, then the deferred calls of each task cell in their serial order (the
// argument is in traverse.cpp).  So the sums do not depend on the number of threads.
#pragma once

#include <cmath>

#include <vector>

#include "fmm/traverse_kernel.h"
#include "fmm/tree.h"

namespace vh::fmm {

/// One entry of an interaction list: source cell and index of its periodic shift.
struct Interaction {
  int source;
  int shift;
};

/// Per target cell: sources taken by M2L and (leaves only) by P2P.
struct Lists {
  std::vector<std::vector<Interaction>> m2l;
  std::vector<std::vector<Interaction>> p2p;
};

/// Acceptance criterion: theta and the regularisation cut-off rcut = rcut_per_sigma * sigma.
struct Acceptance {
  double theta;
  double rcut_per_sigma;
  long long p2p_max_pairs = 0;  ///< far leaf-target pairs with n_A n_B <= this go to P2P
  /// The criterion above for given radii, centre distance, closest box distance and sigma
  /// (fmm/traverse_kernel.h; the traversals call its far_pair on the cells).
  bool far(double ra, double rb, double dist_centres, double dist_boxes, double sigma_max) const {
    return accept(ra, rb, dist_centres, dist_boxes, sigma_max, theta, rcut_per_sigma);
  }
};

/// rho_tol with 1 - g(rho_tol) = tol (bisection; g from docs/design.md).
double rho_tolerance(double tol);
/// The regularisation cut-off a core radius reaches at tolerance tol: sqrt(2) rho_tol
/// (Acceptance::rcut_per_sigma).
inline double rcut_per_sigma(double tol) { return std::sqrt(2.0) * rho_tolerance(tol); }

/// The task roots of a two-phase parallel traversal of the target tree `tgt` (build_lists and
/// the LET's receiver): the cells of the first level with at least 64 cells a thread, and the
/// leaves above it; every descent meets exactly one.  Returns them in cell order and marks them
/// in `is_root` (one entry a cell).  Any choice gives the same lists: this one gives the threads
/// enough work.
std::vector<int> task_roots(const Tree& tgt, std::vector<char>& is_root);

/// Traverses target tree `tgt` against source tree `src` once per shift in `shifts`.
Lists build_lists(const Tree& tgt, const Tree& src, const std::vector<Vec3>& shifts, const Acceptance& mac);

}  // namespace vh::fmm
