#include "fmm/level_stencil.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace vh::fmm {

namespace {

// Whole cells in q (to 1e-6 of a cell), or false.
bool whole(double q, int& n) {
  const double r = std::rint(q);
  if (std::fabs(q - r) > 1e-6) return false;
  n = static_cast<int>(r);
  return true;
}

int floor_half(int a) { return a >= 0 ? a / 2 : -((1 - a) / 2); }

}  // namespace

long long LevelStencil::translations() const {
  long long e = 0;
  for (const auto& o : offsets) e += static_cast<long long>(o.size());
  const long long n = level < 0 ? 0 : 1LL << level;
  return e * n * n * n / 8;
}

bool uniform_far(const std::array<int, 3>& t, double theta, double rcut_cells, double slack_cells) {
  double r2 = 0, g2 = 0;
  for (int d = 0; d < 3; ++d) {
    r2 += double(t[d]) * t[d];
    const double g = t[d] == 0 ? 0.0 : std::abs(t[d]) - 1 + slack_cells;
    g2 += g * g;
  }
  // sqrt(3) < theta |t|  and  gap >= rcut
  return 3.0 < theta * theta * r2 && g2 >= rcut_cells * rcut_cells;
}

namespace {

// Offsets t with |t_d| <= R that are not far reach every near offset: a near t has
// |t| <= sqrt(3)/theta or some |t_d| - 1 < rcut.
int near_reach(double theta, double rcut_cells) {
  return static_cast<int>(std::ceil(std::max(std::sqrt(3.0) / theta, rcut_cells + 1))) + 1;
}

void check(double theta, double rcut_cells, double slack_cells) {
  if (!(theta > 0 && theta < 1)) throw std::invalid_argument("uniform_stencil: theta outside (0, 1)");
  if (!(rcut_cells >= 0 && rcut_cells < 1e3)) throw std::invalid_argument("uniform_stencil: rcut outside [0, 1000) cells");
  if (!(slack_cells >= 0 && slack_cells <= 1))
    throw std::invalid_argument("uniform_stencil: slack outside [0, 1] cells");
}

}  // namespace

LevelStencil uniform_stencil(int level, double theta, double rcut_cells, double slack_cells) {
  if (level < 1 || level > 20) throw std::invalid_argument("uniform_stencil: level " + std::to_string(level));
  check(theta, rcut_cells, slack_cells);
  // The parents (side 2 s) are not far within their near reach, so |t| <= 2 reach + 1.
  const int R = 2 * near_reach(theta, rcut_cells / 2) + 1;
  LevelStencil st;
  st.level = level;
  for (int c = 0; c < 8; ++c) {
    const int cv[3] = {c & 1, (c >> 1) & 1, c >> 2};
    for (int x = -R; x <= R; ++x)
      for (int y = -R; y <= R; ++y)
        for (int z = -R; z <= R; ++z)
          if (uniform_far({x, y, z}, theta, rcut_cells, slack_cells) &&
              !uniform_far({floor_half(cv[0] + x), floor_half(cv[1] + y), floor_half(cv[2] + z)}, theta, rcut_cells / 2,
                           slack_cells / 2))
            st.offsets[c].push_back({x, y, z});
    std::sort(st.offsets[c].begin(), st.offsets[c].end());
  }
  return st;
}

std::vector<std::array<int, 3>> near_stencil(double theta, double rcut_cells, double slack_cells) {
  check(theta, rcut_cells, slack_cells);
  const int R = near_reach(theta, rcut_cells);
  std::vector<std::array<int, 3>> t;
  for (int x = -R; x <= R; ++x)
    for (int y = -R; y <= R; ++y)
      for (int z = -R; z <= R; ++z)
        if (!uniform_far({x, y, z}, theta, rcut_cells, slack_cells)) t.push_back({x, y, z});
  std::sort(t.begin(), t.end());
  return t;
}

int near_z_reach(double theta, double rcut_cells, double slack_cells) {
  int reach = 0;
  for (const auto& t : near_stencil(theta, rcut_cells, slack_cells)) reach = std::max(reach, std::abs(t[2]));
  return reach;
}

int uniform_depth(double n, int ncrit) {
  int l = 0;
  while (l < 7 && n > ncrit * std::pow(8.0, l)) ++l;
  return l;
}

int uniform_leaf_limit(double n, int ncrit) {
  const double mean = n / std::pow(8.0, uniform_depth(n, ncrit));
  return static_cast<int>(std::min(std::max(static_cast<double>(ncrit), std::floor(8 * mean)), 2e9));
}

