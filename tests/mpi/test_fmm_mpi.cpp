// The FMM with its blobs shared over R ranks (fmm/fmm.h, the overloads with a Comm; on the CPU
// the local essential tree of fmm/let.h), run by ctest under `mpirun -np 2` and `-np 3`
// (tests/mpi/CMakeLists.txt).  The shares are uneven and of three kinds: interleaved in space (a
// random assignment: every rank's box is the whole box, so the LETs hold nearly everything),
// z-slabs of uneven thickness (the vortex solver's partition: the LETs hold multipoles and the
// particles near the slab faces, and the M2P at leaf targets runs), and either with the last rank
// empty.
//
// Checked: u and grad u against the one-rank evaluation of all the blobs and against the exact
// periodic sum (tests/fmm/spectral_reference.h) or the free-space direct sum; the counting
// kernel (fmm/let.h count_received): every target takes every source once per near image and
// the far lattice once; and the LETs' size at 2^16 blobs in z-slabs against the gather's. On
// GPUs (one a rank; skipped without): the resident evaluator's upward pass shared over the ranks
// (GpuEvaluator::share_upward) against the unshared one, to round-off; and the vortex solver's
// evaluation at each rank's own blobs (GpuEvaluator::evaluate_own, by the lists and by the
// uniform levels' FFTs) against one GPU's evaluate_self, to round-off shared, bit for bit not.
//
// Tolerances.  Against the one-rank evaluation, relative L2 over all the ranks' blobs:
// 3 x the measured error of the tolerance row in use (fmm/fmm.cpp auto_settings(): 6.3e-8 at
// 1e-6, 5.2e-5 at 1e-4).  Both evaluations are FMMs of the same field under the same acceptance
// test, each within the row's error of the exact field, so they differ by at most twice it; the
// third factor is margin for the grad u, which the table does not list (measured here below the
// u's).  A blob missing or taken twice moves u by ~1e-3 relative on this lattice (one blob of
// 1000), far outside.  Against the exact sums: the library's tolerance (1e-6 or 1e-4), as the
// one-rank tests (the CPU FMM at its defaults measured 4.0e-8 (u) and 1.6e-8 (grad u) on this
// 10^3 lattice against the spectral sum).  The counts are integers and must be exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/comm.h"
#include "fmm/fmm.h"
#include "fmm/let.h"
#include "fmm/p2p.h"
#include "fmm/p2p_kernel.h"
#include "fmm/periodic.h"
#include "spectral_reference.h"
#include "core/device.h"

#ifdef VH_FMM_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "base/device_buffer.h"
#include "base/device_comm.h"
#include "fmm/evaluator.h"
#endif

namespace vh::fmm {
namespace {

Comm world() { return Comm::world(); }

constexpr int kLattice = 10;  // 10^3 = 1000 blobs

/// How many of n items each of R ranks holds: uneven, 10 -> 7/3 (R = 2), 5/3/2 (R = 3);
/// with `last_empty` the last rank holds none (on R > 1).
std::vector<int> share_counts(int n, int ranks, bool last_empty) {
  std::vector<int> c(ranks, 0);
  const int holders = last_empty && ranks > 1 ? ranks - 1 : ranks;  // one rank is never empty
  if (holders == 1) {
    c[0] = n;
    return c;
  }
  if (holders == 2) {
    c[0] = n * 7 / 10;
  } else {
    c[0] = n / 2;
    for (int r = 1; r < holders - 1; ++r) c[r] = n * 3 / 10 / (holders - 2);
  }
  c[holders - 1] = n - std::accumulate(c.begin(), c.begin() + holders - 1, 0);
  return c;
}

enum class Split { random, zslabs };

/// The rank of each of the n points x (the same on every rank): `random`, a random assignment
/// with the counts share_counts(n); `zslabs`, slabs of z in [0, 2 pi) whose thicknesses follow
/// share_counts(10) tenths of the box (7/3 or 5/3/2 tenths).
std::vector<int> owners(const std::vector<Vec3>& x, Split split, bool last_empty, unsigned seed) {
  const int n = static_cast<int>(x.size()), R = world().size();
  std::vector<int> owner(n);
  if (split == Split::random) {
    const std::vector<int> counts = share_counts(n, R, last_empty);
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(seed));
    for (int r = 0, k = 0; r < R; ++r)
      for (int j = 0; j < counts[r]; ++j) owner[order[k++]] = r;
  } else {
    const std::vector<int> tenths = share_counts(10, R, last_empty);
    for (int i = 0; i < n; ++i) {
      const double z = wrap_coordinate(x[i][2]) / kBoxLength * 10;
      int r = 0;
      for (double top = tenths[0]; r + 1 < R && z >= top; top += tenths[++r]) {}
      owner[i] = r;
    }
  }
  return owner;
}

/// The items of this rank, in index order, and their indices.
template <class T>
std::vector<T> mine(const std::vector<T>& v, const std::vector<int>& owner) {
  std::vector<T> m;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (owner[i] == world().rank()) m.push_back(v[i]);
  return m;
}
std::vector<int> my_indices(const std::vector<int>& owner) {
  std::vector<int> m;
  for (std::size_t i = 0; i < owner.size(); ++i)
    if (owner[i] == world().rank()) m.push_back(static_cast<int>(i));
  return m;
}

/// Relative L2 difference over every rank's values (sums reduced over the ranks).
template <class T>
double rel_l2_all(const std::vector<T>& a, const std::vector<T>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double* x = reinterpret_cast<const double*>(&a[i]);
    const double* y = reinterpret_cast<const double*>(&b[i]);
    for (std::size_t k = 0; k < sizeof(T) / sizeof(double); ++k) {
      num += (x[k] - y[k]) * (x[k] - y[k]);
      den += y[k] * y[k];
    }
  }
  return std::sqrt(world().sum(num) / world().sum(den));
}

