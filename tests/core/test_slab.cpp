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

// The transposes' layout (slab_transpose): what rank r sends rank q on the a side is what q
// receives from r on the b side (counts agree), the a side's messages tile the rank's modes,
// and the b side's rows take every row of the rank's [z][ky][kx] planes exactly once.
TEST(Slab, TransposesMatchAcrossRanksAndTakeEveryRowOnce) {
  for (int n : {8, 12, 18, 32})
    for (int kmax : {n / 2 - 1, (n - 1) / 3})
      for (int R = 2; R <= n; ++R) {
        std::vector<vh::SlabTranspose> t;
        for (int r = 0; r < R; ++r) t.push_back(vh::slab_transpose(vh::Slab::layout(vh::Grid{n}, kmax, r, R)));
        for (int r = 0; r < R; ++r) {
          const vh::Slab s = vh::Slab::layout(vh::Grid{n}, kmax, r, R);
          std::size_t a = 0;
          for (int q = 0; q < R; ++q) {
            ASSERT_EQ(t[r].a_counts[q], t[q].b_counts[r]) << "N " << n << " R " << R << " " << r << " → " << q;
            EXPECT_EQ(t[r].a_displs[q], a);
            a += t[r].a_counts[q];
          }
          EXPECT_EQ(a, s.local_modes());
          const std::size_t rows = std::size_t(s.nz) * n;
          ASSERT_EQ(t[r].rows.size(), rows);
          EXPECT_EQ(t[r].b_displs.back() + t[r].b_counts.back(), rows * (n / 2 + 1));
          std::vector<int> seen(rows, 0);
          for (int row : t[r].rows) {
            ASSERT_TRUE(row >= 0 && std::size_t(row) < rows);
            ++seen[static_cast<std::size_t>(row)];
          }
          for (std::size_t i = 0; i < rows; ++i) EXPECT_EQ(seen[i], 1) << "row " << i << ", N " << n << " R " << R;
        }
      }
}

// SlabModes, the layout per-mode loops on the device take: storage index → (ix, iy, iz) as
// for_each_mode gives them, for one rank (grid.h's mode_of) and for every rank of R.
TEST(Slab, ModesOfAStorageIndexAreForEachModes) {
  for (int n : {8, 18, 32})
    for (int R : {1, 2, 3, 5, n}) {
      for (int r = 0; r < R; ++r) {
        const vh::Slab s = vh::Slab::layout(vh::Grid{n}, n / 3, r, R);
        const vh::SlabModes m = s.modes();
        ASSERT_EQ(std::size_t(m.count()), s.local_modes());
        std::size_t wrong = 0;
        vh::for_each_mode(s, [&](std::size_t i, int ix, int iy, int iz) {
          int jx, jy, jz;
          m.mode(static_cast<long long>(i), jx, jy, jz);
          if (jx != ix || jy != iy || jz != iz) {
#pragma omp atomic
            ++wrong;
          }
        });
        EXPECT_EQ(wrong, 0u) << "N " << n << " R " << R << " rank " << r;
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
