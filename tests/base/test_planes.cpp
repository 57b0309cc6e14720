// base/planes.h: the planes of a periodic grid along z, against direct counts.
#include "base/planes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace vh {
namespace {

// The widened window written out plane by plane: first − reach … first + count + reach − 1.
bool in_widened(int p, int first, int count, int n, int reach) {
  for (int d = -reach; d < count + reach; ++d)
    if ((((first + d) % n) + n) % n == (((p % n) + n) % n)) return true;
  return false;
}

TEST(Planes, PlaneOfIsFloorModuloThePeriod) {
  const int n = 16;
  const double side = 0.25;
  for (double z : {0.0, 0.1, 0.25, 3.99, 4.0, 4.1, -0.01, -4.0, -4.01, 11.3}) {
    const int want = ((static_cast<int>(std::floor(z / side)) % n) + n) % n;
    EXPECT_EQ(plane_of(z, side, n), want) << "z = " << z;
  }
  EXPECT_EQ(plane_of(-1e-300, side, n), n - 1);  // just below the box: its top plane
}

// Every window of a grid of 7 and of 8 planes (every first, count and reach up to the period):
// near_window against the window written out.
TEST(Planes, NearWindowIsTheWidenedWindow) {
  for (int n : {7, 8})
    for (int first = -n; first < 2 * n; ++first)
      for (int count = 0; count <= n; ++count)
        for (int reach = 0; reach <= n; ++reach)
          for (int p = -n; p < 2 * n; ++p)
            ASSERT_EQ(near_window(p, first, count, n, reach), in_widened(p, first, count, n, reach))
                << "n " << n << " first " << first << " count " << count << " reach " << reach << " p " << p;
}

// PlaneCounts::near says whether some occupied plane is near the window: against the planes
// tested one by one, for random occupancies (none, one, all and the ones between).
TEST(Planes, CountsSayWhetherAnOccupiedPlaneIsNear) {
  std::mt19937 rng(5);
  for (int n : {1, 5, 16}) {
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<int> occ(static_cast<std::size_t>(n));
      const double fill = trial % 4 == 0 ? 0.0 : trial % 4 == 1 ? 1.0 : 0.2 * (trial % 5);
      for (int& o : occ) o = std::uniform_real_distribution<double>(0, 1)(rng) < fill ? 1 : 0;
      const PlaneCounts counts(occ);
      for (int first = 0; first < n; ++first)
        for (int count = 0; count <= n; ++count)
          for (int reach = 0; reach <= n; ++reach) {
            bool want = false;
            for (int p = 0; p < n; ++p) want = want || (occ[p] && near_window(p, first, count, n, reach));
            ASSERT_EQ(counts.near(first, count, reach), want)
                << "n " << n << " trial " << trial << " first " << first << " count " << count << " reach " << reach;
          }
    }
  }
}

// occupied_arc: the shortest run that holds every occupied plane, wrapping where that is
// shorter; count 0 for all or none.
TEST(Planes, OccupiedArcIsTheShortestRun) {
  auto arc = [](std::vector<int> occ) {
    int first = -1, count = -1;
    occupied_arc(occ, first, count);
    return std::vector<int>{first, count};
  };
  EXPECT_EQ(arc({0, 0, 0, 0, 0, 0, 0, 0}), (std::vector<int>{0, 0}));
  EXPECT_EQ(arc({1, 1, 1, 1, 1, 1, 1, 1}), (std::vector<int>{0, 0}));
  EXPECT_EQ(arc({0, 0, 1, 1, 0, 0, 0, 0}), (std::vector<int>{2, 2}));
  EXPECT_EQ(arc({1, 0, 0, 0, 0, 0, 0, 1}), (std::vector<int>{7, 2}));  // across the period
  EXPECT_EQ(arc({0, 1, 0, 1, 0, 0, 0, 0}), (std::vector<int>{1, 3}));  // a hole inside
  EXPECT_EQ(arc({0, 0, 0, 0, 0, 1, 0, 0}), (std::vector<int>{5, 1}));
}

}  // namespace
}  // namespace vh