/// The 10^3 lattice of blobs (sigma = h, alpha = omega h^3 for a random solenoidal omega) and
/// the exact periodic field at its points; grad_self: the same less each blob's own G(0) eps
/// alpha in grad u (its u is 0), which evaluate_self leaves out.
struct Lattice {
  std::vector<Vec3> x, alpha, u;
  std::vector<double> sigma;
  std::vector<Mat3> grad, grad_self;
};
const Lattice& lattice(int n = kLattice) {
  static std::map<int, Lattice> made;
  if (made.count(n)) return made[n];
  const Lattice& l = made[n] = [n] {
    Lattice c;
    const double h = kBoxLength / n;
    testing::lattice_blobs(n, testing::random_solenoidal(n, 3), c.x, c.alpha);
    c.sigma.assign(c.x.size(), h);
    testing::spectral_velocity(n, h, c.alpha, c.u, c.grad);
    c.grad_self = c.grad;
    for (std::size_t i = 0; i < c.x.size(); ++i) {
      const double r0[3] = {0, 0, 0};
      double du[3] = {0, 0, 0}, dg[3][3] = {};
      p2p_pair(r0, c.alpha[i].data(), c.sigma[i], du, dg);
      for (int m = 0; m < 3; ++m)
        for (int k = 0; k < 3; ++k) c.grad_self[i][m][k] -= dg[m][k];
    }
    return c;
  }();
  return l;
}

Params periodic_params(double tolerance) {
  Params prm;
  prm.periodic = true;
  prm.tolerance = tolerance;
  return prm;
}

/// The tolerance row's measured error of u (auto_settings()).
double row_error(double tolerance) {
  for (const AutoSetting& r : auto_settings())
    if (r.tolerance <= tolerance) return r.err_u;
  return auto_settings().back().err_u;
}

/// The one-rank evaluate_self of the whole lattice (the same on every rank), per tolerance.
void one_rank_self(double tolerance, std::vector<Vec3>& u, std::vector<Mat3>& g) {
  static std::map<double, std::pair<std::vector<Vec3>, std::vector<Mat3>>> cache;
  auto it = cache.find(tolerance);
  if (it == cache.end()) {
    const Lattice& l = lattice();
    std::pair<std::vector<Vec3>, std::vector<Mat3>> r;
    evaluate_self(periodic_params(tolerance), l.x, l.alpha, l.sigma, r.first, r.second);
    it = cache.emplace(tolerance, std::move(r)).first;
  }
  u = it->second.first;
  g = it->second.second;
}

const char* name(Split s) { return s == Split::random ? "interleaved" : "z-slabs"; }

void self_case(Split split, bool last_empty, double tolerance) {
  const Comm c = world();
  const Lattice& l = lattice();
  const std::vector<int> owner = owners(l.x, split, last_empty, 17);
  const auto x = mine(l.x, owner), a = mine(l.alpha, owner);
  const auto s = mine(l.sigma, owner);
  const Params prm = periodic_params(tolerance);
  std::vector<Vec3> u, u1;
  std::vector<Mat3> g, g1;
  const Timings tm = evaluate_self(prm, c, x, a, s, u, g);
  one_rank_self(tolerance, u1, g1);
  const double e1u = rel_l2_all(u, mine(u1, owner)), e1g = rel_l2_all(g, mine(g1, owner));
  const double eu = rel_l2_all(u, mine(l.u, owner)), eg = rel_l2_all(g, mine(l.grad_self, owner));
  const double m2p = c.sum(double(tm.n_m2p)), received = c.sum(double(tm.let_received.particles));
  if (c.root())
    std::printf("evaluate_self on %d ranks, %s%s, tolerance %g: rel L2 against one rank u %.2e, grad u %.2e; "
                "against the spectral sum u %.2e, grad u %.2e; LET particles received %.0f, M2P %.0f\n",
                c.size(), name(split), last_empty ? ", last rank empty" : "", tolerance, e1u, e1g, eu, eg, received,
                m2p);
  EXPECT_EQ(u.size(), x.size());
  EXPECT_EQ(g.size(), x.size());
  const double bound = 3 * row_error(tolerance);
  EXPECT_LE(e1u, bound);
  EXPECT_LE(e1g, bound);
  EXPECT_LE(eu, tolerance);
  EXPECT_LE(eg, tolerance);
}

TEST(FmmMpi, SelfInterleavedUnevenShares) { self_case(Split::random, false, 1e-6); }

TEST(FmmMpi, SelfZSlabsUneven) { self_case(Split::zslabs, false, 1e-6); }

TEST(FmmMpi, SelfZSlabsLastRankEmptyLooseTolerance) {
  // The 1e-4 row (theta 0.6, p 12): another near-image range (R0 = 2) and coarser LETs.
  self_case(Split::zslabs, true, 1e-4);
}

// A rank of a thin slab counts only its own points, so by ncrit alone its tree stops splitting
// levels above the leaves of the whole set's: at ncrit 100 the one-rank tree of this 10³ lattice
// splits its level-1 cells (125 points), but a rank of 3 or 2 z-planes holds 75 or 50 of each
// and kept them as leaves, cubes of 5 planes around 2 or 3 of its own. Such a leaf's near field
// reaches further, and the traversal could not split it: 8 and 16 ranks on a 16³ lattice (2 and
// 1 planes a rank) took 5.7 and 5.4 times the one rank's P2P pairs (fmm_bench --turbulent, 2^12,
// tolerance 1e-6). The ranks' trees now reach the whole set's leaf level
// (whole_set_leaf_level): here the pairs of all ranks together are one rank's (10 % allowed).
TEST(FmmMpi, ThinSlabsKeepTheWholeSetsLeaves) {
  const Comm c = world();
  const Lattice& l = lattice();
  const std::vector<int> owner = owners(l.x, Split::zslabs, false, 0);
  Params prm = periodic_params(1e-6);
  prm.ncrit = 100;
  std::vector<Vec3> u, u1;
  std::vector<Mat3> g, g1;
  const Timings tm = evaluate_self(prm, c, mine(l.x, owner), mine(l.alpha, owner), mine(l.sigma, owner), u, g);
  const Timings one = evaluate_self(prm, l.x, l.alpha, l.sigma, u1, g1);
  const double pairs = c.sum(double(tm.n_p2p_pairs)), eu = rel_l2_all(u, mine(l.u, owner));
  if (c.root())
    std::printf("ncrit 100, z-slabs on %d ranks: P2P pairs %.0f, one rank %lld (%.3f); u against the spectral sum "
                "%.2e\n", c.size(), pairs, one.n_p2p_pairs, pairs / double(one.n_p2p_pairs), eu);
  EXPECT_LE(pairs, 1.1 * double(one.n_p2p_pairs));
  EXPECT_LE(eu, 1e-6);
}

