// Per-mode math of the diagnostics, shared by diagnostics.cpp and diagnostics.cu.
#pragma once

#include "core/hd.h"

namespace vh {
namespace diag {

/// Signed wavenumbers of half-layout mode (ix, iy, iz) on an n³ grid (Nyquist index → −n/2).
VH_HD inline void wavevector(int n, int ix, int iy, int iz, int k[3]) {
  k[0] = ix;
  k[1] = iy <= n / 2 - 1 ? iy : iy - n;
  k[2] = iz <= n / 2 - 1 ? iz : iz - n;
}

/// Weight of a half-layout mode in a full-spectrum sum (grid.h).
VH_HD inline double weight(int n, int ix) { return (ix == 0 || ix == n / 2) ? 1.0 : 2.0; }

/// Shell index round(|k|) from |k|².
VH_HD inline int shell(double k2) { return int(sqrt(k2) + 0.5); }

}  // namespace diag
}  // namespace vh