ParentReach parent_z_reach(const LevelStencil& st) {
  ParentReach r;
  bool any = false;
  for (int c = 0; c < 8; ++c)
    for (const auto& t : st.offsets[c]) {
      const int T = floor_half((c >> 2) + t[2]);
      r.lo = any ? std::min(r.lo, T) : T;
      r.hi = any ? std::max(r.hi, T) : T;
      any = true;
    }
  return r;
}

int m2l_fft_window_extent(int level, const ParentReach& r, int planes) {
  const int m = 1 << (level - 1);
  const auto smooth = [](int v) {
    for (int f : {2, 3, 5, 7})
      while (v % f == 0) v /= f;
    return v == 1;
  };
  int e = std::max(planes, 1) + r.hi - r.lo;
  while (e < m && !smooth(e)) ++e;
  return std::min(e, m);
}

double m2l_fft_bytes(int level, int p, bool building, int extent) {
  if (level < 2) return 0;
  const double m = std::ldexp(1.0, level - 1);
  const double nf = (p + 1.0) * (p + 1.0), nc = (p + 1.0) * (p + 2.0) / 2, V = m * m * (extent > 0 ? extent : m);
  // tables 27 nf (one a parity difference), folded multipoles 24 nf, local expansions 24 nc
  // complex doubles a parent cell; while built, a chunk of the tables and cuFFT's work area
  return 16.0 * V * ((building ? 27 + 2 * kFftTableChunk : 27) * nf + 24 * nf + 24 * nc);
}

namespace {

/// A rank's window of level l's FFT M2L on a lattice of n points a side split into R z-slabs:
/// the target parent planes over its share of ceil(n / R) lattice planes, with a plane of drift
/// either way, and the reach of the level's stencil (without the lattice's slack: the largest).
struct SlabWindow {
  int planes;
  ParentReach reach;
};
SlabWindow slab_window(int l, int L, double theta, double rcut_cells_L, int n, int R) {
  const double per_parent = n / std::ldexp(1.0, l - 1);  // lattice planes a parent plane
  const int share = (n + R - 1) / R + 2;                   // with a plane of drift either way
  const int planes = static_cast<int>(std::ceil(share / per_parent)) + 1;
  const LevelStencil st = uniform_stencil(l, theta, rcut_cells_L * std::ldexp(1.0, l - L));
  return {planes, parent_z_reach(st)};
}

}  // namespace

double m2l_fft_set_bytes(int L, int p, double theta, double rcut_cells_L, int n, int R) {
  double b = 0;
  for (int l = 2; l <= L; ++l) {
    int extent = 0;
    if (R > 1) {
      const SlabWindow w = slab_window(l, L, theta, rcut_cells_L, n, R);
      extent = m2l_fft_window_extent(l, w.reach, w.planes);
    }
    b += m2l_fft_bytes(l, p, l == L, extent);
  }
  return b;
}

double uniform_expansion_cells(int L, double theta, double rcut_cells_L, int n, int R) {
  double cells = static_cast<double>(level_offset(std::min(L, 1) + 1));  // levels 0 and 1: whole
  for (int l = 2; l <= L; ++l) {
    const double whole = std::ldexp(1.0, 3 * l);
    if (R == 1) {
      cells += whole;
      continue;
    }
    // UniformFar::source_planes: 2 (nz + hi − lo) planes of the level, where the window is not
    // the whole level and holds its targets' planes (lo ≤ 0 ≤ hi).
    const SlabWindow w = slab_window(l, L, theta, rcut_cells_L, n, R);
    const int m = 1 << (l - 1);
    const bool all = w.planes >= m || w.reach.lo > 0 || w.reach.hi < 0;
    const int planes = all ? 2 * m : std::min(2 * m, 2 * (w.planes + w.reach.hi - w.reach.lo));
    cells += std::ldexp(1.0, 2 * l) * planes;
  }
  return cells;
}

std::vector<int> level_grid(const Tree& t, int level) {
  if (level < 0 || level > 10 || t.cells.empty() || static_cast<int>(t.levels.size()) <= level) return {};
  const int n = 1 << level;
  const std::vector<int>& cells = t.levels[level];
  if (static_cast<long long>(cells.size()) != static_cast<long long>(n) * n * n) return {};
  const Cell& root = t.cells[0];
  const double side = 2 * root.half / n;
  std::vector<int> grid(cells.size(), -1);
  for (int c : cells) {
    int i[3];
    for (int d = 0; d < 3; ++d)
      if (!whole((t.cells[c].center[d] - (root.center[d] - root.half)) / side - 0.5, i[d]) || i[d] < 0 || i[d] >= n)
        return {};
    int& g = grid[(static_cast<std::size_t>(i[2]) * n + i[1]) * n + i[0]];
    if (g >= 0) return {};
    g = c;
  }
  return grid;
}

}  // namespace vh::fmm