TEST(FmmMpi, AtTargetsPeriodic) {
  // Sources in uneven z-slabs, targets shared differently: 200 lattice points (spectral field
  // there, each blob's own contribution included as evaluate_at includes it) in shares of a
  // random assignment, the last rank with none.
  const Comm c = world();
  const Lattice& l = lattice();
  const std::vector<int> owner = owners(l.x, Split::zslabs, false, 0);
  const auto x = mine(l.x, owner), a = mine(l.alpha, owner);
  const auto s = mine(l.sigma, owner);
  std::vector<int> pick(l.x.size());
  std::iota(pick.begin(), pick.end(), 0);
  std::shuffle(pick.begin(), pick.end(), std::mt19937(31));
  pick.resize(200);
  std::vector<Vec3> tx, tu;
  std::vector<Mat3> tg;
  for (int i : pick) {
    tx.push_back(l.x[i]);
    tu.push_back(l.u[i]);
    tg.push_back(l.grad[i]);
  }
  const std::vector<int> towner = owners(tx, Split::random, true, 37);
  const auto t = mine(tx, towner);
  const Params prm = periodic_params(1e-6);
  std::vector<Vec3> u, u1;
  std::vector<Mat3> g, g1;
  evaluate_at(prm, c, x, a, s, t, u, g);
  evaluate_at(prm, l.x, l.alpha, l.sigma, tx, u1, g1);
  const double e1u = rel_l2_all(u, mine(u1, towner)), e1g = rel_l2_all(g, mine(g1, towner));
  const double eu = rel_l2_all(u, mine(tu, towner)), eg = rel_l2_all(g, mine(tg, towner));
  if (c.root())
    std::printf("evaluate_at on %d ranks: rel L2 against one rank u %.2e, grad u %.2e; against the spectral sum "
                "u %.2e, grad u %.2e\n",
                c.size(), e1u, e1g, eu, eg);
  EXPECT_EQ(u.size(), t.size());
  EXPECT_LE(e1u, 3 * row_error(1e-6));
  EXPECT_LE(e1g, 3 * row_error(1e-6));
  EXPECT_LE(eu, 1e-6);
  EXPECT_LE(eg, 1e-6);
}

/// n random blobs in the unit cube, sigma = 0.1 U(0.8, 1.2), alpha uniform in [-0.5, 0.5]^3.
void free_blobs(int n, std::vector<Vec3>& xs, std::vector<Vec3>& as, std::vector<double>& ss) {
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<double> U(0, 1);
  xs.resize(n);
  as.resize(n);
  ss.resize(n);
  for (int i = 0; i < n; ++i) {
    for (int d = 0; d < 3; ++d) xs[i][d] = U(gen), as[i][d] = U(gen) - 0.5;
    ss[i] = 0.1 * (0.8 + 0.4 * U(gen));
  }
}

TEST(FmmMpi, SelfFreeSpace) {
  // Free space: the cube is the union's; random blobs in the unit cube in z-slabs of uneven
  // thickness (of the unit cube: z / (2 pi) in tenths is below 1/6, so by z scaled to the box),
  // against the direct sum and the one-rank evaluation (p 10: measured 1.4e-8, 7.2e-8 against
  // the direct sum; the same 3 x 6.3e-8 bound as above holds it with room for the grad).
  const Comm c = world();
  std::vector<Vec3> xs, as;
  std::vector<double> ss;
  free_blobs(1000, xs, as, ss);
  std::vector<Vec3> scaled = xs;
  for (auto& v : scaled) v[2] *= kBoxLength * (1 - 1e-12);
  const std::vector<int> owner = owners(scaled, Split::zslabs, false, 0);
  Params prm;
  prm.p = 10;
  std::vector<Vec3> u, u1, ud;
  std::vector<Mat3> g, g1, gd;
  evaluate_self(prm, c, mine(xs, owner), mine(as, owner), mine(ss, owner), u, g);
  evaluate_self(prm, xs, as, ss, u1, g1);
  direct_sum(xs, as, ss, xs, true, ud, gd);
  const double e1u = rel_l2_all(u, mine(u1, owner)), e1g = rel_l2_all(g, mine(g1, owner));
  const double eu = rel_l2_all(u, mine(ud, owner)), eg = rel_l2_all(g, mine(gd, owner));
  if (c.root())
    std::printf("free space on %d ranks: rel L2 against one rank u %.2e, grad u %.2e; against the direct sum u "
                "%.2e, grad u %.2e\n",
                c.size(), e1u, e1g, eu, eg);
  EXPECT_LE(e1u, 3 * row_error(1e-6));
  EXPECT_LE(e1g, 3 * row_error(1e-6));
  EXPECT_LE(eu, 1e-6);
  EXPECT_LE(eg, 1e-6);
}

