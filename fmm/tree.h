// Morton-ordered octree over a cube.  Particles are sorted by their 63-bit Morton key
// (21 bits per axis, x fastest in the interleave) and a cell is split while it holds more than
// ncrit particles (or until level 21).  Children of a cell are contiguous in Tree::cells.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "fmm/types.h"

namespace vh::fmm {

/// One octree cell.  Lengths are in the units of the positions.
struct Cell {
  Vec3 center{};         ///< geometric centre of the cell's cube: the expansion centre
  double half = 0;       ///< half side of the cube
  double radius = 0;     ///< max distance from `center` to a particle of the cell
  Vec3 bmin{}, bmax{};   ///< tight bounding box of the particles
  double sigma_max = 0;  ///< largest core radius among the particles (sources only)
  int begin = 0, end = 0;        ///< particle range [begin, end) in sorted order
  int child = -1, nchild = 0;    ///< first child index and number of children (0: leaf)
  int level = 0;                 ///< 0 for the root
  int parent = -1;
  bool leaf() const { return nchild == 0; }
};

/// Octree and the sort permutation: sorted particle i is input particle perm[i].  perm, x and
/// sigma are empty when the points stay on the GPU (SortedSourcesGpu::tree, fmm/particles_gpu.h).
struct Tree {
  std::vector<Cell> cells;            ///< cells[0] is the root; children after parents
  std::vector<int> perm;              ///< sorted -> input index
  std::vector<Vec3> x;                ///< positions in sorted order (wrapped, when built with wrap)
  std::vector<double> sigma;          ///< core radii in sorted order (empty for a target tree)
  std::vector<std::vector<int>> levels;  ///< cell indices per level
  /// Number of points (the root's range).
  int size() const { return cells.empty() ? 0 : cells[0].end; }
};

/// How build_tree treats the positions and where it sorts.
struct TreeBuild {
  /// Wrap each position into the periodic box [0, 2 pi)^3 first (fmm::wrap_coordinate; the
  /// cube must then be that box); Tree::x holds the wrapped positions.
  bool wrap = false;
  /// Sort the keys on the GPU (fmm/sort_gpu.h; CUDA builds, same result as the CPU sort).
  bool gpu_sort = false;
  /// Split every cell that holds points down to this level, whatever its count (a rank's part
  /// of a set: the leaves the whole set's tree would have, whole_set_leaf_level()).
  int min_level = 0;
};
/// Builds the tree of points x (sigma may be empty for targets) in the cube of centre `center`
/// and half side `half`; every point must lie inside it (after the wrap, with how.wrap).
/// Expansions are about the cube centres (regular offsets; measured on a lattice, as accurate
/// per M2L as tight-box centres with a correspondingly smaller theta, and the periodic lattice
/// needs the root at the box centre).
Tree build_tree(const std::vector<Vec3>& x, const std::vector<double>& sigma, const Vec3& center,
                double half, int ncrit, TreeBuild how = {});

/// The second half of build_tree: the cells of points already in Morton order (perm: sorted ->
/// input index, skey: their keys in the cube of centre `center` and half side `half` (fmm/morton.h),
/// x and sigma (or empty) in sorted order).  SortedSourcesGpu (fmm/particles_gpu.h) sorts on the GPU.
Tree tree_from_sorted(std::vector<int> perm, const std::vector<std::uint64_t>& skey, std::vector<Vec3> x,
                      std::vector<double> sigma, const Vec3& center, double half, int ncrit, int min_level = 0);

/// tree_from_sorted in its three steps, for callers that keep the points elsewhere (the GPU):
/// split_cells: the cells of n points from their sorted keys alone (ranges, geometry, links;
/// extents left at their defaults);
std::vector<Cell> split_cells(const std::uint64_t* skey, int n, const Vec3& center, double half, int ncrit,
                              int min_level = 0);
/// The level whose cells hold at most ncrit of n points spread evenly over the cube: where the
/// tree of all of them has its leaves on a lattice, and a rank's part of it should have them too
/// (a rank of a thin slab, counting only its own points, stops splitting levels above: its
/// leaves' cubes reach far beyond its points, and the near field takes 5x the pairs).
int whole_set_leaf_level(long long n, int ncrit);
/// cell_extents: tight boxes, radii and sigma_max of every cell from the sorted points (sigma
/// may be empty: sigma_max 0); an empty cell keeps bmin = 1e300, bmax = -1e300, radius 0;
void cell_extents(std::vector<Cell>& cells, const std::vector<Vec3>& x, const std::vector<double>& sigma);
/// index_levels: Tree::levels from the cells.
void index_levels(Tree& t);

/// [lo, hi] grown to the tight box of the points x (each wrapped into the periodic box first
/// with wrap, morton::wrap); min and max are exact, so the threads' reduction gives the serial box.
void extend_bounds(const std::vector<Vec3>& x, bool wrap, Vec3& lo, Vec3& hi);
/// Bounding cube (centre, half side) of one or two point sets, enlarged by a relative 1e-6.
void bounding_cube(const std::vector<Vec3>& a, const std::vector<Vec3>* b, Vec3& center, double& half);
/// The same from the points' bounding box [lo, hi] (GpuEvaluator measures it on the device).
void cube_of_box(const Vec3& lo, const Vec3& hi, Vec3& center, double& half);

}  // namespace vh::fmm
