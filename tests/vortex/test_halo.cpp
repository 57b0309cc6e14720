// vortex/halo.h's ownership by height without MPI: owns_any(zlo, zhi) against owner_of at the
// heights of the interval, on slab layouts of 1 to 5 ranks of a 12-plane lattice (uneven
// splits), for intervals inside a plane, across slab faces, across the periodic seam and as
// wide as the box.
#include <gtest/gtest.h>

#include "core/slab.h"
#include "vortex/halo.h"

namespace {

using vh::Grid;
using vh::Slab;

TEST(Halo, OwnsAnyIsOwnerOfSomeHeightOfTheInterval) {
  const Grid g{12};
  const double h = g.h();
  long checked = 0, owned = 0;
  for (int R = 1; R <= 5; ++R)
    for (int r = 0; r < R; ++r) {
      const Slab s = Slab::layout(g, 5, r, R);
      // Heights a quarter of a plane apart, from below 0 to above the box (wrapped heights occur
      // in files and owner_of takes any), and intervals of 0 to 14 quarter-planes.
      for (int a = -8; a < 4 * 12 + 8; ++a)
        for (int w = 0; w <= 14 * 4; w += 1) {
          const double zlo = (a + 0.1) * h / 4, zhi = zlo + w * h / 4;
          // owner_of at every 1/16 plane of it and at its ends: a plane's heights are a whole
          // plane wide, so none that the interval meets is missed.
          bool want = false;
          for (int k = 0; k <= 4 * w && !want; ++k)
            want = vh::vortex::owner_of(s, w > 0 ? zlo + (zhi - zlo) * k / (4.0 * w) : zlo) == r;
          EXPECT_EQ(vh::vortex::owns_any(s, zlo, zhi), want)
              << "R " << R << " rank " << r << " [" << zlo / h << ", " << zhi / h << "] planes";
          ++checked;
          owned += want;
        }
    }
  EXPECT_GT(owned, 0);
  EXPECT_LT(owned, checked);
}

}  // namespace