/// The counting kernel (fmm/let.h count_received) with alpha_q = (1, q, 0), q the blob's index
/// among all n: at every target, over the near images (S of them) and the far lattice (B
/// boxes), the exact integer sums of the header of let.h, less the blob itself at its own
/// image for evaluate_self.  All below 2^53: exact in double.
void count_case(const std::vector<Vec3>& x_all, const std::vector<double>& s_all, const std::vector<int>& owner,
                const Params& prm, const std::vector<Vec3>* t_all, const std::vector<int>* towner, const char* what) {
  const Comm c = world();
  const int n = static_cast<int>(x_all.size());
  std::vector<Vec3> ids(n);
  for (int q = 0; q < n; ++q) ids[q] = {1.0, double(q), 0.0};
  std::vector<Vec3> sums, t;
  std::vector<Mat3> image_sums;
  if (t_all) t = mine(*t_all, *towner);
  count_received(prm, c, mine(x_all, owner), mine(ids, owner), mine(s_all, owner), t_all ? &t : nullptr, sums,
                 image_sums);
  const Params r = prm.resolved();
  const int r0 = r.periodic ? near_image_range(r.theta) : 0;
  const double S = std::pow(2 * r0 + 1, 3);
  const double w = r.periodic && r.images > 0 ? 2 * lattice_half_width(r0, r.images) + 1 : 0;
  const double B = r.periodic && r.images > 0 ? w * w * w - S : 0;
  const double N = n, sum_ids = N * (N - 1) / 2, shift_weights = S * (S + 1) / 2;
  const std::vector<int> self_ids = t_all ? std::vector<int>() : my_indices(owner);
  long long bad = 0;
  for (std::size_t i = 0; i < sums.size(); ++i) {
    const double self = t_all ? 0 : 1, id = t_all ? 0 : self_ids[i];
    const double expect[3][2] = {{N * S - self, sum_ids * S - id},
                                 {N * shift_weights - self, sum_ids * shift_weights - id},
                                 {N * B, sum_ids * B}};
    const double got[3][2] = {{sums[i][0], sums[i][1]},
                              {image_sums[i][0][0], image_sums[i][0][1]},
                              {image_sums[i][1][0], image_sums[i][1][1]}};
    bool ok = sums[i][2] == 0 && image_sums[i][0][2] == 0;
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 2; ++j) ok = ok && got[k][j] == expect[k][j];
    if (!ok && bad++ < 3)
      ADD_FAILURE() << what << ": target " << i << " on rank " << c.rank() << " takes " << got[0][0] << " sources ("
                    << expect[0][0] << " expected), ids " << got[0][1] << " (" << expect[0][1]
                    << "), image-weighted " << got[1][0] << " (" << expect[1][0] << "), lattice " << got[2][0]
                    << " (" << expect[2][0] << ")";
  }
  const double targets = c.sum(double(sums.size())), wrong = c.sum(double(bad));
  if (c.root())
    std::printf("counting on %d ranks, %s: %.0f targets, each %.0f sources x %.0f near images + %.0f lattice boxes; "
                "%.0f wrong\n",
                c.size(), what, targets, N, S, B, wrong);
  EXPECT_EQ(targets, t_all ? double(t_all->size()) : N);
}

TEST(FmmMpi, EveryTargetSeesEverySourceOncePerImage) {
  const Lattice& l = lattice();
  for (double tol : {1e-6, 1e-4})
    for (Split split : {Split::random, Split::zslabs})
      for (bool last_empty : {false, true}) {
        const std::string what = std::string("evaluate_self, ") + name(split) +
                                 (last_empty ? ", last rank empty" : "") + ", tolerance " +
                                 (tol == 1e-6 ? "1e-6" : "1e-4");
        count_case(l.x, l.sigma, owners(l.x, split, last_empty, 17), periodic_params(tol), nullptr, nullptr,
                   what.c_str());
      }
  // evaluate_at: sources in z-slabs, the targets (every lattice point moved by a third of a
  // spacing, so none is a source) interleaved, the last rank with none.
  std::vector<Vec3> t = l.x;
  for (auto& v : t)
    for (int d = 0; d < 3; ++d) v[d] += kBoxLength / kLattice / 3;
  const std::vector<int> towner = owners(t, Split::random, true, 43);
  count_case(l.x, l.sigma, owners(l.x, Split::zslabs, false, 0), periodic_params(1e-6), &t, &towner,
             "evaluate_at, z-slabs to interleaved targets");
  // Free space: one image, no lattice.
  std::vector<Vec3> xs, as;
  std::vector<double> ss;
  free_blobs(1000, xs, as, ss);
  Params prm;
  prm.p = 10;
  count_case(xs, ss, owners(xs, Split::random, false, 7), prm, nullptr, nullptr, "evaluate_self, free space");
}

TEST(FmmMpi, LetSmallerThanTheGatherInZSlabs) {
  // 2^16 uniform random blobs (sigma = h, the mean spacing) in z-slabs of equal thickness, the
  // vortex deck's tolerance 1e-5 (theta 0.5, p 12, ncrit 128): the counting path, which builds
  // and exchanges the same LETs as the evaluation (no kernel), must hold exactly, and on 3 ranks
  // each must receive fewer particles than half of all N, and fewer bytes than the gather
  // brings it ((N - N_r) particles of 56 bytes).  Not much fewer bytes at this size: whole leaves
  // (side 0.79, the cut-off 5.1 sigma = 0.79 too) within ~1.1 of a slab 2.09 thick travel as
  // particles, so about half of each neighbour slab; the layer is a few leaves thick at any N,
  // the slab grows as N^(1/3) (bench/fmm/fmm_bench --ranks).
  const Comm c = world();
  const int n = 1 << 16;
  std::mt19937_64 gen(23);
  std::uniform_real_distribution<double> U(0, kBoxLength);
  std::vector<Vec3> xs(n);
  for (auto& v : xs)
    for (int d = 0; d < 3; ++d) v[d] = U(gen);
  const std::vector<double> ss(n, kBoxLength / std::cbrt(double(n)));
  std::vector<int> owner(n);
  for (int i = 0; i < n; ++i) owner[i] = std::min(c.size() - 1, int(xs[i][2] / kBoxLength * c.size()));
  std::vector<Vec3> ids(n);
  for (int q = 0; q < n; ++q) ids[q] = {1.0, double(q), 0.0};
  const Params prm = periodic_params(1e-5);
  std::vector<Vec3> sums;
  std::vector<Mat3> image_sums;
  const Timings tm = count_received(prm, c, mine(xs, owner), mine(ids, owner), mine(ss, owner), nullptr, sums,
                                    image_sums);
  const Params r = prm.resolved();
  const double S = std::pow(2 * near_image_range(r.theta) + 1, 3);
  long long bad = 0;
  const std::vector<int> self_ids = my_indices(owner);
  for (std::size_t i = 0; i < sums.size(); ++i)
    if (sums[i][0] != n * S - 1 || sums[i][1] != double(n) * (n - 1) / 2 * S - self_ids[i]) ++bad;
  EXPECT_EQ(bad, 0);
  const double gather_bytes = 56 * (n - double(sums.size()));
  const double fp = tm.let_received.particles / double(n), fb = tm.let_received.bytes / gather_bytes;
  const std::vector<double> part = {double(tm.let_received.particles), double(tm.let_received.cells),
                                    double(tm.let_received.multipoles), double(tm.let_received.bytes), fp, fb};
  std::vector<double> all(part.size() * c.size());
  c.allgather(part.data(), part.size() * sizeof(double), all.data());
  if (c.root())
    for (int q = 0; q < c.size(); ++q)
      std::printf("LET to rank %d of %d (2^16 blobs, z-slabs, tolerance 1e-5): %.0f particles (%.1f %% of N), %.0f "
                  "cells (%.0f with a multipole), %.0f bytes (%.1f %% of the gather's)\n",
                  q, c.size(), all[6 * q], 100 * all[6 * q + 4], all[6 * q + 1], all[6 * q + 2], all[6 * q + 3],
                  100 * all[6 * q + 5]);
  if (c.size() == 3) {
    EXPECT_LT(fp, 0.5);
    EXPECT_LT(fb, 1.0);
  }
}

