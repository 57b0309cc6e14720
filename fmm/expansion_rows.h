// Which cells' expansions a rank keeps, and where: the rows of the far field's M and L (issue 25).
// On R GPU ranks (GpuEvaluator::evaluate_own with the uniform levels in windows) a rank's tree is
// the whole set's, cell for cell, but its M2L reads the multipoles of a level only in its window
// of planes (UniformFar::source_planes: its slab and the stencil's reach), and its P2M, M2M, L2L
// and L2P touch only the cells of its own particles, which lie in that window. So M and L keep
//   - every cell of the levels below `from` (those the ranks all-reduce: MultipoleHalo), at its
//     index;
//   - from `from` on, the cells of each level's window, in cell order after them;
// and no other: at 256³ on 4 ranks 43 % of the cells' expansions instead of all of them.
// One spelling of the rule for the device (uniform_gpu.cu) and the host reference (the tests).
#pragma once

#include <math.h>

#include <vector>

#include "base/hd.h"
#include "base/planes.h"

namespace vh::fmm {

/// Level l's cells of the z planes [first, first + count) (mod 2^l); count 2^l: all of them.
struct PlaneWindow {
  int first = 0, count = 0;
};

/// The z plane (0 .. 2^level − 1) of a cell of its level whose centre is at height cz in the cube
/// [lo_z, lo_z + side0).
VH_HD inline int cell_plane(double cz, int level, double lo_z, double side0) {
  const int planes = 1 << level;
  const int z = static_cast<int>(floor((cz - lo_z) / side0 * planes));
  return z < 0 ? 0 : (z > planes - 1 ? planes - 1 : z);
}

/// Whether a rank keeps the expansions of a cell of `level` in `plane`: every cell of the levels
/// below `from`, and from `from` on those of the level's window w.
VH_HD inline bool keeps_expansions(int level, int plane, int from, PlaneWindow w) {
  return level < from || near_window(plane, w.first, w.count, 1 << level, 0);
}

/// The rows of the cells (level[c], plane[c]) in tree order: the kept cells numbered in cell
/// order, −1 for the others; returns the number of rows. The device's rows (UniformFar::
/// keep_rows) are these (tests/fmm/test_evaluator_gpu.cpp, ExpansionRowsAreTheHostRule).
inline int expansion_rows(const std::vector<int>& level, const std::vector<int>& plane, int from,
                          const std::vector<PlaneWindow>& windows, std::vector<int>& rows) {
  rows.assign(level.size(), -1);
  int n = 0;
  for (std::size_t c = 0; c < level.size(); ++c)
    if (keeps_expansions(level[c], plane[c], from, windows[level[c]])) rows[c] = n++;
  return n;
}

}  // namespace vh::fmm
