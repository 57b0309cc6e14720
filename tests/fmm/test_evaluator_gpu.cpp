// The resident GPU evaluation (fmm/evaluator.h) against the host API with use_gpu (fmm/fmm.h),
// which runs the same kernels on trees split on the host and lists built from them: the results
// must be the same bits (evaluator.h), so every comparison here is exact and a failure names the
// stage (the device tree against the host tree cell by cell, the periodic terms against the
// host's, then whole evaluations) and the first particle and component that differ.  Also: the
// same_positions reuse, a change of positions, the overlap modes, fixed targets, and bad inputs
// (the host API's messages).  Skipped without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/device_buffer.h"
#include "common.h"
#include "spectral_reference.h"
#include "fmm/evaluator.h"
#include "fmm/expansions.h"
#include "fmm/far_gpu.h"
#include "fmm/lattice_leaves.h"
#include "fmm/level_stencil.h"
#include "fmm/morton.h"
#include "fmm/fmm.h"
#include "fmm/p2p_gpu.h"
#include "fmm/particles_gpu.h"
#include "fmm/periodic.h"
#include "fmm/tree.h"
#include "fmm/traverse.h"
#include "fmm/tree_gpu.h"

namespace vh::fmm {
namespace {

using testing::Blobs;
using testing::random_blobs;

// A device copy of a host array of doubles (Vec3, Mat3 or double).
template <class T> DeviceArray<double> device_copy(const std::vector<T>& v) {
  static_assert(sizeof(T) % sizeof(double) == 0, "arrays of doubles");
  DeviceArray<double> d;
  d.upload(reinterpret_cast<const double*>(v.data()), v.size() * sizeof(T) / sizeof(double));
  return d;
}

// n doubles of device memory, all NaN: what the evaluator does not write shows.
DeviceArray<double> device_nan(std::size_t n) {
  DeviceArray<double> d(n);
  EXPECT_EQ(cudaMemset(d.data(), 0xff, d.bytes()), cudaSuccess);
  return d;
}

// The host copy of a device array of doubles as Vec3, Mat3 or double.
template <class T> std::vector<T> host_copy(const DeviceArray<double>& d) {
  std::vector<T> v(d.bytes() / sizeof(T));
  d.download(reinterpret_cast<double*>(v.data()), d.size());
  return v;
}

Blobs lattice(int n, double jitter, unsigned seed) { return testing::lattice_blobs(n, jitter, seed); }

// The first (particle, component) where two arrays differ in any bit, for the failure message.
template <class T> std::string first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
  constexpr int k = sizeof(T) / sizeof(double);
  long long count = 0, first = -1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double* x = reinterpret_cast<const double*>(&a[i]);
    const double* y = reinterpret_cast<const double*>(&b[i]);
    for (int c = 0; c < k; ++c)
      if (std::memcmp(x + c, y + c, sizeof(double)) != 0) {
        if (first < 0) first = static_cast<long long>(i) * k + c;
        ++count;
      }
  }
  if (first < 0) return "";
  char buf[200];
  const double* x = reinterpret_cast<const double*>(a.data());
  const double* y = reinterpret_cast<const double*>(b.data());
  std::snprintf(buf, sizeof buf, "%lld values differ; first: particle %lld component %lld: %.17g vs %.17g", count,
                first / k, first % k, x[first], y[first]);
  return buf;
}

#define VH_EXPECT_BITS(a, b, what)                          \
  do {                                                      \
    const std::string d_ = first_difference(a, b);          \
    EXPECT_TRUE(d_.empty()) << (what) << ": " << d_;        \
  } while (0)

// The host API on the GPU.
void host_api(const Params& prm, const Blobs& b, const std::vector<Vec3>* targets, std::vector<Vec3>& u,
              std::vector<Mat3>& g) {
  Params p = prm;
  p.use_gpu = true;
  if (targets) evaluate_at(p, b.x, b.alpha, b.sigma, *targets, u, g);
  else evaluate_self(p, b.x, b.alpha, b.sigma, u, g);
}

// The evaluator on device copies of the same inputs.
Timings resident(GpuEvaluator& ev, const Blobs& b, const std::vector<Vec3>* targets, std::vector<Vec3>& u,
                 std::vector<Mat3>& g, bool same = false) {
  const DeviceArray<double> x = device_copy(b.x), a = device_copy(b.alpha), s = device_copy(b.sigma);
  const std::size_t m = targets ? targets->size() : b.x.size();
  const DeviceArray<double> du = device_nan(3 * m), dg = device_nan(9 * m);
  Timings t;
  if (targets) {
    const DeviceArray<double> dt = device_copy(*targets);
    t = ev.evaluate_at(x.data(), a.data(), s.data(), b.x.size(), dt.data(), m, du.data(), dg.data(), same);
  } else {
    t = ev.evaluate_self(x.data(), a.data(), s.data(), b.x.size(), du.data(), dg.data(), same);
  }
  u = host_copy<Vec3>(du);
  g = host_copy<Mat3>(dg);
  return t;
}