#ifdef VH_FMM_HAVE_CUDA
/// Every rank's blobs of `owner` one after the other in rank order (the sources each rank of the
/// vortex solver on R GPUs passes), this rank's first index and count among them, and the exact
/// u and `grad` (with the self pair or without) at its own.
struct RankOrder {
  std::vector<double> xs, as, ss;
  std::size_t first = 0, count = 0;
  std::vector<Vec3> u;
  std::vector<Mat3> grad;
};
RankOrder rank_order(const Lattice& l, const std::vector<int>& owner, const Comm& c, const std::vector<Mat3>& grad) {
  RankOrder o;
  for (int r = 0; r < c.size(); ++r)
    for (std::size_t i = 0; i < l.x.size(); ++i) {
      if (owner[i] != r) continue;
      if (r < c.rank()) ++o.first;
      o.xs.insert(o.xs.end(), l.x[i].begin(), l.x[i].end());
      o.as.insert(o.as.end(), l.alpha[i].begin(), l.alpha[i].end());
      o.ss.push_back(l.sigma[i]);
      if (r == c.rank()) {
        ++o.count;
        o.u.push_back(l.u[i]);
        o.grad.push_back(grad[i]);
      }
    }
  return o;
}

/// Relative L2 errors over all ranks of u and grad u in r (u of o.count targets, then grad u)
/// against `scale` times o's exact ones.
std::pair<double, double> exact_errors(const std::vector<double>& r, const RankOrder& o, double scale) {
  std::vector<Vec3> u(o.count), ue(o.count);
  std::vector<Mat3> g(o.count), ge(o.count);
  for (std::size_t i = 0; i < o.count; ++i)
    for (int m = 0; m < 3; ++m) {
      u[i][m] = r[3 * i + m];
      ue[i][m] = scale * o.u[i][m];
      for (int k = 0; k < 3; ++k) {
        g[i][m][k] = r[3 * o.count + 9 * i + 3 * m + k];
        ge[i][m][k] = scale * o.grad[i][m][k];
      }
    }
  return {rel_l2_all(u, ue), rel_l2_all(g, ge)};
}

/// u and grad u (12 doubles a target) of the GpuEvaluator at the device targets t from the
/// device sources, the upward pass shared over `share` (or not, null) with this rank's sources
/// at [first, first + count).
std::vector<double> gpu_at(GpuEvaluator& ev, DeviceComm* share, std::size_t first, std::size_t count,
                           const DeviceArray<double>& x, const DeviceArray<double>& a, const DeviceArray<double>& s,
                           const DeviceArray<double>& t, bool same) {
  const std::size_t n = s.size(), m = t.size() / 3;
  DeviceArray<double> u(3 * m), g(9 * m);
  ev.share_upward(share, first, count);
  ev.evaluate_at(x.data(), a.data(), s.data(), n, t.data(), m, u.data(), g.data(), same);
  std::vector<double> r(12 * m), hu(3 * m), hg(9 * m);
  u.download(hu.data(), 3 * m);
  g.download(hg.data(), 9 * m);
  std::copy(hu.begin(), hu.end(), r.begin());
  std::copy(hg.begin(), hg.end(), r.begin() + 3 * m);
  return r;
}
#endif

TEST(FmmMpiGpu, SharedUpwardPassEqualsTheWholeOne) {
  // The vortex solver's evaluation on R GPUs: every rank passes every rank's blobs as sources
  // (uneven z-slabs, in rank order) and its own as targets. With the upward pass shared, each
  // rank forms the multipoles of its own blobs and the ranks sum them: the results must be the
  // unshared evaluation's up to the order of those sums (round-off; a leaf or a cell missing or
  // taken twice moves u by ~1e-3 on this lattice), and within the tolerance of the exact sum.
  // Then new strengths at the same positions (the kept trees and lists).
#ifndef VH_FMM_HAVE_CUDA
  GTEST_SKIP() << "no CUDA in this build";
#else
  if (!gpu_available()) GTEST_SKIP() << "no GPU visible";
  const Comm c = world();
  select_gpus(c, true);
  const Lattice& l = lattice();
  const RankOrder o = rank_order(l, owners(l.x, Split::zslabs, false, 0), c, l.grad);
  std::vector<double> as = o.as;
  const DeviceArray<double> x(o.xs), s(o.ss);
  std::vector<double> ts(o.xs.begin() + 3 * o.first, o.xs.begin() + 3 * (o.first + o.count));
  const DeviceArray<double> t(ts);
  DeviceArray<double> a(as);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  {
    DeviceComm dc(c, stream);
    const Params prm = periodic_params(1e-6);
    GpuEvaluator shared(prm), whole(prm);
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1) {  // new strengths, same positions
        for (double& v : as) v *= -0.5;
        a.upload(as);
      }
      const std::vector<double> r1 = gpu_at(shared, &dc, o.first, o.count, x, a, s, t, pass == 1);
      const std::vector<double> r0 = gpu_at(whole, nullptr, 0, 0, x, a, s, t, pass == 1);
      const double e = rel_l2_all(r1, r0);
      const auto [eu, eg] = exact_errors(r1, o, pass == 1 ? -0.5 : 1.0);
      if (c.root())
        std::printf("GPU evaluate_at on %d ranks, upward pass shared%s: rel L2 against the unshared %.2e; against the "
                    "spectral sum u %.2e, grad u %.2e\n",
                    c.size(), pass ? " (new strengths, kept trees)" : "", e, eu, eg);
      EXPECT_LE(e, 1e-12);
      EXPECT_LE(eu, 1e-6);
      EXPECT_LE(eg, 1e-6);
    }
  }
  cudaStreamDestroy(stream);
