// Fast multipole method for the Gaussian-regularised Biot-Savart kernel (docs/design.md "Vortex
// method definitions"): velocity u and gradient grad[m][k] = du_m/dx_k at target points, induced
// by blobs of vector strength alpha_q and core radius sigma_q at x_q,
//   u(x) = sum_q K_sigma_q(x - x_q) x alpha_q,   K_sigma(r) = -r g(|r|/(sqrt(2) sigma)) / (4 pi |r|^3).
// CPU path: double precision, OpenMP over target cells, the reference of the GPU path
// (Params::use_gpu), which runs the whole evaluation on the device (fmm/README.md).
//
// Method: Morton octree (fmm/tree.h); the far field is the Laplace vector potential
// psi = sum alpha / (4 pi r) in solid harmonics (fmm/expansions.h) with u = curl psi and
// du_m/dx_l = eps_{mjk} d_l d_j psi_k from one local expansion (gradient and Hessian of psi);
// dual tree traversal with a criterion that also bounds the regularisation error
// (fmm/traverse.h); near field by the exact kernel (fmm/p2p_kernel.h); periodic images
// (fmm/periodic.h).  Units: those of the inputs (periodic: the box is [0, 2 pi)^3).
//
// Periodic mode: every position (sources and targets) is wrapped into [0, 2 pi)^3 first; the
// result is the periodic field with zero mean velocity (and without the k = 0 vorticity mode).
#pragma once

#include <string>
#include <vector>

#include "fmm/types.h"

namespace vh {
class Comm;  // base/comm.h
}