// ------------------------------------------------------------------------- stages
// The device tree (fmm/tree_gpu.h) against build_tree: every cell field, the ranks, leaves and
// level lists.
void expect_same_tree(const std::vector<Vec3>& x, const std::vector<double>& sigma, bool periodic, int ncrit,
                      const char* what) {
  Vec3 centre;
  double half;
  if (periodic) {
    half = 0.5 * kBoxLength;
    centre = {half, half, half};
  } else {
    bounding_cube(x, nullptr, centre, half);
  }
  const Tree host = build_tree(x, sigma, centre, half, ncrit, TreeBuild{periodic, false});
  const DeviceArray<double> dx = device_copy(x), ds = device_copy(sigma);
  SortedSourcesGpu pts;
  pts.sort(dx.data(), sigma.empty() ? nullptr : ds.data(), nullptr, static_cast<int>(x.size()), centre, half, periodic);
  DeviceTree dt;
  dt.build(pts, ncrit);
  const std::vector<Cell> dev = dt.download_cells();
  ASSERT_EQ(dev.size(), host.cells.size()) << what << ": cell count";
  EXPECT_EQ(dt.levels(), static_cast<int>(host.levels.size())) << what;
  for (std::size_t c = 0; c < dev.size(); ++c) {
    const Cell &a = dev[c], &h = host.cells[c];
    const bool same = a.center == h.center && a.half == h.half && a.radius == h.radius && a.bmin == h.bmin &&
                      a.bmax == h.bmax && a.sigma_max == h.sigma_max && a.begin == h.begin && a.end == h.end &&
                      a.child == h.child && a.nchild == h.nchild && a.level == h.level && a.parent == h.parent;
    ASSERT_TRUE(same) << what << ": cell " << c << " (level " << h.level << ", points [" << h.begin << ", "
                      << h.end << ")) differs: device radius " << a.radius << " host " << h.radius
                      << ", device range [" << a.begin << ", " << a.end << "), children " << a.nchild << " vs "
                      << h.nchild << ", sigma_max " << a.sigma_max << " vs " << h.sigma_max;
  }
  std::vector<int> perm;
  std::vector<Vec3> xs;
  std::vector<double> ss;
  pts.download_sorted(perm, xs, ss);
  EXPECT_EQ(perm, host.perm) << what << ": permutation";
  EXPECT_EQ(xs, host.x) << what << ": sorted, wrapped positions";
  std::printf("[ device tree %s ] %zu points, %zu cells, %d levels, %d leaves\n", what, x.size(), dev.size(),
              dt.levels(), dt.n_leaves());
}

TEST(EvaluatorGpuStages, DeviceTreeEqualsHostTree) {
  VH_NEED_GPU();
  std::vector<Vec3> x;
  std::vector<double> s;
  testing::clustered(30000, 5, -0.1 * kBoxLength, 1.2 * kBoxLength, x, s);  // deep, uneven; some outside the box
  expect_same_tree(x, s, true, 16, "clustered periodic ncrit 16");
  expect_same_tree(x, s, false, 8, "clustered free ncrit 8");
  expect_same_tree(x, {}, false, 64, "clustered free targets ncrit 64");
  const Blobs l = lattice(16, 0, 3);  // points on leaf faces
  expect_same_tree(l.x, l.sigma, true, 64, "lattice periodic ncrit 64");
  expect_same_tree(l.x, l.sigma, true, 4096, "lattice periodic, one leaf");
  const Blobs one = random_blobs(1, 0.0, 1.0, 9, false);
  expect_same_tree(one.x, one.sigma, false, 8, "one point");
}

// The rows of M and L that a rank keeps (UniformFar::keep_rows' kernels) are the host rule's
// (fmm/expansion_rows.h), on the complete tree of a 32³ lattice (levels 0 .. 4) with windows of
// every first plane and count, across the box's top face too, from each level on.
TEST(EvaluatorGpuStages, ExpansionRowsAreTheHostRule) {
  VH_NEED_GPU();
  const Blobs l = lattice(32, 0, 3);
  const double half = kBoxLength / 2;
  const Tree t = build_tree(l.x, l.sigma, {half, half, half}, half, 8, TreeBuild{true, false});
  ASSERT_EQ(t.levels.size(), 5u);
  std::vector<int> level, plane;
  for (const Cell& c : t.cells) {
    level.push_back(c.level);
    plane.push_back(cell_plane(c.center[2], c.level, 0.0, kBoxLength));
  }
  std::mt19937 gen(11);
  for (int from = 2; from <= 5; ++from)
    for (int trial = 0; trial < 8; ++trial) {
      std::vector<PlaneWindow> w;
      for (int v = 0; v <= 4; ++v) {
        const int n = 1 << v;
        w.push_back({static_cast<int>(gen() % n), 1 + static_cast<int>(gen() % n)});
      }
      std::vector<int> host, dev;
      const int nh = expansion_rows(level, plane, from, w, host);
      const int nd = expansion_rows_gpu(t.cells, 0.0, kBoxLength, from, w, dev);
      EXPECT_EQ(nd, nh) << "from " << from << " trial " << trial;
      EXPECT_EQ(dev, host) << "from " << from << " trial " << trial;
      EXPECT_LE(nh, static_cast<int>(t.cells.size()));
    }
}

// The far lattice and the mean terms on the device: the host's operations, the host's bits.
TEST(EvaluatorGpuStages, PeriodicTermsEqualHost) {
  VH_NEED_GPU();
  for (int p : {4, 10, 17}) {
    const int nc = ncoef(p);
    std::mt19937_64 gen(p);
    std::uniform_real_distribution<double> U(-1, 1);
    std::vector<cplx> M(3 * nc), Lh(3 * nc), Ld(3 * nc);
    for (auto& v : M) v = cplx(U(gen), U(gen));
    for (int a = 0; a < 3; ++a) M[a * nc] = cplx(M[a * nc].real(), 0.0);  // M_00 is real
    for (int k = 0; k < 3 * nc; ++k) Lh[k] = Ld[k] = cplx(U(gen), U(gen));  // added to
    lattice_m2l(p, 2, 4, M.data(), Lh.data());
    lattice_m2l_gpu(p, 2, 4, M.data(), Ld.data());
    VH_EXPECT_BITS(Ld, Lh, "lattice_m2l p = " + std::to_string(p));
  }
  const Blobs b = lattice(12, 0.3, 4);
  std::vector<Vec3> xw = b.x;
  wrap_into_box(xw);
  const MeanTerms h = mean_terms(xw, b.alpha), d = mean_terms_gpu(xw, b.alpha);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(d.Q[k], h.Q[k]) << "Q[" << k << "]";
    EXPECT_EQ(d.D[k], h.D[k]) << "D[" << k << "]";
  }
}

// ------------------------------------------------------------------------- evaluations
struct EvalCase {
  const char* name;
  bool periodic;
  const char* precision;
  int kind;  // 0: lattice self, 1: jittered lattice self, 2: random free self, 3: lattice at targets,
             // 4: clustered free at targets
};

class EvaluatorGpu : public ::testing::TestWithParam<EvalCase> {};

