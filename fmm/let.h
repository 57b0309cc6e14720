// The local essential tree (LET) of the FMM on several ranks (issue 25; Warren & Salmon 1993,
// sender-side as in exaFMM): what of this rank's sources another rank needs, decided by this
// rank from the other's box alone (fmm/partition.h), sent once, and how the receiver inserts it
// into its own evaluation so that each of its targets takes every source exactly once, as a
// multipole or as particles, for every near image (docs/design.md "The FMM on several ranks").
//
// Sender, for every other rank r with targets and every near-image shift s (fmm/periodic.h;
// free space: s = 0 alone), walks its own source tree from the root and sends each cell B as
//   a multipole  when the acceptance test of the traversal (fmm/traverse_kernel.h accept())
//                holds between B + s and every point of r's target box T_r:
//                  R_B < theta dist(c_B + s, T_r)  and  dist(box_B + s, T_r) >= rcut sigma_max(B)
//                (the target a point of radius 0: R_A = 0, and the closest point of T_r);
//                as particles instead when they take fewer bytes than the multipole;
//   particles    when B is a leaf that fails the test;
//   its children otherwise.
// The cells so sent for (r, s), the frontier, partition this rank's sources, each once.  What
// travels to r is the union over the shifts of the walked subtrees, each cell once: a cell some
// shift opened goes without data (its children all travel, and the receiver's M2M rebuilds its
// multipole), the others with their multipole or particles (particles winning); the list of
// (cell, shift) pairs says which shifts take which cells whole.
//
// Receiver, for every frontier entry (B, s), descends its own target tree from the root: a
// target cell A takes B by M2L when far_pair(A, B + s) holds (the traversal's test on the
// cells), small pairs of a leaf at s = 0 by P2P as the traversal does; otherwise A's children
// are tried, and a leaf that still fails takes B's particles by P2P or, for a multipole, an M2P
// at each of its targets (fmm/expansions.h m2p_table), which the sender's test makes valid: every
// target x of r lies in T_r, so R_B < theta |x - c_B - s| and x is beyond B's cut-off.  The
// descent splits A's targets into disjoint cells, so each target takes B + s exactly once.
//
// With this rank's own tree and lists (every own source, every shift) and the far lattice of
// the global root multipole (the sum of every rank's root, all about the box centre), each
// target sees every source of every rank at every image exactly once; count_received() counts
// it (tests/mpi/test_fmm_mpi.cpp).
#pragma once

#include <vector>

#include "fmm/expansions.h"
#include "fmm/fmm.h"
#include "fmm/partition.h"
#include "fmm/traverse.h"
#include "fmm/tree.h"
#include "fmm/types.h"

namespace vh {
class Comm;  // base/comm.h
}

namespace vh::fmm {

/// One cell of the LET as it travels (trivially copyable): what the receiver's acceptance test
/// reads of the sender's cell, and where its multipole or particles are.
struct LetCell {
  Vec3 center{};          ///< cube centre of the sender's cell: the multipole's expansion centre
  double radius = 0;      ///< tight radius about center
  Vec3 bmin{}, bmax{};    ///< tight box of its particles (wrapped positions)
  double sigma_max = 0;   ///< largest core radius among them
  int count = 0;          ///< number of its particles
  /// Sent: its multipole's index in the sender's multipoles, -1: none (particles, or opened);
  /// received: its multipole in LetSources::M, which every cell has.
  int multipole = -1;
  int first = -1;         ///< its first particle in LetSources::x, alpha, sigma; -1: none sent
  int parent = -1;        ///< its parent cell (sent: in the sender's piece), -1: the sender's root
};

/// What the LETs of all the other ranks brought to this one, in sender rank order.
struct LetSources {
  /// Each sender's cells parents first; a cell that came without data (opened for some shift)
  /// has all its children here.
  std::vector<LetCell> cells;
  /// One multipole a cell, 3 ncoef(p) coefficients from LetCell::multipole: received, or
  /// computed here by P2M (cells that came as particles) and M2M (opened cells).
  std::vector<cplx> M;
  std::vector<Vec3> x, alpha;  ///< the particles (wrapped positions), each cell's contiguous
  std::vector<double> sigma;
  /// (cell, shift): for each sender and each shift, cells partitioning the sender's sources.
  std::vector<Interaction> frontier;
};

/// Per target cell (this rank's target tree), what it takes from the LET: (index in
/// LetSources::cells, shift index).
struct LetLists {
  std::vector<std::vector<Interaction>> m2l;  ///< into the cell's local expansion
  std::vector<std::vector<Interaction>> m2p;  ///< leaves: the multipole at each of the leaf's targets
  std::vector<std::vector<Interaction>> p2p;  ///< leaves: the cell's particles
};

/// Collective: builds every other rank's LET from this rank's source tree `src`, its multipoles
/// M (3 ncoef(p) a cell) and its strengths `as` (sorted order), for the near-image `shifts` and
/// the acceptance `mac` (its theta and cut-off), against the target boxes of `boxes`;
/// exchanges them (alltoallv of the counts, then of records, multipoles, particles and
/// frontiers) and returns what came to this rank, the particle cells' multipoles added.
/// `sent` and `received` get this rank's totals.
LetSources exchange_let(const Comm& comm, const std::vector<RankBox>& boxes, const Tree& src,
                        const std::vector<cplx>& M, const std::vector<Vec3>& as, int p, const std::vector<Vec3>& shifts,
                        const Acceptance& mac, LetStats& sent, LetStats& received);

/// The receiver's descents of the header comment: for every frontier entry, the target cells
/// of `tgt` that take it and how.  The same lists for any number of threads.
LetLists let_lists(const Tree& tgt, const LetSources& let, const std::vector<Vec3>& shifts, const Acceptance& mac);

/// The counting kernel over the distributed tree: in place of u and grad, adds at each target
/// of `tgt` (sorted order) the sums over every (source q, near image s) that the evaluation
/// hands to it through the own lists (`src`, `as`, its multipoles M, `self` as for the P2P) and
/// through the LET (`let`, `lists`), directly or inside a multipole (whose monopole coefficient
/// is the sum of its sources' strengths, exactly for integer strengths below 2^53), of q's
/// strength: sums[i] += sum alpha_q, image_sums[i][0] += sum (s + 1) alpha_q (s the shift's
/// index), and image_sums[i][1] += lattice_boxes times lattice_alpha (the far lattice: every
/// source, in lattice_boxes further boxes, through the global root's monopole).
void received_sums(const Tree& tgt, const Tree& src, bool self, const Lists& own, const std::vector<Vec3>& as,
                   const std::vector<cplx>& M, const LetSources& let, const LetLists& lists, int p, double lattice_boxes,
                   const Vec3& lattice_alpha, std::vector<Vec3>& sums, std::vector<Mat3>& image_sums);

/// For the tests (tests/mpi/test_fmm_mpi.cpp), collective: evaluate_self (targets null) or
/// evaluate_at over the ranks of comm (fmm/fmm.h) with everything but the kernel, the same
/// trees, lists, LETs and descents, and received_sums() in its place, in the caller's target
/// order: with alpha_q = (1, global index of q, 0) each target must find N sources (N - 1 at
/// its own image for evaluate_self) once per near image.  Defined in fmm.cpp beside the driver
/// it shares.
Timings count_received(const Params& prm, const Comm& comm, const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                       const std::vector<double>& sigma, const std::vector<Vec3>* targets, std::vector<Vec3>& sums,
                       std::vector<Mat3>& image_sums);

}  // namespace vh::fmm
