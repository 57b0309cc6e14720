// What the FMM knows of the other ranks (issue 25): each rank owns its particles, by any
// partition (z-slabs of the vortex lattice today; pencils or Morton/Hilbert blocks later), and
// all the FMM asks of another rank is its box: the tight axis-aligned box of its targets (where
// it wants the field), the tight box of its sources and the largest core radius among them
// (the regularisation cut-off of the acceptance test, fmm/traverse.h), and how many of each.
// Every rank holds every rank's box (one allgather of R boxes), from which the sender of the
// local essential tree decides what another rank needs (fmm/let.h).  Nothing here or there
// assumes slabs: a box per rank is the whole interface.
//
// Positions as the trees take them: in the periodic box wrapped into [0, 2 pi)^3 first
// (fmm::wrap_coordinate), so that every target of a rank lies inside its box bit for bit.
#pragma once

#include <vector>

#include "fmm/types.h"

namespace vh {
class Comm;  // base/comm.h
}

namespace vh::fmm {

/// One rank's extent as the others see it.  An empty set has lo = +1e300, hi = -1e300 (the
/// trees' empty cell) and count 0.
struct RankBox {
  Vec3 target_lo{}, target_hi{};  ///< tight box of the rank's targets (evaluate_self: its sources)
  Vec3 source_lo{}, source_hi{};  ///< tight box of its sources
  double sigma_max = 0;           ///< largest core radius among its sources (0: none)
  long long targets = 0;          ///< number of targets
  long long sources = 0;          ///< number of sources
};

/// This rank's box from its sources x (core radii sigma) and targets (null: the sources are
/// the targets, evaluate_self); with wrap the positions are wrapped into the periodic box.
RankBox rank_box(const std::vector<Vec3>& x, const std::vector<double>& sigma, const std::vector<Vec3>* targets,
                 bool wrap);

/// Every rank's box in rank order (collective: an allgather of one RankBox a rank).
std::vector<RankBox> allgather_boxes(const Comm& comm, const RankBox& mine);

/// Distance from the point p to the box [lo, hi] (0 inside).
double point_box_distance(const Vec3& p, const Vec3& lo, const Vec3& hi);
/// Closest distance between the boxes [alo, ahi] and [blo, bhi] (0 when they touch or overlap).
double box_box_distance(const Vec3& alo, const Vec3& ahi, const Vec3& blo, const Vec3& bhi);

}  // namespace vh::fmm