TEST_P(EvaluatorGpu, EqualsTheHostApi) {
  VH_NEED_GPU();
  const EvalCase& c = GetParam();
  Params prm;
  prm.periodic = c.periodic;
  prm.precision = c.precision;
  prm.tolerance = 1e-4;  // theta 0.6, p 12, ncrit 128 (the lattice leaves of 64 stay whole)
  prm.ncrit = 32;        // deeper trees at these sizes: M2M/L2L over several levels
  Blobs b;
  std::vector<Vec3> t;
  switch (c.kind) {
    case 0: b = lattice(16, 0, 1); break;
    case 1: b = lattice(16, 0.5, 2); break;
    case 2: b = random_blobs(6000, -1.0, 2.0, 3, false); break;
    case 3: b = lattice(12, 0.05, 4); break;
    default: {
      testing::clustered(8000, 6, -1.0, 2.0, b.x, b.sigma);
      b.alpha = random_blobs(8000, 0.0, 1.0, 7, true).alpha;
    }
  }
  const bool at = c.kind >= 3;
  if (at) {
    // Targets: half the sources moved by a quarter spacing, and some exactly on sources.
    t.assign(b.x.begin(), b.x.begin() + b.x.size() / 2);
    for (std::size_t i = 0; i < t.size(); i += 2) t[i][0] += 0.25 * b.sigma[0];
  }
  std::vector<Vec3> uh, ud;
  std::vector<Mat3> gh, gd;
  host_api(prm, b, at ? &t : nullptr, uh, gh);
  GpuEvaluator ev(prm);
  const Timings tm = resident(ev, b, at ? &t : nullptr, ud, gd);
  VH_EXPECT_BITS(ud, uh, std::string(c.name) + " u");
  VH_EXPECT_BITS(gd, gh, std::string(c.name) + " grad");
  double norm = 0;
  for (const auto& v : uh) norm += v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
  EXPECT_GT(norm, 0.0);
  std::printf("[ %s ] N %zu, M2L %lld, P2P pairs %lld; tree %.4f lists %.4f | p2m/m2m %.4f m2l %.4f l2l/l2p %.4f "
              "p2p %.4f, GPU wall %.4f s\n",
              c.name, b.x.size(), tm.n_m2l, tm.n_p2p_pairs, tm.tree, tm.traverse, tm.p2m_m2m, tm.m2l, tm.l2l_l2p,
              tm.p2p, tm.gpu_wall);
  // The overlap modes change nothing; fixed targets give evaluate_at's bits.
  for (auto mode : {GpuEvaluator::Overlap::serial, GpuEvaluator::Overlap::split}) {
    ev.set_overlap(mode, 2);
    std::vector<Vec3> u2;
    std::vector<Mat3> g2;
    resident(ev, b, at ? &t : nullptr, u2, g2);
    const std::string m = mode == GpuEvaluator::Overlap::serial ? " serial" : " split";
    VH_EXPECT_BITS(u2, uh, std::string(c.name) + m + " u");
    VH_EXPECT_BITS(g2, gh, std::string(c.name) + m + " grad");
  }
  if (at && c.periodic) {
    const DeviceArray<double> dt = device_copy(t), x = device_copy(b.x), a = device_copy(b.alpha),
                              s = device_copy(b.sigma), du = device_nan(3 * t.size()), dg = device_nan(9 * t.size());
    ev.fix_targets(dt.data(), t.size());
    ev.evaluate_at_fixed(x.data(), a.data(), s.data(), b.x.size(), du.data(), dg.data());
    VH_EXPECT_BITS(host_copy<Vec3>(du), uh, std::string(c.name) + " fixed targets u");
    VH_EXPECT_BITS(host_copy<Mat3>(dg), gh, std::string(c.name) + " fixed targets grad");
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, EvaluatorGpu,
                         ::testing::Values(EvalCase{"lattice_single", true, "single", 0},
                                           EvalCase{"jittered_single", true, "single", 1},
                                           EvalCase{"jittered_double", true, "double", 1},
                                           EvalCase{"free_random_double", false, "double", 2},
                                           EvalCase{"lattice_at_targets", true, "single", 3},
                                           EvalCase{"free_clustered_at_targets", false, "double", 4}),
                         [](const ::testing::TestParamInfo<EvalCase>& i) { return std::string(i.param.name); });

// same_positions: the trees and lists are reused; the result equals a fresh evaluation with the
// new strengths, and repeating the first call gives its bits again.
TEST(EvaluatorGpuReuse, SamePositionsNewStrengths) {
  VH_NEED_GPU();
  Params prm;
  prm.periodic = true;
  prm.tolerance = 1e-4;
  Blobs b = lattice(16, 0.2, 8);
  GpuEvaluator ev(prm);
  std::vector<Vec3> u1, u2, u3, uh;
  std::vector<Mat3> g1, g2, g3, gh;
  resident(ev, b, nullptr, u1, g1);
  const GpuEvaluator::Memory m1 = ev.memory();
  const Timings t2 = resident(ev, b, nullptr, u2, g2, true);
  // The evaluator's pool keeps what its first call took: a call on the same positions reaches
  // the driver for nothing more (base/device_buffer.h), and what is in use fits what is kept.
  const GpuEvaluator::Memory m2 = ev.memory();
  EXPECT_GT(m1.reserved, 0u);
  EXPECT_EQ(m2.reserved, m1.reserved);
  EXPECT_LE(m2.in_use, m2.reserved);
  VH_EXPECT_BITS(u2, u1, "second call, same positions, u");
  VH_EXPECT_BITS(g2, g1, "second call, same positions, grad");
  EXPECT_EQ(t2.traverse, 0.0) << "the lists were rebuilt";
  for (auto& a : b.alpha) a = {-a[1], 0.5 * a[0], a[2]};
  resident(ev, b, nullptr, u3, g3, true);
  host_api(prm, b, nullptr, uh, gh);
  VH_EXPECT_BITS(u3, uh, "same positions, new strengths, u");
  VH_EXPECT_BITS(g3, gh, "same positions, new strengths, grad");
}

// New positions after a call: a fresh evaluator's bits; same_positions with moved particles is
// refused, naming the first one.
TEST(EvaluatorGpuReuse, NewPositions) {
  VH_NEED_GPU();
  Params prm;
  prm.periodic = true;
  prm.tolerance = 1e-4;
  const Blobs b1 = lattice(16, 0.2, 9);
  Blobs b2 = b1;
  for (std::size_t i = 0; i < b2.x.size(); ++i) b2.x[i][1] += 0.3 * b2.sigma[i] * std::sin(double(i));
  GpuEvaluator ev(prm), fresh(prm);
  std::vector<Vec3> u, uf;
  std::vector<Mat3> g, gf;
  resident(ev, b1, nullptr, u, g);
  resident(ev, b2, nullptr, u, g);
  resident(fresh, b2, nullptr, uf, gf);
  VH_EXPECT_BITS(u, uf, "after new positions, u");
  VH_EXPECT_BITS(g, gf, "after new positions, grad");
  Blobs b3 = b2;
  b3.x[123][2] += 1e-9;
  try {
    resident(ev, b3, nullptr, u, g, true);
    ADD_FAILURE() << "same_positions with a moved particle was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("source 123 "), std::string::npos) << e.what();
  }
}

// Repeatable: the vortex solver's evaluation (periodic, fmm.tolerance 1e-5, the lattice at
// σ = h, turbulent-like strengths) gives the same bits in a fresh evaluator as in one that has
// evaluated before, in either working precision and either M2L: a restart (a fresh evaluator on
// the checkpoint's particles) then continues the run it came from bit for bit. The checksum
// printed lets two processes be compared as well.
TEST(EvaluatorGpuRepeat, AFreshEvaluatorGivesTheSameBits) {
  VH_NEED_GPU();
  const Blobs b = lattice(32, 0, 10);
  for (const char* precision : {"auto", "double"})
    for (const char* m2l : {"fft", "lists"}) {
      Params prm;
      prm.periodic = true;
      prm.tolerance = 1e-5;
      prm.precision = precision;
      prm.m2l = m2l;
      const std::string what = std::string("precision ") + precision + ", m2l " + m2l;
      GpuEvaluator used(prm), fresh(prm);
      std::vector<Vec3> u1, u2, uf;
      std::vector<Mat3> g1, g2, gf;
      resident(used, b, nullptr, u1, g1);
      resident(used, b, nullptr, u2, g2);
      resident(fresh, b, nullptr, uf, gf);
      VH_EXPECT_BITS(u2, u1, what + ", second call, u");
      VH_EXPECT_BITS(g2, g1, what + ", second call, grad");
      VH_EXPECT_BITS(uf, u1, what + ", fresh evaluator, u");
      VH_EXPECT_BITS(gf, g1, what + ", fresh evaluator, grad");
      std::uint64_t h = 1469598103934665603ull;  // FNV-1a of the bytes of u, then of grad
      const auto hash = [&h](const void* p, std::size_t bytes) {
        for (std::size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
      };
      hash(u1.data(), u1.size() * sizeof(Vec3));
      hash(g1.data(), g1.size() * sizeof(Mat3));
      std::printf("[ repeat %s ] checksum %016llx\n", what.c_str(), static_cast<unsigned long long>(h));
    }
}

// Bad inputs: the host API's exceptions and messages.
TEST(EvaluatorGpuInputs, SameErrorsAsTheHostApi) {
  VH_NEED_GPU();
  Params prm;
  prm.periodic = true;
  const Blobs good = lattice(8, 0.2, 10);
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return e.what();
    } catch (const std::exception& e) {
      return std::string("other exception: ") + e.what();
    }
    return "no exception";
  };
  GpuEvaluator ev(prm);
  std::vector<Vec3> u;
  std::vector<Mat3> g;
  std::vector<Blobs> bad(5, good);
  bad[0].x[77][1] = std::nan("");
  bad[1].alpha[5][0] = INFINITY;
  bad[2].sigma[300] = 0;
  bad[3].sigma[12] = -1;
  bad[4].x[40][0] = INFINITY;
  bad[4].alpha[20][2] = std::nan("");  // the lower index wins
  for (std::size_t k = 0; k < bad.size(); ++k) {
    const std::string h = message([&] { host_api(prm, bad[k], nullptr, u, g); });
    const std::string d = message([&] { resident(ev, bad[k], nullptr, u, g); });
    EXPECT_EQ(d, h) << "case " << k;
    EXPECT_EQ(h.rfind("fmm: ", 0), 0u) << h;
  }
  std::vector<Vec3> t(good.x.begin(), good.x.begin() + 10);
  t[3][2] = std::nan("");
  const std::string h = message([&] { host_api(prm, good, &t, u, g); });
  const std::string d = message([&] { resident(ev, good, &t, u, g); });
  EXPECT_EQ(d, h) << "bad target";
  // A core radius too large for the periodic box at this tolerance (r0 = 4 boxes at theta 0.4
  // against sqrt(2) rho_tol sigma = 7.8 sigma at 1e-6).
  Blobs wide = good;
  wide.sigma[0] = 5.0;
  const std::string hw = message([&] { host_api(prm, wide, nullptr, u, g); });
  EXPECT_EQ(message([&] { resident(ev, wide, nullptr, u, g); }), hw);
  EXPECT_NE(hw.find("sigma too large"), std::string::npos) << hw;
  // Empty sources: zero field at the targets.
  Blobs none;
  std::vector<Vec3> uz;
  std::vector<Mat3> gz;
  t[3][2] = 0.5;
  resident(ev, none, &t, uz, gz);
  ASSERT_EQ(uz.size(), t.size());
  for (const auto& v : uz) EXPECT_EQ(v, (Vec3{0, 0, 0}));
}

