// The local essential tree (LET) of the FMM on several ranks (issue 25; Warren & Salmon 1993,
// sender-side as in exaFMM): what of this rank's sources another rank needs, decided by this
// rank from the other's box alone (fmm/partition.h), sent once, and how the receiver inserts it
// into its own evaluation so that each of its targets takes every source exactly once, as a
// multipole or as particles, for every near image (docs/design.md "The FMM on several ranks").
//
// The test.  A cell B at the shift s is taken whole by a rank with the target box T when the
// acceptance test of the traversal (fmm/traverse_kernel.h accept()) holds between B + s and
// every point of T, i.e. with the target a point (R_A = 0) at T's closest:
//   R_B < theta dist(c_B + s, T)  and  dist(box_B + s, T) >= rcut sigma_max(B)      (whole())
//
// Sender, for every other rank r with targets and every near-image shift s (fmm/periodic.h;
// free space: s = 0 alone), walks its own source tree from the root: a cell that r takes whole
// is sent as its multipole, or as its particles when they are fewer bytes; a leaf that fails is
// sent with its particles; any other cell is opened (its children are walked).  The cells
// reached for (r, s) and not opened partition this rank's sources.  What travels to r is the
// union over the shifts of the walked subtrees, each cell once, parents first: a cell some shift
// opened goes without data (all its children travel; the receiver's M2M rebuilds its multipole),
// the others with their multipole or particles (particles winning over a multipole).
//
// Receiver, for every sender and every shift s, runs the dual traversal of build_lists
// (fmm/traverse.h) between its own target tree and the sender's part of the LET, from both
// roots, with one difference: a LET cell may be split only where the sender opened it for s,
// which the receiver knows by evaluating whole() itself on the same numbers (the cell's
// geometry as sent, its own box); the others are leaves for s.  A pair that passes far_pair()
// goes to M2L (small leaf pairs at s = 0 with particles to P2P, as build_lists does); a target
// leaf against a LET leaf for s takes its particles by P2P or, for a multipole, an M2P at each
// of its targets (fmm/expansions.h m2p_table), which whole() makes valid: every target x lies
// in T, so R_B < theta |x - c_B - s| and x is beyond B's cut-off.  As the traversal splits one
// side of a pair into its children at each step, every target takes every source of the sender
// once per shift; the opened cells' multipoles serve the targets far from them, as a tree's do.
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

/// One cell of the LET as it travels (trivially copyable): what the acceptance tests read of
/// the sender's cell, where its multipole or particles are, and its parent.  int indices: a
/// rank receives fewer than 2^31 cells and particles (2^31 particles are 120 GB).
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
  /// Each sender's cells, parents first (its root first); a cell that came without data (opened
  /// for some shift) has all its children here, consecutive.
  std::vector<LetCell> cells;
  /// One multipole a cell, 3 ncoef(p) coefficients from LetCell::multipole: received, or
  /// computed here by P2M (cells that came as particles) and M2M (opened cells).
  std::vector<cplx> M;
  std::vector<Vec3> x, alpha;  ///< the particles (wrapped positions), each cell's contiguous
  std::vector<double> sigma;
  std::vector<int> child, nchild;  ///< first child and number of children of each cell
  std::vector<int> roots;          ///< each sender's root cell
};

/// Per target cell (this rank's target tree), what it takes from the LET: (index in
/// LetSources::cells, shift index).
struct LetLists {
  std::vector<std::vector<Interaction>> m2l;  ///< into the cell's local expansion
  std::vector<std::vector<Interaction>> m2p;  ///< leaves: the multipole at each of the leaf's targets
  std::vector<std::vector<Interaction>> p2p;  ///< leaves: the cell's particles
};

/// The test of the header comment, whole(): a rank whose targets lie in [lo, hi] takes the cell
/// (centre c, radius, particle box [bmin, bmax], sigma_max) at the shift s whole.  The sender
/// and the receiver call it on the same numbers, so they agree bit for bit.
bool taken_whole(const Vec3& c, double radius, const Vec3& bmin, const Vec3& bmax, double sigma_max, const Vec3& s,
                 const Vec3& lo, const Vec3& hi, const Acceptance& mac);

/// Collective: builds every other rank's LET from this rank's source tree `src`, its multipoles
/// M (3 ncoef(p) a cell) and its strengths `as` (sorted order), for the near-image `shifts` and
/// the acceptance `mac`, against the target boxes of `boxes`; exchanges them (alltoallv of the
/// counts, then of records, multipoles and particles) and returns what came to this rank, with
/// every cell's multipole and the children.  `sent` and `received` get this rank's totals.
LetSources exchange_let(const Comm& comm, const std::vector<RankBox>& boxes, const Tree& src,
                        const std::vector<cplx>& M, const std::vector<Vec3>& as, int p, const std::vector<Vec3>& shifts,
                        const Acceptance& mac, LetStats& sent, LetStats& received);

/// The receiver's traversals of the header comment for the targets of `tgt`, whose box is
/// [lo, hi] (the box the senders were given): what each target cell takes from the LET.  The
/// same lists for any number of threads.
LetLists let_lists(const Tree& tgt, const LetSources& let, const Vec3& lo, const Vec3& hi,
                   const std::vector<Vec3>& shifts, const Acceptance& mac);

/// The counting kernel over the distributed tree: in place of u and grad, adds at each target
/// of `tgt` (sorted order) the sums over every (source q, near image s) that the evaluation
/// hands to it through the own lists (`src`, `as`, its multipoles M, `self` as for the P2P) and
/// through the LET (`let`, `lists`), directly or inside a multipole (whose monopole coefficient
/// is the sum of its sources' strengths, exactly for integer strengths below 2^53), of q's
/// strength: sums[i] += sum alpha_q, image_sums[i][0] += sum (s + 1) alpha_q (s the shift's
/// index), and image_sums[i][1] += lattice_boxes times lattice_alpha (the far lattice: every
/// source, in lattice_boxes further boxes, through the global root's monopole).
void received_sums(const Tree& tgt, const Tree& src, bool self, const Lists& own, const std::vector<Vec3>& as,
                   const std::vector<cplx>& M, const LetSources& let, const LetLists& lists, int p,
                   double lattice_boxes, const Vec3& lattice_alpha, std::vector<Vec3>& sums,
                   std::vector<Mat3>& image_sums);

/// For the tests (tests/mpi/test_fmm_mpi.cpp), collective: evaluate_self (targets null) or
/// evaluate_at over the ranks of comm (fmm/fmm.h) with everything but the kernel, the same
/// trees, lists, LETs and traversals, and received_sums() in its place, in the caller's target
/// order: with alpha_q = (1, global index of q, 0) each target must find N sources (N - 1 at
/// its own image for evaluate_self) once per near image.  Defined in fmm.cpp beside the driver
/// it shares.
Timings count_received(const Params& prm, const Comm& comm, const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                       const std::vector<double>& sigma, const std::vector<Vec3>* targets, std::vector<Vec3>& sums,
                       std::vector<Mat3>& image_sums);

}  // namespace vh::fmm