#endif
}

#ifdef VH_FMM_HAVE_CUDA
/// evaluate_own's u and ∇u at this rank's `count` sources: [u (3 count) | grad (9 count)].
std::vector<double> gpu_own(GpuEvaluator& ev, DeviceComm* share, std::size_t first, std::size_t count,
                            const DeviceArray<double>& x, const DeviceArray<double>& a, const DeviceArray<double>& s,
                            bool same) {
  DeviceArray<double> u(std::max<std::size_t>(3 * count, 1)), g(std::max<std::size_t>(9 * count, 1));
  ev.share_upward(share, first, count);
  ev.evaluate_own(x.data(), a.data(), s.data(), s.size(), u.data(), g.data(), same);
  std::vector<double> r(12 * count);
  u.download(r.data(), 3 * count);
  g.download(r.data() + 3 * count, 9 * count);
  return r;
}

/// max |r1 − r0| and max |r0| over the ranks.
std::pair<double, double> largest_difference(const std::vector<double>& r1, const std::vector<double>& r0,
                                             const Comm& c) {
  double e = 0, top = 0;
  for (std::size_t k = 0; k < r1.size(); ++k) {
    e = std::max(e, std::abs(r1[k] - r0[k]));
    top = std::max(top, std::abs(r0[k]));
  }
  return {c.max(e), c.max(top)};
}

/// evaluate_self's rows [first, first + count) in evaluate_own's layout.
std::vector<double> gpu_self_rows(GpuEvaluator& ev, std::size_t first, std::size_t count, const DeviceArray<double>& x,
                                  const DeviceArray<double>& a, const DeviceArray<double>& s, bool same) {
  const std::size_t n = s.size();
  DeviceArray<double> u(3 * n), g(9 * n);
  ev.evaluate_self(x.data(), a.data(), s.data(), n, u.data(), g.data(), same);
  std::vector<double> hu(3 * n), hg(9 * n), r(12 * count);
  u.download(hu.data(), 3 * n);
  g.download(hg.data(), 9 * n);
  std::copy(hu.begin() + 3 * first, hu.begin() + 3 * (first + count), r.begin());
  std::copy(hg.begin() + 9 * first, hg.begin() + 9 * (first + count), r.begin() + 3 * count);
  return r;
}
#endif

TEST(FmmMpiGpu, OwnSourcesEqualTheOneRankSelfEvaluation) {
  // The vortex solver on R GPUs since evaluate_own: every rank passes every rank's blobs (z-slabs
  // in rank order, uneven; then with the last rank empty, where the solver does not share the
  // upward pass) and takes u and grad u at its own. The rows must be one GPU's evaluate_self's:
  // bit for bit unshared, to round-off shared (a leaf, task or M2L cell of this rank's left out
  // moves them by far more), for both decompositions of the far field: the lists, and the
  // uniform levels by FFTs (ncrit 32: this 10^3 lattice's tree is complete at level 2, its
  // leaves of 8 to 27 blobs; that the FFTs were taken shows as results that differ from the
  // lists'). And within the tolerance of the exact sum. Then new strengths at the same positions
  // (the kept trees).
#ifndef VH_FMM_HAVE_CUDA
  GTEST_SKIP() << "no CUDA in this build";
#else
  if (!gpu_available()) GTEST_SKIP() << "no GPU visible";
  const Comm c = world();
  select_gpus(c, true);
  const Lattice& l = lattice();
  const double tolerance = 1e-4;
  for (const bool last_empty : {false, true}) {
    const RankOrder o = rank_order(l, owners(l.x, Split::zslabs, last_empty, 0), c, l.grad_self);
    const std::vector<double>& as = o.as;
    const std::size_t first = o.first, count = o.count;
    const std::vector<std::size_t> counts = c.counts(count);
    const bool share = std::find(counts.begin(), counts.end(), std::size_t(0)) == counts.end();
    const DeviceArray<double> x(o.xs), s(o.ss);
    DeviceArray<double> a(as);
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    {
      DeviceComm dc(c, stream);
      std::map<std::string, std::vector<double>> by_path;
      for (const std::string m2l : {"lists", "fft"}) {
        Params prm = periodic_params(tolerance);
        prm.ncrit = 32;
        prm.m2l = m2l;
        GpuEvaluator own(prm), whole(prm);
        a.upload(as);
        for (int pass = 0; pass < 2; ++pass) {
          std::vector<double> as2 = as;
          if (pass == 1) {  // new strengths, same positions
            for (double& v : as2) v *= -0.5;
            a.upload(as2);
          }
          const std::vector<double> r1 = gpu_own(own, share ? &dc : nullptr, first, count, x, a, s, pass == 1);
          const std::vector<double> r0 = gpu_self_rows(whole, first, count, x, a, s, pass == 1);
          if (pass == 0) by_path[m2l] = r1;
          double e = 0;
          for (std::size_t k = 0; k < r1.size(); ++k) e = std::max(e, std::abs(r1[k] - r0[k]));
          const auto [eu, eg] = exact_errors(r1, o, pass == 1 ? -0.5 : 1.0);
          const double emax = c.max(e);
          if (c.root())
            std::printf("GPU evaluate_own on %d ranks, m2l %s, %s%s: max |own - one GPU's self rows| %.2e; against "
                        "the spectral sum u %.2e, grad u %.2e\n",
                        c.size(), m2l.c_str(), share ? "upward pass shared" : "last rank empty, not shared",
                        pass ? " (new strengths, kept trees)" : "", emax, eu, eg);
          if (share) {
            EXPECT_LE(emax, 1e-12);
          } else {
            EXPECT_EQ(emax, 0.0);
          }
          EXPECT_LE(eu, tolerance);
          EXPECT_LE(eg, tolerance);
        }
      }
      // The FFTs were taken: the uniform levels' field is not the lists' bits.
      double d = 0;
      for (std::size_t k = 0; k < by_path["lists"].size(); ++k)
        d = std::max(d, std::abs(by_path["lists"][k] - by_path["fft"][k]));
      if (c.sum(static_cast<double>(count)) > 0) {
        EXPECT_GT(c.max(d), 0.0);
      }
    }
    cudaStreamDestroy(stream);
  }
#endif
}