// ------------------------------------------------------------------------- uniform levels
// fmm.m2l fft (fmm/uniform_gpu.h): a complete tree by its uniform levels, the M2L of levels 2
// and below by FFTs.  Against the exact periodic sum on a 32^3 lattice (levels 0..3, 64 blobs a
// leaf) and against the traversal's lists; the P2P pairs counted (each leaf with its near
// leaves, every image once); jittered blobs against a tight reference; and a tree that is not
// complete takes the lists, bit for bit.
Params uniform_params(const std::string& m2l) {
  Params prm;
  prm.periodic = true;
  prm.tolerance = 1e-4;
  prm.p = 10;
  prm.theta = 0.6;
  prm.ncrit = 128;
  prm.m2l = m2l;
  return prm;
}

// The translations of the FFT levels 2 .. L at theta 0.6, rcut and slack in cells of level L.
long long uniform_translations(int L, double rcut, double slack = 0) {
  long long m2l = 0;
  for (int level = 2; level <= L; ++level) {
    const double f = 1.0 / (1 << (L - level));
    m2l += uniform_stencil(level, 0.6, rcut * f, slack * f).translations();
  }
  return m2l;
}

// The near stencil's list entries summed over the 8^L leaves of level L once the source ranges
// that follow one another are merged: the near leaves of one image whose Morton indices follow
// one another (their particles are consecutive) make one entry.
long long merged_entries(int L, const std::vector<std::array<int, 3>>& near) {
  const int n = 1 << L;
  long long entries = 0;
  for (int i = 0; i < n * n * n; ++i) {
    const int c[3] = {i % n, i / n % n, i / n / n};
    std::vector<std::pair<int, std::uint64_t>> keys;  // (image, Morton index of the source leaf)
    for (const auto& t : near) {
      int image = 0;
      std::uint64_t m = 0;
      for (int d = 0; d < 3; ++d) {
        const int q = c[d] + t[d], j = ((q % n) + n) % n;
        image = 9 * image + (q - j) / n + 4;
        m |= morton::spread(static_cast<std::uint64_t>(j)) << d;
      }
      keys.push_back({image, m});
    }
    std::sort(keys.begin(), keys.end());
    for (std::size_t k = 0; k < keys.size(); ++k)
      if (k == 0 || keys[k].first != keys[k - 1].first || keys[k].second != keys[k - 1].second + 1) ++entries;
  }
  return entries;
}

