// p2p_cpu_bench: cost of the CPU near field per pair, the vectorised fmm::p2p() against the
// previous per-pair loop (p2p_pair in double, libm erf and exp), on one thread; and the tree
// build + dual-tree traversal of a periodic lattice (the host part of every evaluation) per
// thread count.
//
//   p2p_cpu_bench [--seconds 0.3] [--tree-log2n 21] [--threads 1,2]
//
// P2P cases: a target leaf of 64 blobs against a source block of n blobs with sigma = h on a
// jittered lattice of spacing h (rho up to ~4, the regime of the FMM near field), against
// all-far sources (rho > 6.5, no erf) and all-close ones (rho < 1).  Tree cases: the
// --lattice set of fmm_bench (m^3 lattice, +-0.1 h jitter, sigma = h) at 2^tree-log2n,
// periodic, theta = 0.4, ncrit = 64, p2p_max_pairs = (p+1)^4/55 at p = 10.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/args.h"
#include "fmm/p2p.h"
#include "fmm/p2p_kernel.h"
#include "fmm/periodic.h"
#include "fmm/traverse.h"
#include "fmm/tree.h"

namespace {

using vh::fmm::Mat3;
using vh::fmm::Vec3;
using clk = std::chrono::steady_clock;

// The CPU p2p before vectorisation (per pair, p2p_pair in double).
void p2p_old(const Vec3* xt, int nt, const Vec3* xs, const Vec3* as, const double* ss, int ns, Vec3* u,
             Mat3* grad) {
  for (int i = 0; i < nt; ++i) {
    double ui[3] = {0, 0, 0};
    double gi[3][3] = {};
    for (int j = 0; j < ns; ++j) {
      const double r[3] = {xt[i][0] - xs[j][0], xt[i][1] - xs[j][1], xt[i][2] - xs[j][2]};
      vh::fmm::p2p_pair(r, as[j].data(), ss[j], ui, gi);
    }
    for (int m = 0; m < 3; ++m) {
      u[i][m] += ui[m];
      for (int k = 0; k < 3; ++k) grad[i][m][k] += gi[m][k];
    }
  }
}

template <class F>
double ns_per_pair(F&& f, long long pairs, double seconds) {
  f();  // warm-up
  int reps = 0;
  const auto t0 = clk::now();
  double el = 0;
  do {
    f();
    ++reps;
    el = std::chrono::duration<double>(clk::now() - t0).count();
  } while (el < seconds);
  return el / reps / pairs * 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0.3;
  int tree_log2n = 21;
  std::vector<int> threads = {1, omp_get_max_threads()};
  const char* usage = "usage: p2p_cpu_bench [--seconds S] [--tree-log2n K] [--threads 1,2,...]";
  try {
    for (vh::bench::Args a(argc, argv); a.next();) {
      if (a.is("--seconds")) seconds = a.real();
      else if (a.is("--tree-log2n")) tree_log2n = a.integer();
      else if (a.is("--threads")) threads = a.integers();
      else if (a.is("--help") || a.is("-h")) {
        std::printf("%s\n", usage);
        return 0;
      } else {
        a.unknown();
      }
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "p2p_cpu_bench: %s (%s)\n", e.what(), usage);
    return 2;
  }
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  std::printf("P2P, one thread: ns per pair (u and grad u)\n");
  std::printf("%-34s %7s %7s %10s %10s %8s %10s\n", "case", "n_t", "n_s", "old[ns]", "new[ns]", "speedup",
              "max rel");
  struct Case {
    const char* name;
    int ns;
    double scale;  // source block side in units of h (targets in the middle)
  };
  const double h = 0.1;
  const Case cases[] = {{"near field, leaf 64 x 64", 64, 4.0},
                        {"near field, leaf 64 x 512", 512, 8.0},
                        {"near field, 64 x 4096", 4096, 16.0},
                        {"all far (rho > 6.5)", 512, 0.0},
                        {"all close (rho < 1)", 512, -1.0}};
  for (const Case& c : cases) {
    const int nt = 64;
    std::vector<Vec3> xt(nt), xs(c.ns), as(c.ns);
    std::vector<double> ss(c.ns, h);
    for (auto& a : as) a = {U(gen) - 0.5, U(gen) - 0.5, U(gen) - 0.5};
    for (int i = 0; i < nt; ++i)
      for (int d = 0; d < 3; ++d) xt[i][d] = 4 * h * U(gen);
    for (int j = 0; j < c.ns; ++j)
      for (int d = 0; d < 3; ++d) {
        if (c.scale > 0) xs[j][d] = 2 * h + c.scale * h * (U(gen) - 0.5);
        else if (c.scale == 0) xs[j][d] = 20 * h + 4 * h * U(gen);  // >= 16 h away: rho > 11
        else xs[j][d] = 4 * h * U(gen), ss[j] = 10 * h;             // rho < 0.5 ... 1
      }
    std::vector<Vec3> u0(nt), u1(nt);
    std::vector<Mat3> g0(nt), g1(nt);
    const long long pairs = static_cast<long long>(nt) * c.ns;
    const Vec3 zero{};
    const double t_old = ns_per_pair([&] { p2p_old(xt.data(), nt, xs.data(), as.data(), ss.data(), c.ns, u0.data(), g0.data()); },
                                     pairs, seconds);
    const double t_new = ns_per_pair([&] {
      vh::fmm::p2p(xt.data(), nt, 0, xs.data(), as.data(), ss.data(), c.ns, 0, zero, false, u1.data(), g1.data());
    }, pairs, seconds);
    // accuracy: one call each from zero
    std::fill(u0.begin(), u0.end(), Vec3{});
    std::fill(u1.begin(), u1.end(), Vec3{});
    std::fill(g0.begin(), g0.end(), Mat3{});
    std::fill(g1.begin(), g1.end(), Mat3{});
    p2p_old(xt.data(), nt, xs.data(), as.data(), ss.data(), c.ns, u0.data(), g0.data());
    vh::fmm::p2p(xt.data(), nt, 0, xs.data(), as.data(), ss.data(), c.ns, 0, zero, false, u1.data(), g1.data());
    double num = 0, den = 0;
    for (int i = 0; i < nt; ++i)
      for (int m = 0; m < 3; ++m) {
        num = std::max(num, std::abs(u1[i][m] - u0[i][m]));
        den = std::max(den, std::abs(u0[i][m]));
        for (int k = 0; k < 3; ++k) {
          num = std::max(num, std::abs(g1[i][m][k] - g0[i][m][k]) * h);
          den = std::max(den, std::abs(g0[i][m][k]) * h);
        }
      }
    std::printf("%-34s %7d %7d %10.2f %10.2f %8.1f %10.1e\n", c.name, nt, c.ns, t_old, t_new, t_old / t_new,
                num / den);
  }

  // Tree build + traversal of the periodic lattice.
  {
    const int n = 1 << tree_log2n, m = 1 << (tree_log2n / 3);
    const double L = vh::fmm::kBoxLength, hl = L / m;
    std::vector<Vec3> x;
    std::vector<double> s;
    x.reserve(n);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < m; ++j)
        for (int k = 0; k < m; ++k) {
          x.push_back({(i + 0.5 + 0.2 * (U(gen) - 0.5)) * hl, (j + 0.5 + 0.2 * (U(gen) - 0.5)) * hl,
                       (k + 0.5 + 0.2 * (U(gen) - 0.5)) * hl});
          s.push_back(hl);
        }
    const int np = static_cast<int>(x.size());
    const Vec3 c = {0.5 * L, 0.5 * L, 0.5 * L};
    const double rcut = vh::fmm::rcut_per_sigma(1e-6);
    const auto shifts = vh::fmm::near_image_shifts(vh::fmm::near_image_range(0.4));
    const vh::fmm::Acceptance mac{0.4, rcut, static_cast<long long>(std::pow(11.0, 4) / 55)};
    std::printf("\ntree + traversal, periodic %d^3 lattice (N = %d), theta = 0.4, ncrit = 64, %zu shifts\n", m, np,
                shifts.size());
    std::printf("%8s %10s %12s %10s %12s %12s\n", "threads", "tree[s]", "traverse[s]", "sum[s]", "M2L entries",
                "P2P entries");
    for (int nt : threads) {
      omp_set_num_threads(nt);
      double best_tree = 1e300, best_trav = 1e300;
      long long n_m2l = 0, n_p2p = 0;
      for (int rep = 0; rep < 2; ++rep) {
        const auto t0 = clk::now();
        const vh::fmm::Tree t = vh::fmm::build_tree(x, s, c, 0.5 * L, 64);
        const auto t1 = clk::now();
        const vh::fmm::Lists lists = vh::fmm::build_lists(t, t, shifts, mac);
        const auto t2 = clk::now();
        best_tree = std::min(best_tree, std::chrono::duration<double>(t1 - t0).count());
        best_trav = std::min(best_trav, std::chrono::duration<double>(t2 - t1).count());
        n_m2l = n_p2p = 0;
        for (const auto& l : lists.m2l) n_m2l += static_cast<long long>(l.size());
        for (const auto& l : lists.p2p) n_p2p += static_cast<long long>(l.size());
      }
      std::printf("%8d %10.3f %12.3f %10.3f %12lld %12lld\n", nt, best_tree, best_trav, best_tree + best_trav, n_m2l,
                  n_p2p);
    }
  }
  // Far lattice (periodic.cpp): summed tables computed on the first call for (p, r0, images),
  // cached afterwards.
  {
    const int p = 10, r0 = vh::fmm::near_image_range(0.4), images = 5, nc = vh::fmm::ncoef(p);
    std::vector<vh::fmm::cplx> M(3 * nc, vh::fmm::cplx(0.1, 0.2)), Lr(3 * nc);
    double t[3];
    for (double& ti : t) {
      const auto t0 = clk::now();
      vh::fmm::lattice_m2l(p, r0, images, M.data(), Lr.data());
      ti = std::chrono::duration<double>(clk::now() - t0).count();
    }
    std::printf("\nlattice_m2l, p = %d, r0 = %d, images = %d: first call %.4f s, then %.5f s, %.5f s\n", p, r0,
                images, t[0], t[1], t[2]);
  }
  omp_set_num_threads(saved);
  return 0;
}