// The uniform levels in windows (fmm/uniform_gpu.h) with the multipoles exchanged where the
// windows read them (fmm/multipole_halo_gpu.h) instead of all-reduced: a 48³ lattice in leaves of
// 27 (level 4, 16 planes of cells) in the uneven z-slabs of share_counts (7/3, 5/3/2, … tenths):
// a rank's rows equal one GPU's evaluate_self rows to round-off, with the strengths of both
// passes, and within the tolerance of the exact sum; the ranks send less than the all-reduce of
// every multipole would (at this size 54, 60 and 70 % of it on 2, 3 and 4 ranks: level 4's 8
// parent planes are few against the stencil's reach; at 256³ on 4 ranks, bench/RESULTS.md).
TEST(FmmMpiGpu, OwnSourcesOnTheWindowsEqualTheOneRankSelfEvaluation) {
#ifndef VH_FMM_HAVE_CUDA
  GTEST_SKIP() << "no CUDA in this build";
#else
  if (!gpu_available()) GTEST_SKIP() << "no GPU visible";
  const Comm c = world();
  if (c.size() < 2) GTEST_SKIP() << "one rank: nothing to exchange";
  select_gpus(c, true);
  const Lattice& l = lattice(48);
  const double tolerance = 1e-4;
  const RankOrder o = rank_order(l, owners(l.x, Split::zslabs, false, 0), c, l.grad_self);
  const DeviceArray<double> x(o.xs), s(o.ss);
  DeviceArray<double> a(o.as);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  {
    DeviceComm dc(c, stream);
    Params prm = periodic_params(tolerance);
    prm.ncrit = 27;
    prm.m2l = "fft";
    GpuEvaluator own(prm), whole(prm);
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<double> as = o.as;
      if (pass == 1)  // new strengths, same positions
        for (double& v : as) v *= -0.5;
      a.upload(as);
      const double sent0 = dc.stats().bytes;
      const std::vector<double> r1 = gpu_own(own, &dc, o.first, o.count, x, a, s, pass == 1);
      const double sent = c.sum(dc.stats().bytes - sent0);
      const std::vector<double> r0 = gpu_self_rows(whole, o.first, o.count, x, a, s, pass == 1);
      const auto [emax, tmax] = largest_difference(r1, r0, c);
      const auto [eu, eg] = exact_errors(r1, o, pass == 1 ? -0.5 : 1.0);
      // What the all-reduce of every multipole sends a rank: 4681 cells of 3 ncoef(p) complex
      // values (auto_settings' p for the tolerance, as the evaluator resolves it).
      const double allreduce = double(c.size()) * 4681 * 3 * ncoef(prm.resolved().p) * 16;
      if (c.root())
        std::printf("GPU evaluate_own on %d ranks, uniform levels in windows%s: max |own - one GPU's self rows| %.2e "
                    "of %.2e; against the spectral sum u %.2e, grad u %.2e; the ranks sent %.3g MB (the all-reduce "
                    "%.3g MB)\n",
                    c.size(), pass ? " (new strengths, kept trees)" : "", emax, tmax, eu, eg, sent / 1e6,
                    allreduce / 1e6);
      EXPECT_LE(emax, 1e-13 * tmax);
      EXPECT_LE(eu, tolerance);
      EXPECT_LE(eg, tolerance);
      EXPECT_LT(sent, allreduce);
    }
  }
  cudaStreamDestroy(stream);
#endif
}

