// Morton keys of the octree (fmm/tree.h) and the periodic wrap of a coordinate, one inline
// definition for the CPU tree and the GPU sort (fmm/particles_gpu.cu): VH_HD.  Every operation
// is rounded as the host rounds it (add_rn, ... of base/hd.h: no fused multiply-add), so both
// give the same keys and the same wrapped positions, bit for bit.
#pragma once

#include <math.h>

#include <cstdint>

#include "base/hd.h"

namespace vh::fmm::morton {

constexpr int kBits = 21;  ///< bits per axis; keys have 3 kBits = 63 bits, x fastest

/// Spreads the low 21 bits of v so that there are two zero bits between consecutive bits.
VH_HD inline std::uint64_t spread(std::uint64_t v) {
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffULL;
  v = (v | v << 16) & 0x1f0000ff0000ffULL;
  v = (v | v << 8) & 0x100f00f00f00f00fULL;
  v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
  v = (v | v << 2) & 0x1249249249249249ULL;
  return v;
}

/// v wrapped into [0, L), L = 2 pi (a value that rounds to L becomes 0).
VH_HD inline double wrap(double v) {
  const double L = 6.283185307179586476925286766559;
  double w = sub_rn(v, mul_rn(L, floor(v / L)));
  if (w >= L || w < 0) w = 0;  // rounding of values just below a multiple of L
  return w;
}

/// A point within kFaceNudge of a finest cell below a cell face counts as on the face: lattice
/// points i h on the faces of cells of side m h (x scale = i 2^kBits / n, a whole number)
/// round to either side by an ulp or two of (x - lo) scale (2^-30 at 2^21); nudged, each falls
/// into the cell above, and every leaf of such a lattice holds m^3 points, with a margin of h
/// below its top face (fmm/level_stencil.h's slack).  2^-20 of a finest cell is 1e-6 of it.
constexpr double kFaceNudge = 0x1p-20;

/// Key of point (x, y, z) in the cube with lower corner lo and scale = 2^kBits / side.
VH_HD inline std::uint64_t key(const double x[3], const double lo[3], double scale) {
  std::uint64_t k = 0;
  for (int d = 0; d < 3; ++d) {
    long long c = static_cast<long long>(floor(add_rn(mul_rn(sub_rn(x[d], lo[d]), scale), kFaceNudge)));
    const long long top = (1LL << kBits) - 1;
    c = c < 0 ? 0 : (c > top ? top : c);
    k |= spread(static_cast<std::uint64_t>(c)) << d;
  }
  return k;
}

}  // namespace vh::fmm::morton
