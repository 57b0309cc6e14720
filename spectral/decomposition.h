// Slab decomposition of the N³ grid over MPI ranks (one rank for now).
//
// Physical space: rank r holds the z-planes [z0, z0 + nz) of the [z][y][x] grid, x and y
// whole. Spectral space (half layout [kz][ky][kx]): after the y–z transpose a rank holds
// the kz rows [kz0, kz0 + nkz) with ky and kx (0 … N/2) whole. With one rank both are the
// whole grid and no transpose happens. The solvers loop over the local extents given here,
// so adding ranks adds the transposes, not a rewrite of the per-mode code.
#pragma once

#include <cstddef>

#include "core/error.h"
#include "core/grid.h"

namespace vh::spectral {

struct Slab {
  Grid grid;          ///< the global grid
  int rank = 0;       ///< this rank
  int ranks = 1;      ///< number of ranks
  int z0 = 0, nz = 0;    ///< physical z-planes held
  int kz0 = 0, nkz = 0;  ///< spectral kz indices held

  /// The whole grid on one rank.
  static Slab single(const Grid& g) {
    Slab s;
    s.grid = g;
    s.nz = g.n;
    s.nkz = g.n;
    return s;
  }
  /// Even split of N over `ranks` (N divisible by ranks).
  static Slab split(const Grid& g, int rank, int ranks) {
    VH_CHECK(ranks > 0 && g.n % ranks == 0, "slab: N must be divisible by the number of ranks");
    Slab s;
    s.grid = g;
    s.rank = rank;
    s.ranks = ranks;
    s.nz = s.nkz = g.n / ranks;
    s.z0 = s.kz0 = rank * s.nz;
    return s;
  }
  std::size_t local_points() const { return std::size_t(nz) * grid.n * grid.n; }
  std::size_t local_modes() const { return std::size_t(nkz) * grid.n * (grid.n / 2 + 1); }
};

}  // namespace vh::spectral