// n^3 blobs on the lattice h (i, j, k) (on the cells' faces): 64 a leaf at n = 32, 27 at n = 24
// (the vortex solver's refine 1.5, where face points would leave some level-2 cells at 125 of
// 216 without the uniform levels' min_level split).  Levels 0..3 either way.
// n^3 blobs of a random solenoidal field on the lattice (σ = h), evaluated by the uniform levels
// and by the lists at ncrit: both results, their counters and their errors against the exact
// periodic sum (u only: the reference's gradient holds each blob's own term, which the FMM
// leaves out).
struct TwoPaths {
  Blobs b;
  Timings tf, tl;
  std::vector<Vec3> uf, ul;
  std::vector<Mat3> gf, gl;
  double ef = 0, el = 0;
};
TwoPaths lattice_both_paths(int n, int ncrit) {
  TwoPaths r;
  const double h = kBoxLength / n;
  testing::lattice_blobs(n, testing::random_solenoidal(n, 5), r.b.x, r.b.alpha);
  r.b.sigma.assign(r.b.x.size(), h);
  std::vector<Vec3> u_ref;
  std::vector<Mat3> g_ref;
  testing::spectral_velocity(n, h, r.b.alpha, u_ref, g_ref);
  Params pf = uniform_params("fft"), pl = uniform_params("lists");
  pf.ncrit = pl.ncrit = ncrit;
  GpuEvaluator fft(pf), lists(pl);
  r.tf = resident(fft, r.b, nullptr, r.uf, r.gf);
  r.tl = resident(lists, r.b, nullptr, r.ul, r.gl);
  r.ef = testing::rel_l2(r.uf, u_ref);
  r.el = testing::rel_l2(r.ul, u_ref);
  return r;
}

void expect_uniform_lattice(int n) {
  const double h = kBoxLength / n;
  const TwoPaths r = lattice_both_paths(n, 128);
  std::printf(
      "[ uniform %d^3 ] err u %.3e (lists %.3e), grad against the lists' %.3e; M2L %lld (lists %lld), "
      "pairs %lld (lists %lld), P2P entries a leaf %.2f (lists %.2f)\n",
      n, r.ef, r.el, testing::rel_l2(r.gf, r.gl), r.tf.n_m2l, r.tl.n_m2l, r.tf.n_p2p_pairs, r.tl.n_p2p_pairs,
      r.tf.n_p2p_entries / 512.0, r.tl.n_p2p_entries / 512.0);
  EXPECT_LE(r.ef, 1e-4);      // the tolerance
  EXPECT_LE(r.ef, 2 * r.el);  // the full-cell test is the stricter one: no worse than the lists
  EXPECT_LE(testing::rel_l2(r.uf, r.ul), 1e-4);
  EXPECT_LE(testing::rel_l2(r.gf, r.gl), 1e-3);
  // The path taken: the stencils' translations (and a few of levels 0, 1 by the lists).
  const double rcut = rcut_per_sigma(1e-4) * h / (kBoxLength / 8);  // leaf sides
  const int m = n / 8;
  EXPECT_GT(r.tf.n_m2l, uniform_translations(3, rcut, 1.0 / m));
  EXPECT_LT(r.tf.n_m2l, uniform_translations(3, rcut, 1.0 / m) + 8 * 1000);
  // Each leaf with its near leaves whole, the cut-off's gaps widened by the lattice's slack
  // (level_stencil.h: points 0 .. (m - 1) h of a leaf of side m h, slack h, 1/m of a leaf).  With
  // m^3 blobs in every leaf, the count: at n = 24 (m = 3) 93 near leaves where whole cells take 117.
  const long long near = static_cast<long long>(near_stencil(0.6, rcut, 1.0 / m).size());
  EXPECT_EQ(near, 93);
  EXPECT_EQ(r.tf.n_p2p_pairs, static_cast<long long>(r.b.x.size()) * m * m * m * near);
  // Those of a Morton run under one image as one entry (a third of the 93, as in the lists).
  EXPECT_EQ(r.tf.n_p2p_entries, merged_entries(3, near_stencil(0.6, rcut, 1.0 / m)));
  EXPECT_LT(r.tf.n_p2p_entries, 512 * near / 2);
}

