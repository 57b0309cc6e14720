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

LevelStencil uniform_stencil(int level, double theta) {
  if (level < 1 || level > 20) throw std::invalid_argument("uniform_stencil: level " + std::to_string(level));
  if (!(theta > 0 && theta < 1)) throw std::invalid_argument("uniform_stencil: theta outside (0, 1)");
  // far: sqrt(3) < theta |t|, i.e. 3 < theta^2 |t|^2.
  const auto far = [theta](int x, int y, int z) { return 3.0 < theta * theta * (double(x) * x + double(y) * y + double(z) * z); };
  // Parents not far: |T| <= sqrt(3)/theta, so |t| <= 2 sqrt(3)/theta + 1.
  const int R = static_cast<int>(std::ceil(2 * std::sqrt(3.0) / theta)) + 1;
  LevelStencil st;
  st.level = level;
  for (int c = 0; c < 8; ++c) {
    const int cv[3] = {c & 1, (c >> 1) & 1, c >> 2};
    for (int x = -R; x <= R; ++x)
      for (int y = -R; y <= R; ++y)
        for (int z = -R; z <= R; ++z)
          if (far(x, y, z) && !far(floor_half(cv[0] + x), floor_half(cv[1] + y), floor_half(cv[2] + z)))
            st.offsets[c].push_back({x, y, z});
    std::sort(st.offsets[c].begin(), st.offsets[c].end());
  }
  return st;
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
