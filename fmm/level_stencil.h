// The M2L of one complete level of a periodic octree as a stencil (issue 26): the classical
// uniform-level interaction list, with the traversal's acceptance test.  Where the particles fill
// the box evenly (the vortex solver's lattice) every cell of a level exists, and a target takes
// from its own level the cells that are far from it while their parents are not far from its
// parent, so the sources relative to a target depend only on its position in its parent (its
// parity c = (ix & 1) + 2 (iy & 1) + 4 (iz & 1)); the level's M2L is then a convolution of the
// level's multipole field with one stencil per parity (fmm/m2l_fft_gpu.h).
//
// Why by rule and not from the lists of build_lists (fmm/traverse.h): the dual traversal splits
// pairs from the two roots down, so what a target meets on its own level depends on where every
// one of its ancestors sits in the box; measured on a 64^3 lattice (theta 0.6, 64 a leaf), the
// lists of the level-L cells repeat only with the period of the box, at every level, and a third
// to a half of their entries pair cells of different levels.  A convolution needs the lists of
// this rule instead.
//
// The rule, in cells of the level (side s; full cells, radius rho = sqrt(3)/2 s and the cells
// as boxes: the traversal's test with both radii and boxes at their largest): a source at
// offset t (image included, so t may leave the box) is far when 2 rho < theta |t| s and the
// boxes' gap, s sqrt(sum_d max(0, |t_d| - 1)^2), is at least the regularisation cut-off rcut
// (fmm/traverse.h); target parity c takes t when t is far and the parents' offset
// T = floor((c + t) / 2) is not (in parent cells), which bounds t.  A far pair's children are
// far, so each pair of leaves is near (the P2P: near_stencil) or taken on exactly one level.
//
// The slack: where every particle lies inside its leaf by margins whose sum across any face
// (the smallest low-side margin plus the smallest high-side margin) is known, the particles'
// boxes of cells at offset t are apart by (|t_d| - 1) s + slack along each axis d with t_d != 0,
// not by the whole cells' (|t_d| - 1) s.  The lattice of 3 points a side in a leaf of side 3h
// (the vortex solver's 3 2^k points a side) fills 2h of it: slack h, a third of a leaf, and the
// cut-off's near leaves fall from 117 to 93 (bench/RESULTS.md, 2026-12-03 "the near field of
// lattices whose leaves hold 27 particles").  The slack in cells halves with each coarser level;
// far pairs' children stay far.
#pragma once

#include <array>
#include <vector>

#include "fmm/tree.h"