TEST(EvaluatorGpuUniform, ALatticeMatchesTheExactSumAndTheLists) {
  VH_NEED_GPU();
  expect_uniform_lattice(32);
  expect_uniform_lattice(24);
}

// A lattice whose points do not fall evenly into the leaves (the weak-scaling lattices 322³ and
// 406³ at ncrit 128, here 42³ at ncrit 150): level 3's cells hold 5 or 6 blobs a side, 125 to 216
// (mean 144.7), some more than ncrit. They stay leaves (fmm::uniform_leaf_limit), so the tree is
// complete and the uniform levels take it: within the tolerance of the exact sum (where the
// lists, at these explicit p, theta and ncrit, missed it: 1.7e-4 before this lattice took the
// uniform levels), each leaf with the blobs of its near leaves (the stencil at the lattice's
// slack) counted exactly.
TEST(EvaluatorGpuUniform, ALatticeUnevenInItsLeavesTakesTheUniformLevels) {
  VH_NEED_GPU();
  const int n = 42, leaves = 8;
  const double h = kBoxLength / n, side = kBoxLength / leaves;
  const TwoPaths r = lattice_both_paths(n, 150);
  std::printf("[ uniform uneven %d^3 ] err u %.3e (lists %.3e), grad against the lists' %.3e; M2L %lld (lists %lld), "
              "pairs %lld (lists %lld)\n",
              n, r.ef, r.el, testing::rel_l2(r.gf, r.gl), r.tf.n_m2l, r.tl.n_m2l, r.tf.n_p2p_pairs, r.tl.n_p2p_pairs);
  EXPECT_LE(r.ef, 1e-4);
  EXPECT_LE(r.ef, r.el);
  EXPECT_LE(testing::rel_l2(r.gf, r.gl), 1e-3);
  // The lattice along one axis, in integers: point i lies i·leaves/n leaves from the box's
  // face, in leaf ⌊i·leaves/n⌋ (a point on a face in the leaf above). Each leaf's blobs, and the
  // slack: the smallest low-side margin plus the smallest high-side margin, in leaves.
  std::vector<long long> count(leaves, 0);
  int lo = n, hi = n;  // margins in units of 1/n leaf
  for (int i = 0; i < n; ++i) {
    const int c = i * leaves / n;
    ++count[c];
    lo = std::min(lo, i * leaves - c * n);
    hi = std::min(hi, (c + 1) * n - i * leaves);
  }
  const double slack = static_cast<double>(lo + hi) / n;
  const double rcut = rcut_per_sigma(1e-4) * h / side;  // leaf sides
  const std::vector<std::array<int, 3>> near = near_stencil(0.6, rcut, slack);
  long long pairs = 0;
  for (int c = 0; c < leaves * leaves * leaves; ++c) {
    const int cx = c % leaves, cy = c / leaves % leaves, cz = c / (leaves * leaves);
    long long sources = 0;
    for (const auto& t : near)
      sources += count[(cx + t[0] + leaves) % leaves] * count[(cy + t[1] + leaves) % leaves] *
                 count[(cz + t[2] + leaves) % leaves];
    pairs += count[cx] * count[cy] * count[cz] * sources;
  }
  EXPECT_EQ(r.tf.n_p2p_pairs, pairs);
  EXPECT_GT(r.tf.n_m2l, uniform_translations(3, rcut, slack));
  EXPECT_LT(r.tf.n_m2l, uniform_translations(3, rcut, slack) + 8 * 1000);
}

