// The slab decomposition (core/slab.h) for every rank count R ≤ N: every ky index and every
// z-plane belongs to exactly one rank, every rank holds at least one of each, the kept ky
// come first in jy order, and block_owner() inverts block_start()/block_count(). Exact
// (integers); no MPI needed (Slab::layout).
#include <gtest/gtest.h>

#include <vector>

#include "core/slab.h"

namespace {

TEST(Slab, EveryRankCountUpToNCoversTheGridOnce) {
  for (int n : {8, 12, 16, 18, 32, 48, 64})
    for (int kmax : {n / 2 - 1, (n - 1) / 3})
      for (int R = 1; R <= n; ++R) {
        std::vector<int> ky(n, 0), z(n, 0);
        for (int r = 0; r < R; ++r) {
          const vh::Slab s = vh::Slab::layout(vh::Grid{n}, kmax, r, R);
          ASSERT_GE(s.slots(), 1) << "N " << n << " kmax " << kmax << " R " << R << " rank " << r;
          ASSERT_GE(s.nz, 1) << "N " << n << " R " << R << " rank " << r;
          for (int j = 0; j < s.slots(); ++j) {
            const int i = s.ky_index(j);
            ASSERT_TRUE(i >= 0 && i < n);
            ++ky[i];
            const int k = i < n / 2 ? i : i - n;
            if (R > 1) {
              EXPECT_EQ(j < s.njy, k >= -kmax && k <= kmax) << "slot " << j << " ky " << k;
            }
          }
          for (int k = s.z0; k < s.z0 + s.nz; ++k) ++z[k];
          EXPECT_EQ(s.local_modes(), std::size_t(n) * s.slots() * (n / 2 + 1));
        }
        for (int i = 0; i < n; ++i) {
          EXPECT_EQ(ky[i], 1) << "ky index " << i << ", N " << n << " kmax " << kmax << " R " << R;
          EXPECT_EQ(z[i], 1) << "plane " << i << ", N " << n << " R " << R;
        }
      }
}

TEST(Slab, BlockOwnerInvertsTheBlocks) {
  for (int n = 1; n <= 40; ++n)
    for (int parts = 1; parts <= 12; ++parts)
      for (int p = 0; p < parts; ++p)
        for (int j = vh::block_start(n, parts, p); j < vh::block_start(n, parts, p) + vh::block_count(n, parts, p); ++j)
          EXPECT_EQ(vh::block_owner(n, parts, j), p) << n << " " << parts << " " << j;
}

}  // namespace
