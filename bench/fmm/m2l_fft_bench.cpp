// m2l_fft_bench: the M2L of one uniform level of a periodic lattice's octree (fmm/level_stencil.h)
// by FFTs (fmm/m2l_fft_gpu.h) against the far field's per-pair GPU M2L (fmm/far_gpu.h, double
// and float) over the same translations, and the FFT's error against the CPU's m2l on sampled
// cells.  Prints one table row.  --planes P: the window of P target parent planes (one rank's
// share on R GPUs: the transforms over P + the stencil's reach planes in z, m2l_fft_gpu.h), the
// error sampled in it, no per-pair M2L.
//   m2l_fft_bench [--n 256] [--level 6] [--p 10] [--theta 0.6] [--reps 5] [--samples 64]
//                 [--planes 0]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/args.h"
#include "fmm/expansions.h"
#include "fmm/far_gpu.h"
#include "fmm/level_stencil.h"
#include "fmm/m2l_fft_gpu.h"
#include "fmm/periodic.h"
#include "fmm/traverse.h"
#include "fmm/tree.h"
#include "level_setup.h"

using namespace vh::fmm;

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

int main(int argc, char** argv) {
  int N = 256, level = 6, p = 10, reps = 5, samples = 64, planes = 0;
  double theta = 0.6;
  try {
    for (vh::bench::Args a(argc, argv); a.next();) {
      if (a.is("--n")) N = a.integer();
      else if (a.is("--level")) level = a.integer();
      else if (a.is("--p")) p = a.integer();
      else if (a.is("--theta")) theta = a.real();
      else if (a.is("--reps")) reps = a.integer();
      else if (a.is("--samples")) samples = a.integer();
      else if (a.is("--planes")) planes = a.integer();
      else
        throw std::invalid_argument("unknown option " + a.option() +
                                    " (--n --level --p --theta --reps --samples --planes)");
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "m2l_fft_bench: %s\n", e.what());
    return 2;
  }
  const int n = 1 << level;
  if (N % n || N / n < 1) {
    std::fprintf(stderr, "m2l_fft_bench: --n %d is not a multiple of 2^level = %d\n", N, n);
    return 2;
  }
  if (planes < 0 || planes > n / 2) {
    std::fprintf(stderr, "m2l_fft_bench: --planes %d; allowed: 0 (the whole level) to %d\n", planes, n / 2);
    return 2;
  }
  const double h = kBoxLength / N;
  std::vector<Vec3> x(static_cast<std::size_t>(N) * N * N);
  std::vector<double> sigma(x.size(), h);
  for (std::size_t q = 0; q < x.size(); ++q)
    x[q] = {(q % N + 0.25) * h, (q / N % N + 0.25) * h, (q / N / N + 0.25) * h};
  const int ncrit = (N / n) * (N / n) * (N / n);
  double t0 = now();
  const Tree tree = build_tree(x, sigma, {kBoxLength / 2, kBoxLength / 2, kBoxLength / 2}, kBoxLength / 2, ncrit,
                               TreeBuild{true, false});
  const std::vector<int> grid = level_grid(tree, level);
  if (grid.empty()) {
    std::fprintf(stderr, "m2l_fft_bench: level %d of the tree is not complete\n", level);
    return 2;
  }
  const LevelStencil st = uniform_stencil(level, theta);
  std::fprintf(stderr, "tree %.2f s, %zu cells; stencil entries per parity %zu\n", now() - t0, tree.cells.size(),
               st.offsets[0].size());

  // Random multipoles of the size a cell's would have (degree n ~ (side/2)^n / n!).
  const int nc = ncoef(p);
  std::vector<cplx> M(tree.cells.size() * 3 * nc);
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(-1, 1);
  const double side = kBoxLength / n;
  for (std::size_t c = 0; c < tree.cells.size(); ++c)
    for (int a = 0; a < 3; ++a)
      for (int l = 0, f = 1; l <= p; f *= (l + 1), ++l)
        for (int m = 0; m <= l; ++m)
          M[c * 3 * nc + a * nc + idx(l, m)] = cplx(u(rng), m ? u(rng) : 0.0) * std::pow(side / 2, l) / double(f);

  // The FFT.
  t0 = now();
  const int extent = planes > 0 ? m2l_fft_window_extent(level, parent_z_reach(st), planes) : 0;
  const int nz = extent > 0 ? planes : n / 2;  // target parent planes 0 .. nz - 1
  M2LFftGpu fft(p, kBoxLength, st, extent);
  const double build = now() - t0;
  std::vector<cplx> L(M.size(), cplx(0));
  fft.apply(M, L, grid, 0, nz);  // warm-up, and the result
  double fft_ms = 0;
  {
    std::vector<cplx> Lw(M.size(), cplx(0));
    for (int r = 0; r < reps; ++r) {
      fft.apply(M, Lw, grid, 0, nz);
      fft_ms += fft.last_ms() / reps;
    }
  }

  // Its error against the CPU's m2l at sampled cells.
  double worst = 0;
  std::uniform_int_distribution<int> pick(0, n * n * 2 * nz - 1);  // cells of the target planes
  for (int sIdx = 0; sIdx < samples; ++sIdx) {
    const int g = pick(rng);
    std::vector<cplx> ref(3 * nc, cplx(0));
    vh::fmm::testing::cell_m2l_direct(M, grid, p, st, g % n, g / n % n, g / n / n, ref.data());
    double num = 0, den = 0;
    for (int k = 0; k < 3 * nc; ++k) {
      num += std::norm(L[static_cast<std::size_t>(grid[g]) * 3 * nc + k] - ref[k]);
      den += std::norm(ref[k]);
    }
    worst = std::max(worst, std::sqrt(num / den));
  }

  // The per-pair GPU M2L of the same translations: lists of (source cell, image) per target.
  const std::vector<Vec3> shifts = near_image_shifts(1);
  auto shift_index = [&](int dx, int dy, int dz) {
    for (std::size_t k = 0; k < shifts.size(); ++k)
      if (std::lround(shifts[k][0] / kBoxLength) == dx && std::lround(shifts[k][1] / kBoxLength) == dy &&
          std::lround(shifts[k][2] / kBoxLength) == dz)
        return static_cast<int>(k);
    return -1;
  };
  Lists lists;
  lists.m2l.resize(tree.cells.size());
  lists.p2p.resize(tree.cells.size());
  for (int g = 0; g < n * n * n; ++g) {
    const int ix = g % n, iy = g / n % n, iz = g / n / n, c = (ix & 1) + 2 * (iy & 1) + 4 * (iz & 1);
    for (const auto& t : st.offsets[c]) {
      const int q[3] = {ix + t[0], iy + t[1], iz + t[2]};
      int j[3], s[3];
      for (int d = 0; d < 3; ++d) {
        j[d] = (q[d] % n + n) % n;
        s[d] = (q[d] - j[d]) / n;
      }
      lists.m2l[grid[g]].push_back({grid[(j[2] * n + j[1]) * n + j[0]], shift_index(s[0], s[1], s[2])});
    }
  }
  if (planes > 0) {
    std::printf("%6s %5s %3s %5s %8s %7s %7s %10s %9s %9s\n", "n", "level", "p", "theta", "entries", "planes", "extent",
                "fft_ms", "table_GiB", "max_err");
    long long entries = 0;
    for (const auto& o : st.offsets) entries += static_cast<long long>(o.size());
    std::printf("%6d %5d %3d %5.2f %8.1f %7d %7d %10.3f %9.2f %9.2e\n", N, level, p, theta, entries / 8.0, planes,
                extent, fft_ms, fft.bytes() / 1073741824.0, worst);
    std::fprintf(stderr, "tables built in %.2f s\n", build);
    return 0;
  }
  std::vector<Vec3> alpha(x.size());
  for (auto& v : alpha) v = {u(rng), u(rng), u(rng)};
  double direct_ms[2] = {0, 0};
  long long n_m2l = 0;
  for (int single = 0; single < 2; ++single) {
    FarGpu far(tree, tree, true, lists, shifts, p);
    far.set_single_m2l(single);
    far.set_strengths(alpha);
    far.upward();
    far.downward(nullptr);
    for (int r = 0; r < reps; ++r) {
      far.downward(nullptr);
      direct_ms[single] += far.times().m2l / reps;
    }
    n_m2l = far.n_m2l();
  }

  std::printf("%6s %5s %3s %5s %8s %12s %10s %11s %11s %8s %8s %9s %9s\n", "n", "level", "p", "theta", "entries",
              "translations", "fft_ms", "pair64_ms", "pair32_ms", "x_vs_64", "x_vs_32", "table_GiB", "max_err");
  long long entries = 0;
  for (const auto& o : st.offsets) entries += static_cast<long long>(o.size());
  std::printf("%6d %5d %3d %5.2f %8.1f %12lld %10.3f %11.3f %11.3f %8.1f %8.1f %9.2f %9.2e\n", N, level, p, theta,
              entries / 8.0, n_m2l, fft_ms, direct_ms[0], direct_ms[1], direct_ms[0] / fft_ms, direct_ms[1] / fft_ms,
              fft.bytes() / 1073741824.0, worst);
  std::fprintf(stderr, "tables built in %.2f s\n", build);
  return 0;
}