// evaluate_own (the vortex solver on R GPUs: every rank's blobs, u and ∇u at its own z-slab):
// each level's FFT M2L takes only the window of parent planes above the rank's leaves
// (uniform_gpu.h). On a 48^3 lattice at ncrit 27 (level 4: leaves of 3^3 blobs, m = 8 parent
// planes a side) the ranks' rows equal evaluate_self's to round-off for R = 1 .. 5 (uneven at
// 5: 9/10/9/10/10 of the 48 planes), with the slabs turned by two planes so that rank 0's wraps
// around the box, and level 4's translations fall to the window's share where the window with
// the stencil's reach is narrower than the level, and the L2L forms only the locals of the cells
// over the rank's planes (a local reaches its targets only down the cells that hold them). One
// GPU; no ranks needed: share_upward(nullptr, first, count).
TEST(EvaluatorGpuUniform, EvaluateOwnTakesTheWindowOfItsRanksPlanes) {
  VH_NEED_GPU();
  const int n = 48, turn = 2;
  const double h = kBoxLength / n;
  Blobs b;
  testing::lattice_blobs(n, testing::random_solenoidal(n, 11), b.x, b.alpha);
  for (std::size_t i = 0; i < b.x.size(); ++i) {  // x and z swapped: z the slowest in input order
    std::swap(b.x[i][0], b.x[i][2]);
    std::swap(b.alpha[i][0], b.alpha[i][2]);
  }
  b.sigma.assign(b.x.size(), h);
  const std::size_t plane = static_cast<std::size_t>(n) * n;
  std::rotate(b.x.begin(), b.x.end() - turn * plane, b.x.end());
  std::rotate(b.alpha.begin(), b.alpha.end() - turn * plane, b.alpha.end());
  Params prm = uniform_params("fft");
  prm.ncrit = 27;
  GpuEvaluator whole(prm);
  std::vector<Vec3> u;
  std::vector<Mat3> g;
  const Timings ts = resident(whole, b, nullptr, u, g);
  const DeviceArray<double> x = device_copy(b.x), a = device_copy(b.alpha), sg = device_copy(b.sigma);
  double umax = 0, gmax = 0;
  for (std::size_t i = 0; i < u.size(); ++i)
    for (int d = 0; d < 3; ++d) {
      umax = std::max(umax, std::abs(u[i][d]));
      for (int e = 0; e < 3; ++e) gmax = std::max(gmax, std::abs(g[i][d][e]));
    }
  const double rcut = rcut_per_sigma(1e-4) * h / (kBoxLength / 16);  // leaf sides
  const LevelStencil l4 = uniform_stencil(4, 0.6, rcut, 1.0 / 3);  // slack: points 0, h, 2h of 3h
  const ParentReach reach = parent_z_reach(l4);
  int windows = 0;
  for (int R = 1; R <= 5; ++R) {
    for (int r = 0; r < R; ++r) {
      const std::size_t first = plane * static_cast<std::size_t>(n * r / R),
                        count = plane * static_cast<std::size_t>(n * (r + 1) / R - n * r / R);
      GpuEvaluator own(prm);
      own.share_upward(nullptr, first, count);
      const DeviceArray<double> du = device_nan(3 * count), dg = device_nan(9 * count);
      const Timings to = own.evaluate_own(x.data(), a.data(), sg.data(), b.x.size(), du.data(), dg.data());
      const std::vector<Vec3> uo = host_copy<Vec3>(du);
      const std::vector<Mat3> go = host_copy<Mat3>(dg);
      double eu = 0, eg = 0;
      for (std::size_t i = 0; i < count; ++i)
        for (int d = 0; d < 3; ++d) {
          eu = std::max(eu, std::abs(uo[i][d] - u[first + i][d]));
          for (int e = 0; e < 3; ++e) eg = std::max(eg, std::abs(go[i][d][e] - g[first + i][d][e]));
        }
      std::printf("[ own %d of %d ] input planes %zu..%zu (turned by %d): max |own - self| u %.2e, grad %.2e of "
                  "%.2e, %.2e; translations %lld of %lld, L2L %lld of %lld\n",
                  r, R, first / plane, (first + count) / plane - 1, turn, eu, eg, umax, gmax, to.n_m2l, ts.n_m2l,
                  to.n_l2l, ts.n_l2l);
      EXPECT_LE(eu, 1e-13 * umax) << r << " of " << R;
      EXPECT_LE(eg, 1e-13 * gmax) << r << " of " << R;
      // Levels 2 and 3 whole (their 2 and 4 parent planes hold no window), level 4 on the parent
      // planes (6 lattice planes each) of the rank's lattice planes where they and the stencil's
      // reach are fewer than its 8.
      std::set<int> parents;
      for (std::size_t k = first / plane; k < (first + count) / plane; ++k)
        parents.insert(static_cast<int>((k + n - turn) % n) / 6);
      const int nzp = static_cast<int>(parents.size());
      const bool window = nzp + reach.hi - reach.lo < 8;
      windows += window;
      const long long t4 = l4.translations();
      EXPECT_EQ(to.n_m2l, window ? ts.n_m2l - t4 + t4 / 8 * nzp : ts.n_m2l) << r << " of " << R;
      // The L2L: at level l (cells of 48 / 2^l lattice planes), the 4^l cells of each cell plane
      // over the rank's planes.
      long long l2l = 0;
      for (int l = 1; l <= 4; ++l) {
        std::set<int> zs;
        for (std::size_t k = first / plane; k < (first + count) / plane; ++k)
          zs.insert(static_cast<int>((k + n - turn) % n) / (n >> l));
        l2l += (1LL << (2 * l)) * static_cast<long long>(zs.size());
      }
      EXPECT_EQ(to.n_l2l, l2l) << r << " of " << R;
    }
  }
  EXPECT_EQ(ts.n_l2l, 8 + 64 + 512 + 4096);  // every cell below the root
  EXPECT_GE(windows, 9);  // R = 4 and 5 (12 and 9 or 10 lattice planes: 3 parent planes)
}

TEST(EvaluatorGpuUniform, JitteredBlobsMatchATightReference) {
  VH_NEED_GPU();
  // Moved by up to 0.3 h: every leaf keeps about 64 blobs, the tree stays complete, the cells'
  // tight boxes differ (the full-cell test does not read them).
  const Blobs b = lattice(32, 0.3, 11);
  Params tight = uniform_params("lists");
  tight.tolerance = 1e-8;
  tight.p = -1;
  tight.theta = -1;
  tight.ncrit = -1;
  tight.precision = "double";
  GpuEvaluator fft(uniform_params("fft")), lists(uniform_params("lists")), ref(tight);
  std::vector<Vec3> uf, ul, ur;
  std::vector<Mat3> gf, gl, gr;
  const Timings tf = resident(fft, b, nullptr, uf, gf);
  resident(lists, b, nullptr, ul, gl);
  resident(ref, b, nullptr, ur, gr);
  const double ef = testing::rel_l2(uf, ur), el = testing::rel_l2(ul, ur);
  std::printf("[ uniform jittered 32^3 ] err u %.3e (lists %.3e), grad %.3e (lists %.3e)\n", ef, el,
              testing::rel_l2(gf, gr), testing::rel_l2(gl, gr));
  EXPECT_LE(ef, 1e-4);
  EXPECT_LE(ef, 2 * el);
  EXPECT_LE(testing::rel_l2(gf, gr), 2 * testing::rel_l2(gl, gr));
  // Taken by the uniform levels.
  const double rcut = rcut_per_sigma(1e-4) * (kBoxLength / 32) / (kBoxLength / 8);
  EXPECT_GT(tf.n_m2l, uniform_translations(3, rcut));
}

TEST(EvaluatorGpuUniform, OtherTreesTakeTheLists) {
  VH_NEED_GPU();
  // Clusters: leaves on many levels.  (Uniformly random blobs give a complete tree, which the
  // uniform levels take.)
  Blobs b = random_blobs(20000, 0.0, kBoxLength, 12, true);
  testing::clustered(20000, 12, 0.0, kBoxLength, b.x, b.sigma);
  GpuEvaluator fft(uniform_params("fft")), lists(uniform_params("lists"));
  std::vector<Vec3> uf, ul;
  std::vector<Mat3> gf, gl;
  resident(fft, b, nullptr, uf, gf);
  resident(lists, b, nullptr, ul, gl);
  VH_EXPECT_BITS(uf, ul, "u");
  VH_EXPECT_BITS(gf, gl, "grad");
}