namespace vh::fmm {

/// Parameters.  Deck keys are "fmm.<name>"; see describe_params().  p, ncrit and theta default
/// to "auto" (-1): resolved() takes them from the measured table auto_settings() for the
/// requested tolerance; values set explicitly win.
struct Params {
  int p = -1;               ///< expansion order (degrees 0..p), 1..30; -1: auto
  int ncrit = -1;           ///< max particles per leaf, >= 1; -1: auto
  double theta = -1;        ///< acceptance: R_A + R_B < theta * distance, in (0, 1); -1: auto
  int images = 5;           ///< periodic far-lattice levels (each x3 in width), 0..12
  /// Target relative L2 error of u, in (0, 0.1]: picks the auto parameters, and the far field
  /// is used only where the regularisation is below it (1 - g(rho) < tolerance).  1e-6 is this
  /// library's default; the deck key fmm.tolerance defaults to 1e-5 (vortex/solver.cpp).
  double tolerance = 1e-6;
  bool periodic = false;    ///< periodic in [0, 2 pi)^3 or free space
  int p2p_max_pairs = -1;   ///< far pairs (leaf target) with n_A n_B <= this use P2P; -1: (p+1)^4/55
  /// Working precision of the GPU near field (P2P) and M2L, "single", "double" or "auto" (from
  /// the tolerance table: single down to 1e-5, double below; deck key fmm.precision); no effect
  /// on the CPU path, which is double throughout, nor on the other GPU far-field stages and the
  /// expansions (double).
  std::string precision = "auto";
  /// The far field's decomposition on the GPU evaluator (fmm/evaluator.h) for periodic self
  /// evaluations: "lists" (the dual traversal's lists; the default) or "fft" (a complete tree by
  /// its uniform levels, the M2L of levels 2 and below by FFTs: fmm/uniform_gpu.h; other trees
  /// by the lists).  No effect elsewhere (the CPU path, evaluate_* with use_gpu).  Deck key fmm.m2l.
  std::string m2l = "lists";
  /// The whole evaluation on the GPU: sort, cells, lists, near and far field (fmm/README.md).
  /// Not a deck key: the caller sets it from the program's back end (--device).  Needs a build with CUDA (VH_FMM_HAVE_CUDA): validate() throws
  /// std::invalid_argument otherwise; without a visible device evaluate_* throw
  /// std::runtime_error.  The CPU path (false) is unchanged bit for bit.
  bool use_gpu = false;
  /// Throws std::invalid_argument naming the bad parameter.
  void validate() const;
  /// Sets a parameter from its deck string ("p", "ncrit", "theta" = a number or "auto",
  /// "images", "tolerance", "periodic" = true/false/1/0, "p2p_max_pairs", "precision" =
  /// single/double); throws std::invalid_argument for unknown keys or bad values.
  void set(const std::string& key, const std::string& value);
  /// A copy with p, ncrit, theta and precision resolved: each one left at auto comes from the
  /// first row of auto_settings() whose measured error is within `tolerance` (the last row when
  /// none is).
  Params resolved() const;
};

/// One measured setting of the auto table: the cheapest (theta, p, ncrit) found whose relative
/// L2 error of u stayed below `tolerance` (bench/fmm/tolerance_table.sh, README "fmm.tolerance").
struct AutoSetting {
  double tolerance;
  double theta;
  int p, ncrit;
  const char* precision;  ///< of the GPU near field
  double err_u;           ///< measured error of that setting (the worse of the two test fields)
};
/// The table, loosest tolerance first.
const std::vector<AutoSetting>& auto_settings();

/// One parameter for the deck: key without the "fmm." prefix, type, default, help text.
struct ParamInfo {
  std::string key, type, default_value, help;
};
/// The table of the deck's Params members, in declaration order (defaults from Params{});
/// use_gpu is not among them.
std::vector<ParamInfo> describe_params();

/// The local essential trees of the Comm overloads on the CPU (fmm/let.h): what one rank sent
/// to all the others, or received from them.
struct LetStats {
  long long cells = 0;       ///< cell records: with a multipole, with particles, or without data (opened)
  long long multipoles = 0;  ///< of which with a multipole
  long long particles = 0;   ///< particles
  long long bytes = 0;       ///< bytes in all (records, multipoles, particles)
};

/// Wall time per phase of one evaluation, seconds.
struct Timings {
  double tree = 0;      ///< wrapping, Morton sort, tree build
  double p2m_m2m = 0;   ///< upward pass (and the periodic lattice)
  double traverse = 0;  ///< interaction lists
  double m2l = 0;
  double l2l_l2p = 0;   ///< downward pass and evaluation at targets
  double p2p = 0;
  double upload = 0;    ///< use_gpu only: list flattening and uploads (the stages above are then GPU kernel times); GpuEvaluator: the input check
  /// The overloads with a Comm: the input check on every rank, the boxes, and on the CPU the
  /// LETs' walks and exchange, the root multipoles and the mean terms (the stages above are this
  /// rank's own; the receiver's LET traversals are in traverse), on the GPU the gather of the sources.
  double exchange = 0;
  /// GpuEvaluator: wall time of the GPU stages from P2M to L2P with the near field beside the
  /// far field (the stage times above are per stream and overlap).
  double gpu_wall = 0;
  double total = 0;
  long long n_m2l = 0, n_p2p_pairs = 0;  ///< work counters
  /// GpuEvaluator: the P2P's list entries summed over its target leaves, after merging source
  /// ranges that follow one another (the lists' or the uniform levels').
  long long n_p2p_entries = 0;
  long long n_m2p = 0;                   ///< the LET's multipoles evaluated at single targets (CPU, Comm)
  long long n_l2l = 0;                   ///< GpuEvaluator: the L2L's translations (the children it formed)
  /// GpuEvaluator: the source tree's cells, and those whose multipoles and local expansions it
  /// keeps (all but on R ranks with the uniform levels in windows: fmm/expansion_rows.h).
  long long cells = 0, expansion_cells = 0;
  /// GPU: the P2M or the L2P as matrix products, every leaf holding the same points (a lattice:
  /// fmm/lattice_leaves.h).
  bool lattice_leaves = false;
  /// GPU: levels whose M2M or L2L ran as matrix products (the full levels of a uniform tree).
  int lattice_levels = 0;
  LetStats let_sent, let_received;       ///< the CPU overloads with a Comm: this rank's LETs
};

/// Field at the sources themselves (self interaction of each blob left out exactly; its only
/// effect would be sigma-dependent G(0) eps.alpha in grad, which drops out of stretching).
/// x, alpha, sigma: N entries each; u, grad resized to N.  Throws std::invalid_argument on bad
/// parameters or inputs (NaN/inf positions or strengths, sigma <= 0 or NaN, size mismatch).
Timings evaluate_self(const Params& prm, const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                      const std::vector<double>& sigma, std::vector<Vec3>& u, std::vector<Mat3>& grad);

/// Field at separate targets (no pair left out; r = 0 is regular).  u, grad resized to targets.size().
Timings evaluate_at(const Params& prm, const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                    const std::vector<double>& sigma, const std::vector<Vec3>& targets, std::vector<Vec3>& u,
                    std::vector<Mat3>& grad);

/// The blobs shared over the ranks of `comm` (collective: every rank calls it with the same
/// prm).  Each rank passes its own share of the blobs (any size, zero included; any partition:
/// the ranks' boxes, fmm/partition.h, are all the FMM assumes) and gets u and grad at them (u,
/// grad resized to x.size()): evaluate_self of all the ranks' shares within the tolerance (each
/// blob's self pair, and only it, left out), not bit for bit.  On the CPU each rank builds the
/// tree of its own blobs in the cube every rank shares and takes the other ranks' sources
/// through their local essential trees (fmm/let.h: multipoles and near particles sent by their
/// owners, each source once per near image; the far lattice from the sum of the ranks' root
/// multipoles): memory O(N / R + LET) a rank.  The GPU path (prm.use_gpu) still gathers every
/// rank's sources (allgatherv: memory O(N) a rank) and evaluates its share of them on its GPU,
/// bit for bit the one-rank evaluation of the shares concatenated in rank order; its LET is
/// issue 25's device part.  Invalid parameters or inputs on any rank throw
/// std::invalid_argument on every rank (its own message on a rank at fault, the first such
/// rank's message, prefixed with its number, on the others).  One rank (Comm()): evaluate_self.
Timings evaluate_self(const Params& prm, const Comm& comm, const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                      const std::vector<double>& sigma, std::vector<Vec3>& u, std::vector<Mat3>& grad);

/// evaluate_at with the sources shared over the ranks of `comm` (collective): each rank passes
/// its own share of the sources and its own targets, and gets u and grad at its targets:
/// evaluate_at of all the ranks' sources at these targets within the tolerance.  The LET (CPU)
/// or the gather (GPU), and the errors, as evaluate_self above.  One rank: evaluate_at.
Timings evaluate_at(const Params& prm, const Comm& comm, const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                    const std::vector<double>& sigma, const std::vector<Vec3>& targets, std::vector<Vec3>& u,
                    std::vector<Mat3>& grad);

}  // namespace vh::fmm
