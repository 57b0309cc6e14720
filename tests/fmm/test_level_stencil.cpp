// fmm/level_stencil.h: the uniform-level stencil partitions the pairs of cells with the near
// field and the coarser levels, and the grid of a lattice's level names every cell once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fmm/level_stencil.h"
#include "level_setup.h"

namespace vh::fmm {
namespace {

// The header's test written out: full cells of side 1, 2 (sqrt(3)/2) < theta |t| and the
// boxes' gap at least rcut.
bool far_cells(const std::array<int, 3>& t, double theta, double rcut) {
  double gap2 = 0;
  for (int d = 0; d < 3; ++d) gap2 += std::pow(std::max(0, std::abs(t[d]) - 1), 2);
  const double r = std::sqrt(double(t[0]) * t[0] + double(t[1]) * t[1] + double(t[2]) * t[2]);
  return std::sqrt(3.0) < theta * r && std::sqrt(gap2) >= rcut;
}

TEST(LevelStencil, EverySourceCellIsNearTakenHereOrTakenAbove) {
  // A target of parity c and a source at offset t (cells of the level): either the pair is
  // near (not far: the next level down or the P2P), or this level's stencil takes it, or its
  // parents are far (a coarser level took it): exactly one, for every t, images included.
  for (double rcut : {0.0, 0.9, 2.5})
  for (double theta : {0.4, 0.5, 0.6, 0.8}) {
    const LevelStencil st = uniform_stencil(5, theta, rcut);
    const int R = 3 * static_cast<int>(std::ceil(2 * std::sqrt(3.0) / theta + rcut));
    for (int c = 0; c < 8; ++c) {
      const int cv[3] = {c & 1, (c >> 1) & 1, c >> 2};
      long long taken = 0;
      for (int x = -R; x <= R; ++x)
        for (int y = -R; y <= R; ++y)
          for (int z = -R; z <= R; ++z) {
            const std::array<int, 3> t{x, y, z};
            std::array<int, 3> T;
            for (int d = 0; d < 3; ++d) T[d] = static_cast<int>(std::floor((cv[d] + t[d]) / 2.0));
            const bool here = std::binary_search(st.offsets[c].begin(), st.offsets[c].end(), t);
            ASSERT_EQ(int(!far_cells(t, theta, rcut)) + int(here) + int(far_cells(T, theta, rcut / 2)), 1)
                << "rcut " << rcut << " theta " << theta << " parity " << c << " t " << x << " " << y << " " << z;
            taken += here;
          }
      EXPECT_EQ(taken, static_cast<long long>(st.offsets[c].size()));
    }
    // The near stencil: every offset of the box that is not far, itself included.
    const auto near = near_stencil(theta, rcut);
    long long n_near = 0;
    for (int x = -R; x <= R; ++x)
      for (int y = -R; y <= R; ++y)
        for (int z = -R; z <= R; ++z) {
          const std::array<int, 3> t{x, y, z};
          const bool in = std::binary_search(near.begin(), near.end(), t);
          ASSERT_EQ(in, !far_cells(t, theta, rcut)) << "near: rcut " << rcut << " theta " << theta;
          n_near += in;
        }
    EXPECT_EQ(n_near, static_cast<long long>(near.size()));
  }
  EXPECT_EQ(near_stencil(0.6, 0).size(), 93u);  // |t|^2 <= 8: the leaves of the dual traversal's near field
  // The level's translations: n^3 / 8 times the entries of the eight parities.
  const LevelStencil st = uniform_stencil(6, 0.6);
  long long e = 0;
  for (const auto& o : st.offsets) e += static_cast<long long>(o.size());
  EXPECT_EQ(st.translations(), e * 64 * 64 * 64 / 8);
}

TEST(LevelStencil, TheGridNamesEveryCellOnce) {
  const testing::LevelSetup s = testing::lattice_setup(16, 8, 4, 2);
  const std::vector<int> g = level_grid(s.tree, 3);
  ASSERT_EQ(g.size(), 512u);
  const double side = kBoxLength / 8;
  for (int iz = 0; iz < 8; ++iz)
    for (int iy = 0; iy < 8; ++iy)
      for (int ix = 0; ix < 8; ++ix) {
        const Cell& C = s.tree.cells[g[(iz * 8 + iy) * 8 + ix]];
        EXPECT_EQ(C.level, 3);
        EXPECT_NEAR(C.center[0], (ix + 0.5) * side, 1e-12);
        EXPECT_NEAR(C.center[1], (iy + 0.5) * side, 1e-12);
        EXPECT_NEAR(C.center[2], (iz + 0.5) * side, 1e-12);
      }
  EXPECT_TRUE(level_grid(s.tree, 4).empty());  // no such level
}

}  // namespace
}  // namespace vh::fmm
