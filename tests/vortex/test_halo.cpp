// vortex/halo.h's ownership by height without MPI: owns_any(zlo, zhi) against owner_of at the
// heights of the interval, on slab layouts of 1 to 5 ranks of a 12-plane lattice (uneven
// splits), for intervals inside a plane, across slab faces, across the periodic seam and as
// wide as the box; and vortex/validate.h's PeriodicInterval, the height interval that a
// checkpoint keeps of each chunk of positions and owns_any reads.
#include <gtest/gtest.h>

#include "core/slab.h"
#include "vortex/halo.h"
#include "vortex/validate.h"

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

// The narrower of the plain and the shifted interval, and holds() true exactly for the values
// added (and those between them): heights of one lattice plane either side of the seam, of a
// plane in the middle, and of the whole box.
TEST(PeriodicInterval, HoldsItsValuesInTheNarrowerOfThePlainAndTheShiftedInterval) {
  using vh::vortex::PeriodicInterval;
  const double two_pi = 2 * vh::kPi, h = two_pi / 12;
  struct Case {
    std::vector<double> x;
    double lo, hi;
  };
  const Case cases[] = {
      {{0.1 * h, two_pi - 0.3 * h, 0.4 * h, two_pi - 0.1 * h}, -0.3 * h, 0.4 * h},  // across the seam
      {{two_pi - 0.3 * h, two_pi - 0.1 * h}, two_pi - 0.3 * h, two_pi - 0.1 * h},   // below it: plain
      {{5.8 * h, 6.3 * h, 6.1 * h}, 5.8 * h, 6.3 * h},                              // across π: plain
      {{0.0, 3 * h, 6 * h, 9 * h, 11.5 * h}, -6 * h, 3 * h},  // over the box: 9h shifted, 11.5h plain
  };
  for (const Case& c : cases) {
    PeriodicInterval in;
    for (double x : c.x) in.add(x);
    const auto [lo, hi] = in.interval();
    EXPECT_NEAR(lo, c.lo, 1e-15) << c.x.size();
    EXPECT_NEAR(hi, c.hi, 1e-15) << c.x.size();
    EXPECT_GE(lo, -vh::kPi);
    EXPECT_LT(hi, two_pi);
    for (double x : c.x) EXPECT_TRUE(PeriodicInterval::holds(lo, hi, x)) << x;
  }
  // Across the seam: [−0.3h, 0.4h] holds 2π − 0.2h and 0.2h, not 0.5h nor 2π − 0.4h nor π.
  EXPECT_TRUE(PeriodicInterval::holds(-0.3 * h, 0.4 * h, two_pi - 0.2 * h));
  EXPECT_TRUE(PeriodicInterval::holds(-0.3 * h, 0.4 * h, 0.2 * h));
  EXPECT_FALSE(PeriodicInterval::holds(-0.3 * h, 0.4 * h, 0.5 * h));
  EXPECT_FALSE(PeriodicInterval::holds(-0.3 * h, 0.4 * h, two_pi - 0.4 * h));
  EXPECT_FALSE(PeriodicInterval::holds(-0.3 * h, 0.4 * h, vh::kPi));
  // Nothing added: an empty interval, holding nothing.
  const auto [lo, hi] = PeriodicInterval().interval();
  EXPECT_GT(lo, hi);
  EXPECT_FALSE(PeriodicInterval::holds(lo, hi, 1.0));
}

}  // namespace
