// What the tests on R ranks share: the rank's slab of a whole field (core/slab_copy.h), and the
// relative L2 difference of two slab-distributed fields over all the ranks.
#pragma once

#include <cmath>
#include <complex>

#include "core/grid.h"
#include "core/slab.h"
#include "core/slab_copy.h"

namespace vh::test {

using vh::restrict_to;  // core/slab_copy.h

/// ‖a − b‖ / ‖b‖ over all the ranks' modes (each weighted for its conjugate), b the reference.
inline double rel_l2(const SpectralSlab& a, const SpectralSlab& b) {
  const Slab& s = b.slab;
  const int n = s.grid.n, nxh = n / 2 + 1;
  double num = 0, den = 0;
  for (int c = 0; c < 3; ++c)
    for (std::size_t m = 0; m < b.c[c].size(); ++m) {
      const double w = mode_weight(int(m % nxh), n);
      num += w * std::norm(a.c[c][m] - b.c[c][m]);
      den += w * std::norm(b.c[c][m]);
    }
  return std::sqrt(s.comm.sum(num) / s.comm.sum(den));
}

}  // namespace vh::test