namespace vh::fmm {

/// The same-level M2L offsets of a uniform level.
struct LevelStencil {
  int level = -1;  ///< n = 2^level cells a side
  /// offsets[c]: what a target of parity c takes, source minus target in cells (one entry per
  /// source image), sorted.
  std::array<std::vector<std::array<int, 3>>, 8> offsets;
  /// Number of same-level translations the stencil stands for: n^3 / 8 times the entries.
  long long translations() const;
};

/// The stencil of the header's rule for `level` (>= 1), the acceptance parameter theta in
/// (0, 1), the cut-off rcut in cells of the level (0: none) and the particles' slack in cells
/// of the level, in [0, 1] (0: whole cells).
LevelStencil uniform_stencil(int level, double theta, double rcut_cells = 0, double slack_cells = 0);

/// The pair test of the header's rule: offset t (cells) far at theta, rcut_cells and slack_cells.
bool uniform_far(const std::array<int, 3>& t, double theta, double rcut_cells, double slack_cells = 0);

/// The offsets (cells, sorted) that are not far: the leaves a leaf takes by P2P, itself included.
std::vector<std::array<int, 3>> near_stencil(double theta, double rcut_cells, double slack_cells = 0);

/// The largest |t_z| of near_stencil: how many planes of leaves either way a leaf's P2P reaches
/// (the ghosts of the vortex solver's GPU ranks, GpuEvaluator::source_planes).
int near_z_reach(double theta, double rcut_cells, double slack_cells = 0);

/// The level whose cells hold ncrit or fewer of n evenly spread points on average, at most 7:
/// the depth of the uniform levels (fmm/uniform_gpu.h).
int uniform_depth(double n, int ncrit);

/// The most points a cell of the uniform depth L = uniform_depth(n, ncrit) may hold and stay a
/// leaf: ncrit, or 8 times the level's mean n / 8^L where that is more.  An evenly spread set
/// holds its mean give or take the rounding of a lattice to the cells, up to (⌈a⌉ + 1)³ points
/// of a mean a³ with a ≥ (ncrit/8)^(1/3) (322³ points at ncrit 128: 125 to 216, mean 127),
/// which ncrit alone would split into a tree that is not complete; a cell denser than 8 times
/// the mean (clusters) is split, and the tree then takes the lists.
int uniform_leaf_limit(double n, int ncrit);

/// The parents' z offsets that a stencil's entries take, T_z = floor((c_z + t_z) / 2) over every
/// parity c and offset t (images not folded): the target parents of planes [z0, z0 + nz) take
/// their sources from the parent planes [z0 + lo, z0 + nz + hi) (mod the level's n / 2).
struct ParentReach {
  int lo = 0, hi = 0;
};
ParentReach parent_z_reach(const LevelStencil& st);

/// The z extent of the FFT M2L (fmm/m2l_fft_gpu.h) for a window of `planes` target parent
/// planes of `level` whose stencil reaches `r`: planes + r.hi - r.lo rounded up to a length
/// of factors 2, 3, 5 and 7, or the whole level's n / 2 planes where that is not less.
int m2l_fft_window_extent(int level, const ParentReach& r, int planes);

/// The cells of levels 0 .. level - 1 of a complete octree, (8^level - 1) / 7: where level
/// `level`'s cells start in one whose levels follow one another (fmm/tree_gpu.h).
inline long long level_offset(int level) { return ((1LL << (3 * level)) - 1) / 7; }

/// The parity differences whose tables M2LFftGpu transforms at a time while it builds a level's
/// 27 (fmm/m2l_fft_gpu.cu): the tables in real space and cuFFT's work area for them are 3/27 of
/// the tables each, where the whole set at once held as much again as the tables.
constexpr int kFftTableChunk = 3;

/// Device bytes of the FFT M2L of one level at order p (fmm/m2l_fft_gpu.h): its tables and
/// transforms over `extent` parent planes in z (0: the whole level's n / 2), and with
/// `building` the transient of their construction too (a chunk of kFftTableChunk tables in real
/// space and as much for cuFFT's work area).
double m2l_fft_bytes(int level, int p, bool building, int extent = 0);

/// Device bytes of the FFT M2L of the uniform levels 2 .. L, the deepest level's with the
/// transient of its construction (it is built while the others are held), at order p and
/// acceptance theta with the cut-off rcut_cells_L in cells of level L, for a lattice of n points a
/// side split into R z-slabs: a rank's windows (m2l_fft_window_extent) over the parent planes its
/// share of ceil(n / R) lattice planes, with a plane of drift either way, reaches; the whole
/// levels at R = 1. The stencils without the lattice's slack, whose reach is the largest.
double m2l_fft_set_bytes(int L, int p, double theta, double rcut_cells_L, int n, int R);

/// The cells of a complete octree of depth L (uniform levels, fmm.m2l fft) whose multipoles and
/// locals one of R ranks keeps (fmm/expansion_rows.h): every cell at R = 1; on R > 1 levels 0
/// and 1 whole and, from level 2 on, the planes of the rank's window of the level's M2L (as
/// m2l_fft_set_bytes takes them: its slab's share with a plane of drift either way, the
/// stencil's reach), 2 (planes + hi − lo) of the level's 2^l, or all of them.
double uniform_expansion_cells(int L, double theta, double rcut_cells_L, int n, int R);

/// The cells of `level` in grid order: grid[(iz n + iy) n + ix] is the index in t.cells of the
/// cell (ix, iy, iz); empty when the level misses a cell.
std::vector<int> level_grid(const Tree& t, int level);

}  // namespace vh::fmm