// ------------------------------------------------------------------------- lattice leaves
// The leaves of the tree of x at ncrit (periodic box) that hold points, in cell order (as the
// device tree lists them), and lattice_leaf_points of them: the host's check.
int host_lattice_leaf_points(const std::vector<Vec3>& x, const std::vector<double>& sigma, int ncrit) {
  const double half = 0.5 * kBoxLength;
  const Tree t = build_tree(x, sigma, {half, half, half}, half, ncrit, TreeBuild{true, false});
  std::vector<int> leaves;
  for (std::size_t c = 0; c < t.cells.size(); ++c)
    if (t.cells[c].leaf() && t.cells[c].end > t.cells[c].begin) leaves.push_back(static_cast<int>(c));
  return lattice_leaf_points(t.cells, leaves, t.x);
}

// Leaves that hold the same points (a lattice, 64 a leaf): the P2M and the L2P as matrix products
// give the per-leaf kernels' results to round-off (rel. 1e-13: sums of ~600 terms in another
// order), through the lists and the uniform levels, at a low and a high order; the device finds
// the leaves alike where the host's check does, and not once one point has moved by 1e-9 h.
TEST(EvaluatorGpuLatticeLeaves, MatrixProductsEqualThePerLeafKernels) {
  VH_NEED_GPU();
  const int n = 32;
  Blobs b = lattice(n, 0, 21);
  EXPECT_EQ(host_lattice_leaf_points(b.x, b.sigma, 64), 64);
  for (const char* m2l : {"lists", "fft"})
    for (int p : {4, 13}) {
      Params prm = uniform_params(m2l);
      prm.p = p;
      prm.ncrit = 64;
      prm.precision = "double";
      GpuEvaluator on(prm), off(prm);
      off.set_lattice_leaves(false);
      std::vector<Vec3> u1, u0;
      std::vector<Mat3> g1, g0;
      const Timings t1 = resident(on, b, nullptr, u1, g1), t0 = resident(off, b, nullptr, u0, g0);
      const double eu = testing::rel_l2(u1, u0), eg = testing::rel_l2(g1, g0);
      std::printf(
          "[ lattice leaves %s p %d ] u %.2e grad %.2e; p2m/m2m %.3f ms (per leaf %.3f), l2l/l2p %.3f ms (%.3f)\n", m2l,
          p, eu, eg, 1e3 * t1.p2m_m2m, 1e3 * t0.p2m_m2m, 1e3 * t1.l2l_l2p, 1e3 * t0.l2l_l2p);
      EXPECT_TRUE(t1.lattice_leaves) << m2l << " p " << p;
      EXPECT_FALSE(t0.lattice_leaves) << m2l << " p " << p;
      EXPECT_LE(eu, 1e-13) << m2l << " p " << p;
      EXPECT_LE(eg, 1e-13) << m2l << " p " << p;
      // Repeatable: the same bits again.
      std::vector<Vec3> u2;
      std::vector<Mat3> g2;
      resident(on, b, nullptr, u2, g2);
      VH_EXPECT_BITS(u2, u1, "again u");
      VH_EXPECT_BITS(g2, g1, "again grad");
    }
  b.x[1000][1] += 1e-9 * kBoxLength / n;
  EXPECT_EQ(host_lattice_leaf_points(b.x, b.sigma, 64), 0);
  GpuEvaluator ev(uniform_params("fft"));
  std::vector<Vec3> u;
  std::vector<Mat3> g;
  EXPECT_FALSE(resident(ev, b, nullptr, u, g).lattice_leaves);
}

// ------------------------------------------------------------------------- lattice levels
// The full levels of a uniform tree (far_gpu_device.h LatticeLevels), on any particles: a 64^3
// lattice jittered by 0.3 h (its leaves not alike: the per-leaf P2M and L2P), 64 a leaf, the
// M2M from level 4 to 3 and the L2L into level 4 (512 parents each; products from 512 parents
// up, below the default's 32 768 where they pay) as matrix products give the per-cell kernels'
// results to round-off (rel. 1e-13: sums of ~200 terms a product, eight octants added one after
// the other, where the kernels sum the children's terms in one loop), at a low and a high order,
// the same bits when repeated; levels of fewer parents keep the kernels (the default: none).
TEST(EvaluatorGpuLatticeLevels, MatrixProductsEqualThePerCellKernels) {
  VH_NEED_GPU();
  const Blobs b = lattice(64, 0.3, 5);
  for (int p : {4, 13}) {
    Params prm = uniform_params("fft");
    prm.p = p;
    prm.ncrit = 64;
    prm.precision = "double";
    GpuEvaluator on(prm), off(prm);
    on.set_lattice_levels_from(512);
    off.set_lattice_leaves(false);
    std::vector<Vec3> u1, u0, u2;
    std::vector<Mat3> g1, g0, g2;
    const Timings t1 = resident(on, b, nullptr, u1, g1), t0 = resident(off, b, nullptr, u0, g0);
    const double eu = testing::rel_l2(u1, u0), eg = testing::rel_l2(g1, g0);
    std::printf("[ lattice levels p %d ] %d levels; u %.2e grad %.2e; p2m/m2m %.3f ms (per cell %.3f), l2l/l2p %.3f ms "
                "(%.3f)\n",
                p, t1.lattice_levels, eu, eg, 1e3 * t1.p2m_m2m, 1e3 * t0.p2m_m2m, 1e3 * t1.l2l_l2p, 1e3 * t0.l2l_l2p);
    EXPECT_FALSE(t1.lattice_leaves) << "p " << p;
    EXPECT_EQ(t1.lattice_levels, 2) << "p " << p;
    EXPECT_EQ(t0.lattice_levels, 0) << "p " << p;
    EXPECT_LE(eu, 1e-13) << "p " << p;
    EXPECT_LE(eg, 1e-13) << "p " << p;
    resident(on, b, nullptr, u2, g2);
    VH_EXPECT_BITS(u2, u1, "again u");
    VH_EXPECT_BITS(g2, g1, "again grad");
  }
  Params prm = uniform_params("fft");
  prm.ncrit = 64;
  GpuEvaluator by_default(prm);
  std::vector<Vec3> u;
  std::vector<Mat3> g;
  EXPECT_EQ(resident(by_default, b, nullptr, u, g).lattice_levels, 0);
}

}  // namespace
}  // namespace vh::fmm
