// The traversal on the GPU (fmm/traverse_gpu.h) against its CPU counterpart: build_lists
// (fmm/traverse.h) followed by the host conversions FarGpu and P2PGpu make (m2l_arrays,
// flatten_p2p_lists + p2p_arrays).  The device arrays must equal the host ones element for
// element (the decisions are the same floating-point operations and the order is fixed), and a
// whole evaluation through the new constructors must give the same bits as through the old.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common.h"
#include "fmm/far_gpu.h"
#include "fmm/mean_correction.h"
#include "fmm/p2p_gpu.h"
#include "fmm/periodic.h"
#include "fmm/traverse.h"
#include "fmm/traverse_gpu.h"
#include "fmm/tree.h"

namespace vh::fmm {
namespace {

using testing::clustered;
using testing::random_blobs;

// Depth-first pre-order rank of every cell, children in index order (the test's own recursion).
std::vector<int> preorder_rank(const Tree& t) {
  std::vector<int> rank(t.cells.size(), -1);
  std::vector<int> stack{0};
  int next = 0;
  while (!stack.empty()) {
    const int c = stack.back();
    stack.pop_back();
    rank[c] = next++;
    for (int k = t.cells[c].child + t.cells[c].nchild - 1; k >= t.cells[c].child; --k) stack.push_back(k);
  }
  return rank;
}

// Index of the first difference of two vectors, or -1; sizes must agree first.
template <class V> long long first_diff(const std::vector<V>& a, const std::vector<V>& b) {
  if (a.size() != b.size()) return static_cast<long long>(std::min(a.size(), b.size()));
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i])) return static_cast<long long>(i);
  return -1;
}

// The element at i, printed.
std::string show(int v) { return std::to_string(v); }
std::string show(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}
template <class T, std::size_t N> std::string show(const std::array<T, N>& a) {
  std::string s = "(";
  for (std::size_t i = 0; i < N; ++i) s += (i ? ", " : "") + show(a[i]);
  return s + ")";
}
template <class V> std::string show_at(const std::vector<V>& v, long long i) {
  return i >= 0 && i < static_cast<long long>(v.size()) ? show(v[i]) : "-";
}

#define VH_EXPECT_SAME(gpu, cpu, what)                                                                    \
  do {                                                                                                    \
    const long long d_ = first_diff(gpu, cpu);                                                            \
    EXPECT_EQ(d_, -1) << what << ": sizes " << (gpu).size() << " (GPU) vs " << (cpu).size()               \
                      << " (CPU), first difference at " << d_ << ": " << show_at(gpu, d_) << " (GPU) vs " \
                      << show_at(cpu, d_) << " (CPU)";                                                    \
  } while (0)

struct TravCase {
  const char* name;
  bool periodic, separate, cluster;
  int n, ncrit;
  double theta;
  long long p2p_max_pairs;
};

struct Built {
  Tree src, tgt_own;
  std::vector<Vec3> shifts;
  Acceptance mac{0, 0, 0};
  bool self = true;
  const Tree& tgt() const { return self ? src : tgt_own; }
};

Built build(const TravCase& c, double tol = 1e-4) {
  Built b;
  std::vector<Vec3> x, t;
  std::vector<double> sigma, unused;
  const double L = kBoxLength;
  // Periodic: some points outside the box (the tree wraps them in).
  const double lo = c.periodic ? -0.1 * L : -1.0, side = c.periodic ? 1.2 * L : 2.0;
  if (c.cluster) {
    clustered(c.n, 11 + c.ncrit, lo, side, x, sigma);
  } else {
    const testing::Blobs bl = random_blobs(c.n, lo, side, 5 + c.ncrit, false);
    x = bl.x;
    sigma = bl.sigma;
  }
  b.self = !c.separate;
  if (c.separate) {
    const testing::Blobs bt = random_blobs(c.n / 2 + 17, lo, side, 77, false);
    t = bt.x;
    for (int i = 0; i < 50; ++i) t[i] = x[3 * i];  // targets on sources
  }
  Vec3 centre;
  double half;
  if (c.periodic) {
    centre = {0.5 * L, 0.5 * L, 0.5 * L};
    half = 0.5 * L;
  } else {
    bounding_cube(x, c.separate ? &t : nullptr, centre, half);
  }
  b.src = build_tree(x, sigma, centre, half, c.ncrit, TreeBuild{c.periodic, false});
  if (c.separate) b.tgt_own = build_tree(t, {}, centre, half, c.ncrit, TreeBuild{c.periodic, false});
  b.shifts = c.periodic ? near_image_shifts(near_image_range(c.theta)) : std::vector<Vec3>{{0, 0, 0}};
  b.mac = Acceptance{c.theta, rcut_per_sigma(tol), c.p2p_max_pairs};
  return b;
}