// A rank's own blobs and the ghosts that source_planes asks for, instead of every rank's
// (share_upward's total; the vortex solver on R GPUs): the 48³ lattice of the test above in the
// same uneven z-slabs, as it is and with every blob moved by up to a fifth of a spacing (off the
// lattice the leaves' margins differ from rank to rank, and the ranks must take the whole set's).
// The ghosts are chosen here on the host from every rank's blobs by source_planes' rule (the
// plane floor(z / side) within `reach` of the arc the rank's blobs occupy), an independent
// account of what vortex/halo_gpu.h sends. A rank's rows must equal one GPU's evaluate_self rows
// to round-off (the same tree cell for cell, the same stencils, the same pairs), with both
// passes' strengths; on the lattice the exact sum within the tolerance; on 3 and more ranks a
// rank must see fewer than all blobs.
TEST(FmmMpiGpu, OwnSourcesAndGhostsEqualTheOneRankSelfEvaluation) {
#ifndef VH_FMM_HAVE_CUDA
  GTEST_SKIP() << "no CUDA in this build";
#else
  if (!gpu_available()) GTEST_SKIP() << "no GPU visible";
  const Comm c = world();
  if (c.size() < 2) GTEST_SKIP() << "one rank: no ghosts";
  select_gpus(c, true);
  const double tolerance = 1e-4, h = kBoxLength / 48;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  for (const double amplitude : {0.0, 0.2}) {
    Lattice l = lattice(48);
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> jitter(-amplitude, amplitude);
    for (auto& p : l.x)
      for (double& v : p) v += h * jitter(rng);
    const RankOrder o = rank_order(l, owners(lattice(48).x, Split::zslabs, false, 0), c, l.grad_self);
    const std::size_t total = o.ss.size();
    DeviceComm dc(c, stream);
    Params prm = periodic_params(tolerance);
    prm.ncrit = 27;
    prm.m2l = "fft";
    GpuEvaluator own(prm), whole(prm);
    const DeviceArray<double> mine_x(std::vector<double>(o.xs.begin() + 3 * static_cast<long>(o.first),
                                                         o.xs.begin() + 3 * static_cast<long>(o.first + o.count)));
    const GpuEvaluator::SourcePlanes sp = own.source_planes(mine_x.data(), o.count, static_cast<long long>(total), h);
    // The ghosts: every rank's blobs (rank order) whose plane is within reach of this rank's arc.
    std::vector<double> gx, ga, gs;
    std::size_t first = 0;
    bool own_in = true;
    for (std::size_t i = 0; i < total; ++i) {
      int z = static_cast<int>(std::floor(o.xs[3 * i + 2] / sp.side)) % sp.planes;
      if (z < 0) z += sp.planes;
      const int d = ((z - sp.first) % sp.planes + sp.planes) % sp.planes;
      const bool take = d < sp.count + sp.reach || d >= sp.planes - sp.reach;
      if (i >= o.first && i < o.first + o.count && !take) own_in = false;
      if (!take) continue;
      if (i < o.first) ++first;
      gx.insert(gx.end(), o.xs.begin() + 3 * static_cast<long>(i), o.xs.begin() + 3 * static_cast<long>(i) + 3);
      ga.insert(ga.end(), o.as.begin() + 3 * static_cast<long>(i), o.as.begin() + 3 * static_cast<long>(i) + 3);
      gs.push_back(o.ss[i]);
    }
    EXPECT_TRUE(own_in);
    const DeviceArray<double> x(o.xs), s(o.ss), px(gx), ps(gs);
    DeviceArray<double> a(o.as), pa(ga);
    const double seen = c.max(double(gs.size()) / double(total));
    double kept_least = 1, kept_most = 1;  // the shares of the tree's cells whose expansions ranks keep
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<double> as = o.as, pas = ga;
      if (pass == 1) {  // new strengths, same positions
        for (double& v : as) v *= -0.5;
        for (double& v : pas) v *= -0.5;
      }
      a.upload(as);
      pa.upload(pas);
      DeviceArray<double> u(3 * o.count), g(9 * o.count);
      own.share_upward(&dc, first, o.count, static_cast<long long>(total));
      const Timings t = own.evaluate_own(px.data(), pa.data(), ps.data(), gs.size(), u.data(), g.data(), pass == 1);
      EXPECT_TRUE(own.took_uniform());
      const double share = double(t.expansion_cells) / double(t.cells);
      kept_least = -c.max(-share);
      kept_most = c.max(share);
      std::vector<double> r1(12 * o.count);
      u.download(r1.data(), 3 * o.count);
      g.download(r1.data() + 3 * o.count, 9 * o.count);
      const std::vector<double> r0 = gpu_self_rows(whole, o.first, o.count, x, a, s, pass == 1);
      const auto [emax, tmax] = largest_difference(r1, r0, c);
      const auto [eu, eg] = exact_errors(r1, o, pass == 1 ? -0.5 : 1.0);
      if (c.root())
        std::printf("GPU evaluate_own on %d ranks, own blobs and ghosts, %s (%d leaf planes, reach %d; a rank sees "
                    "at most %.0f %% of the blobs, keeps the expansions of %.0f to %.0f %% of the cells)%s: max |own - "
                    "one GPU's self rows| %.2e of %.2e; against the lattice's spectral sum u %.2e, grad u %.2e\n",
                    c.size(), amplitude > 0 ? "moved off the lattice" : "the lattice", sp.planes, sp.reach,
                    100 * seen, 100 * kept_least, 100 * kept_most, pass ? " (new strengths, kept trees)" : "", emax,
                    tmax, eu, eg);
      EXPECT_LE(emax, 1e-13 * tmax);
      if (amplitude == 0) {
        EXPECT_LE(eu, tolerance);
        EXPECT_LE(eg, tolerance);
      }
    }
    // On 3 and more ranks the leaves' level is in windows where a rank's slab and the stencil's
    // reach are fewer than its 16 planes: M and L keep only those cells there
    // (fmm/expansion_rows.h).
    if (c.size() >= 3) {
      EXPECT_LT(seen, 1.0);
      EXPECT_LT(kept_least, 1.0);
    }
  }
  cudaStreamDestroy(stream);
#endif
}

TEST(FmmMpi, BadInputOnOneRankThrowsOnEvery) {
  // A non-finite strength on the last rank: every rank throws (none is left in an exchange),
  // the last with its own message, the others with it and its rank; then the ranks go on.
  const Comm c = world();
  const Lattice& l = lattice();
  const std::vector<int> owner = owners(l.x, Split::random, false, 17);
  const auto x = mine(l.x, owner);
  const auto s = mine(l.sigma, owner);
  auto a = mine(l.alpha, owner);
  const int bad = c.size() - 1;
  if (c.rank() == bad) a[5][1] = std::nan("");
  std::string what;
  try {
    std::vector<Vec3> u;
    std::vector<Mat3> g;
    evaluate_self(periodic_params(1e-6), c, x, a, s, u, g);
  } catch (const std::invalid_argument& e) {
    what = e.what();
  }
  const std::string own = "fmm: strength 5 is not finite";
  EXPECT_EQ(what, c.rank() == bad ? own : "rank " + std::to_string(bad) + ": " + own);
  EXPECT_EQ(c.sum(1.0), double(c.size()));  // every rank reaches the next collective
}

}  // namespace
}  // namespace vh::fmm