// The order build_lists appends in (what the GPU's sort reproduces): per target, shifts
// non-decreasing and, for one shift, sources in increasing pre-order rank.
void expect_serial_order(const Built& b, const Lists& lists) {
  const std::vector<int> rank = preorder_rank(b.src);
  long long bad = 0;
  for (const auto* l : {&lists.m2l, &lists.p2p})
    for (const auto& v : *l)
      for (std::size_t k = 1; k < v.size(); ++k)
        if (v[k].shift < v[k - 1].shift || (v[k].shift == v[k - 1].shift && rank[v[k].source] <= rank[v[k - 1].source]))
          ++bad;
  EXPECT_EQ(bad, 0) << "entries out of (shift, pre-order rank) order";
}

class TraverseGpu : public ::testing::TestWithParam<TravCase> {};

TEST_P(TraverseGpu, SameArraysAsTheHostLists) {
  VH_NEED_GPU();
  const TravCase& c = GetParam();
  const Built b = build(c);
  const Tree& tgt = b.tgt();
  const Lists lists = build_lists(tgt, b.src, b.shifts, b.mac);
  expect_serial_order(b, lists);
  const M2LArrays m2l = m2l_arrays(tgt, lists);
  for (bool merge : {true, false}) {
    const P2PLists fl = flatten_p2p_lists(tgt, b.src, lists, b.shifts, b.self, merge);
    const P2PArrays p2p = p2p_arrays(fl);
    const GpuLists g = build_lists_gpu(tgt, b.src, b.self, b.shifts, b.mac, merge);
    const M2LArrays gm = g.m2l_to_host();
    const P2PArrays gp = g.p2p_to_host();
    const std::string what = std::string(c.name) + (merge ? " merged" : " unmerged");
    VH_EXPECT_SAME(gm.targets, m2l.targets, what + " m2l targets");
    VH_EXPECT_SAME(gm.goffset, m2l.goffset, what + " m2l goffset");
    VH_EXPECT_SAME(gm.groups, m2l.groups, what + " m2l groups");
    VH_EXPECT_SAME(gm.entries, m2l.entries, what + " m2l entries");
    VH_EXPECT_SAME(gp.tasks, p2p.tasks, what + " p2p tasks");
    VH_EXPECT_SAME(gp.entries, p2p.entries, what + " p2p entries");
    EXPECT_EQ(g.n_m2l, static_cast<long long>(m2l.entries.size())) << what;
    EXPECT_EQ(g.n_m2l_targets, static_cast<int>(m2l.targets.size())) << what;
    EXPECT_EQ(g.n_m2l_groups + 1, static_cast<long long>(m2l.groups.size())) << what;
    EXPECT_EQ(g.n_p2p_tasks, static_cast<int>(p2p.tasks.size())) << what;
    EXPECT_EQ(g.n_p2p_entries, static_cast<long long>(p2p.entries.size())) << what;
    EXPECT_EQ(g.p2p_pairs, fl.pairs()) << what;
    int max_end = 0, n_targets = 0;
    for (int e : fl.src_end) max_end = std::max(max_end, e);
    for (int e : fl.leaf_end) n_targets = std::max(n_targets, e);
    EXPECT_EQ(g.p2p_max_source, max_end) << what;
    EXPECT_EQ(g.p2p_targets, n_targets) << what;
    if (merge) {
      // The cases exercise what they should: M2L and P2P entries, and periodic lists that mix
      // shifts (groups of several images).
      EXPECT_GT(m2l.entries.size(), 0u) << what;
      EXPECT_GT(p2p.entries.size(), 0u) << what;
      if (c.periodic) {
        EXPECT_LT(m2l.groups.size(), m2l.entries.size() + 1) << what;
      }
      std::printf("[ %s ] cells %zu, m2l %zu entries in %zu groups of %zu targets, p2p %zu entries, %zu tasks, "
                  "%lld pairs\n",
                  c.name, tgt.cells.size(), m2l.entries.size(), m2l.groups.size() - 1, m2l.targets.size(),
                  p2p.entries.size(), p2p.tasks.size(), fl.pairs());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TraverseGpu,
    ::testing::Values(TravCase{"free_self_uniform", false, false, false, 20000, 32, 0.5, 266},
                      TravCase{"free_self_clustered", false, false, true, 30000, 16, 0.7, 0},
                      TravCase{"free_separate_clustered", false, true, true, 20000, 24, 0.4, 100},
                      TravCase{"periodic_self_uniform", true, false, false, 20000, 64, 0.6, 266},
                      TravCase{"periodic_self_clustered", true, false, true, 20000, 8, 0.7, 50},
                      TravCase{"periodic_separate_uniform", true, true, false, 6000, 40, 0.4, 266},
                      TravCase{"periodic_separate_clustered", true, true, true, 15000, 20, 0.6, 5000}),
    [](const ::testing::TestParamInfo<TravCase>& i) { return std::string(i.param.name); });

// A tree against an empty one: no entries; the P2P tasks of the target leaves remain (as
// flatten_p2p_lists gives them).
TEST(TraverseGpuEdge, EmptySourceTree) {
  VH_NEED_GPU();
  const testing::Blobs bt = random_blobs(300, 0.0, 1.0, 3, false);
  const Vec3 c{0.5, 0.5, 0.5};
  const Tree tgt = build_tree(bt.x, {}, c, 0.5, 16);
  const Tree src = build_tree({}, {}, c, 0.5, 16);
  const std::vector<Vec3> shifts{{0, 0, 0}};
  const Acceptance mac{0.5, 1.0, 10};
  const Lists lists = build_lists(tgt, src, shifts, mac);
  const GpuLists g = build_lists_gpu(tgt, src, false, shifts, mac);
  const M2LArrays m2l = m2l_arrays(tgt, lists);
  const P2PArrays p2p = p2p_arrays(flatten_p2p_lists(tgt, src, lists, shifts, false));
  const M2LArrays gm = g.m2l_to_host();
  const P2PArrays gp = g.p2p_to_host();
  VH_EXPECT_SAME(gm.goffset, m2l.goffset, "goffset");
  VH_EXPECT_SAME(gm.groups, m2l.groups, "groups");
  VH_EXPECT_SAME(gp.tasks, p2p.tasks, "tasks");
  EXPECT_EQ(g.n_m2l, 0);
  EXPECT_EQ(g.n_p2p_entries, 0);
}

// A whole GPU evaluation (as fmm.cpp's evaluate_gpu makes it: P2P launched first, far field,
// periodic lattice and mean correction) through the GPU lists gives the same bits as through the
// host lists.
struct EvalCase {
  bool periodic, separate;
  GpuPrecision prec;
};

void evaluate(const Built& b, const std::vector<Vec3>& alpha_in, bool periodic,
              GpuPrecision prec, bool gpu_lists, std::vector<Vec3>& u, std::vector<Mat3>& grad) {
  const int p = 8, images = 2;
  const Tree& tgt = b.tgt();
  const int ns = static_cast<int>(b.src.x.size());
  std::vector<Vec3> as(ns);
  for (int i = 0; i < ns; ++i) as[i] = alpha_in[b.src.perm[i]];
  Lists lists;
  GpuLists gl;
  std::unique_ptr<P2PGpu> near;
  if (gpu_lists) {
    gl = build_lists_gpu(tgt, b.src, b.self, b.shifts, b.mac);
    near = std::make_unique<P2PGpu>(gl, prec);
  } else {
    lists = build_lists(tgt, b.src, b.shifts, b.mac);
    near = std::make_unique<P2PGpu>(flatten_p2p_lists(tgt, b.src, lists, b.shifts, b.self), prec);
  }
  near->set_sources(b.src.x, as, b.src.sigma);
  if (!b.self) near->set_targets(tgt.x);
  near->launch();
  std::unique_ptr<FarGpu> far =
      gpu_lists ? std::make_unique<FarGpu>(tgt, b.src, b.self, gl, b.shifts, p, near.get())
                : std::make_unique<FarGpu>(tgt, b.src, b.self, lists, b.shifts, p, near.get());
  far->set_strengths(as);
  far->upward();
  far->downward(near.get(), periodic, near_image_range(b.mac.theta), periodic ? images : 0);
  far->get(u, grad);
  near->wait();
}

class TraverseGpuEval : public ::testing::TestWithParam<EvalCase> {};

TEST_P(TraverseGpuEval, SameBitsAsTheHostLists) {
  VH_NEED_GPU();
  const EvalCase& e = GetParam();
  const TravCase c{"eval", e.periodic, e.separate, true, 12000, 32, 0.6, 266};
  const Built b = build(c, 1e-6);
  // The same alpha for the same input points (build() draws the positions; alpha drawn here).
  std::mt19937_64 gen(3);
  std::uniform_real_distribution<double> U(-0.5, 0.5);
  std::vector<Vec3> alpha(b.src.x.size());
  for (std::size_t i = 0; i < alpha.size(); ++i)
    for (int d = 0; d < 3; ++d) alpha[i][d] = U(gen);
  std::vector<Vec3> u_host, u_gpu;
  std::vector<Mat3> g_host, g_gpu;
  evaluate(b, alpha, e.periodic, e.prec, false, u_host, g_host);
  evaluate(b, alpha, e.periodic, e.prec, true, u_gpu, g_gpu);
  ASSERT_EQ(u_gpu.size(), u_host.size());
  double norm = 0;
  for (const auto& v : u_host)
    for (double w : v) norm += w * w;
  EXPECT_GT(norm, 0.0);
  VH_EXPECT_SAME(u_gpu, u_host, "u");
  VH_EXPECT_SAME(g_gpu, g_host, "grad");
}

INSTANTIATE_TEST_SUITE_P(Cases, TraverseGpuEval,
                         ::testing::Values(EvalCase{true, false, GpuPrecision::fp32},
                                           EvalCase{false, true, GpuPrecision::fp64}),
                         [](const ::testing::TestParamInfo<EvalCase>& i) {
                           return std::string(i.param.periodic ? "periodic" : "free") +
                                  (i.param.separate ? "_separate" : "_self") +
                                  (i.param.prec == GpuPrecision::fp64 ? "_fp64" : "_fp32");
                         });

// Timing at 2^24 lattice particles (the settings of fmm_bench --turbulent at tolerance 1e-4:
// periodic, theta 0.6, ncrit 64, p2p_max_pairs (p + 1)^4 / 55 = 266 at p = 10, sigma = h):
// build_lists + the host conversions against build_lists_gpu, and the arrays compared.  Only
// with VH_TRAVERSE_BENCH=1 (seconds of host work); prints, never asserts on time.
TEST(TraverseGpuTiming, Lattice256) {
  VH_NEED_GPU();
  const char* on = std::getenv("VH_TRAVERSE_BENCH");
  if (!on || *on != '1') GTEST_SKIP() << "set VH_TRAVERSE_BENCH=1";
  using clk = std::chrono::steady_clock;
  auto sec = [](clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  const int m = 256;
  const double h = kBoxLength / m;
  std::vector<Vec3> x(static_cast<std::size_t>(m) * m * m);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j)
      for (int k = 0; k < m; ++k) x[(static_cast<std::size_t>(i) * m + j) * m + k] = {i * h, j * h, k * h};
  const std::vector<double> sigma(x.size(), h);
  const double half = 0.5 * kBoxLength;
  const Tree tree = build_tree(x, sigma, Vec3{half, half, half}, half, 64, TreeBuild{true, false});
  const double theta = 0.6;
  const std::vector<Vec3> shifts = near_image_shifts(near_image_range(theta));
  const Acceptance mac{theta, rcut_per_sigma(1e-4), 266};

  const auto c0 = clk::now();
  const Lists lists = build_lists(tree, tree, shifts, mac);
  const auto c1 = clk::now();
  const M2LArrays m2l = m2l_arrays(tree, lists);
  const auto c2 = clk::now();
  const P2PLists fl = flatten_p2p_lists(tree, tree, lists, shifts, true);
  const auto c3 = clk::now();
  const P2PArrays p2p = p2p_arrays(fl);
  const auto c4 = clk::now();
  std::printf("[ 2^24 lattice ] CPU: build_lists %.3f s, M2L arrays %.3f s, flatten_p2p_lists %.3f s, P2P tasks and "
              "entries %.3f s; total %.3f s (uploads not counted)\n",
              sec(c0, c1), sec(c1, c2), sec(c2, c3), sec(c3, c4), sec(c0, c4));
  build_lists_gpu(tree, tree, true, shifts, mac);  // warm-up (context, CUB kernels)
  std::vector<double> t;
  GpuLists g;
  for (int r = 0; r < 3; ++r) {
    const auto g0 = clk::now();
    g = build_lists_gpu(tree, tree, true, shifts, mac);
    t.push_back(sec(g0, clk::now()));
  }
  std::sort(t.begin(), t.end());
  std::printf("[ 2^24 lattice ] GPU: build_lists_gpu %.4f s (median of 3; min %.4f, max %.4f; cells up included); "
              "m2l %lld entries, p2p %lld entries, %lld pairs\n",
              t[1], t[0], t[2], g.n_m2l, g.n_p2p_entries, g.p2p_pairs);
  const M2LArrays gm = g.m2l_to_host();
  const P2PArrays gp = g.p2p_to_host();
  VH_EXPECT_SAME(gm.targets, m2l.targets, "m2l targets");
  VH_EXPECT_SAME(gm.goffset, m2l.goffset, "m2l goffset");
  VH_EXPECT_SAME(gm.groups, m2l.groups, "m2l groups");
  VH_EXPECT_SAME(gm.entries, m2l.entries, "m2l entries");
  VH_EXPECT_SAME(gp.tasks, p2p.tasks, "p2p tasks");
  VH_EXPECT_SAME(gp.entries, p2p.entries, "p2p entries");
  EXPECT_EQ(g.p2p_pairs, fl.pairs());
}

}  // namespace
}  // namespace vh::fmm
