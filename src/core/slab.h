// Slab decomposition of the N³ grid over the R ranks of a Comm (README, "MPI").
//
// Physical space: rank r holds the z-planes [z0, z0 + nz) of the [z][y][x] arrays of
// grid.h, x and y whole: block(N, R, r).
//
// Spectral space (grid.h half layout [kz][ky][kx]): a rank holds whole kz columns and kx
// rows for a set of ky indices, its slots, stored [kz][slot][kx]. The two distributions
// differ in the axis they split (z against ky), so a 3-D transform is local 1-D and 2-D
// transforms around one all-to-all transpose (core/fft.h SlabFft, spectral/slab_kernel.h).
//   One rank: slot = ky index, so a slab is the whole field in grid.h's own layout and
//   every loop over it is the loop the one-rank code always ran (bit-identical results).
//   R > 1: the ky that the spectral solver keeps (|ky| ≤ kmax, counted by
//   jy = ky + kmax = 0 … 2 kmax) go to the ranks in blocks, in jy order, as slots
//   0 … njy − 1; the other ky indices (kmax + 1 … N − kmax − 1, always zero in the solver's
//   state) follow as slots njy … , in blocks from the last rank down, so that ranks beyond
//   2 kmax + 1 hold some. Blocks of the kept ky balance the solver's z passes for the 2/3
//   rule too, where a plain split of the ky indices would leave the middle ranks without
//   kept modes.
// R ≤ N: every rank then holds at least one z-plane of the N grid and one ky (README says
// where slabs stop scaling).
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "base/comm.h"
#include "core/grid.h"
#include "core/hd.h"

namespace vh {

/// First item of part i when n items go to `parts` parts in blocks (the first n % parts
/// parts get one item more).
VH_HD inline int block_start(int n, int parts, int i) {
  const int q = n / parts, r = n % parts;
  return i * q + (i < r ? i : r);
}
/// Items of part i (see block_start).
VH_HD inline int block_count(int n, int parts, int i) { return n / parts + (i < n % parts ? 1 : 0); }
/// The part that holds item j.
VH_HD inline int block_owner(int n, int parts, int j) {
  const int q = n / parts, r = n % parts;
  return j < r * (q + 1) ? j / (q + 1) : r + (j - r * (q + 1)) / q;
}

/// A slab's spectral layout as plain values, for per-mode loops on the host and the device:
/// storage index m of the rank's [kz][slot][kx] arrays → (ix, iy, iz), iy the ky index of m's
/// slot (Slab::ky_index is this one). One rank: slots = N, slot = ky index (modes::mode_of).
struct SlabModes {
  int n = 0;                         ///< the grid's points a side
  int slots = 0;                     ///< ky indices held
  bool whole = true;                 ///< one rank
  int kmax = 0, jy0 = 0, njy = 0, nr0 = 0;  ///< Slab's, for R > 1

  VH_HD int ky_index(int slot) const {
    if (whole) return slot;
    if (slot < njy) {
      const int ky = jy0 + slot - kmax;
      return ky >= 0 ? ky : ky + n;
    }
    return kmax + 1 + nr0 + slot - njy;
  }
  VH_HD void mode(long long m, int& ix, int& iy, int& iz) const {
    const int nxh = n / 2 + 1;
    ix = int(m % nxh);
    const long long r = m / nxh;
    iy = ky_index(int(r % slots));
    iz = int(r / slots);
  }
  /// Modes held: N · slots · (N/2 + 1).
  VH_HD long long count() const { return (long long)n * slots * (n / 2 + 1); }
};

struct Slab {
  Grid grid;         ///< the global grid
  Comm comm;         ///< the ranks sharing the field
  int rank = 0;      ///< the rank this slab belongs to (of_rank() describes the others)
  int nranks = 1;    ///< ranks of the decomposition (comm.size(), or layout()'s)
  int kmax = 0;      ///< largest kept |k_i| of the spectral solver (orders the ky for R > 1)
  int jy0 = 0, njy = 0;  ///< kept ky held: jy0 … jy0 + njy − 1 (jy = ky + kmax), slots 0 … njy − 1
  int nr0 = 0, nnr = 0;  ///< other ky held: indices kmax + 1 + nr0 + i, slots njy + i (R > 1)
  int z0 = 0, nz = 0;    ///< physical z-planes held

  /// One rank: the whole grid in grid.h's layout (kmax only matters to the solver's passes).
  static Slab whole_grid(const Grid& g, int kmax = -1);
  /// This rank's slab of g over `comm` for a solver keeping |k_i| ≤ kmax.
  static Slab make(const Grid& g, int kmax, const Comm& comm);
  /// Rank r's slab of a decomposition over R ranks without the ranks themselves (its comm
  /// is the one-rank Comm): for checking the layout of any R.
  static Slab layout(const Grid& g, int kmax, int r, int R);
  /// The slab of another rank of the same decomposition.
  Slab of_rank(int r) const;

  int ranks() const { return nranks; }
  bool whole() const { return nranks == 1; }
  /// Number of ky indices held.
  int slots() const { return whole() ? grid.n : njy + nnr; }
  /// The ky index (0 … N − 1) of a slot.
  int ky_index(int slot) const { return modes().ky_index(slot); }
  /// The spectral layout as plain values (per-mode loops on the device).
  SlabModes modes() const;
  std::size_t local_modes() const { return std::size_t(grid.n) * slots() * (grid.n / 2 + 1); }
  std::size_t local_points() const { return std::size_t(nz) * grid.n * grid.n; }
  /// Storage index of mode (ix, slot, iz) in a rank's [kz][slot][kx] arrays.
  std::size_t mode_index(int ix, int slot, int iz) const {
    return (std::size_t(iz) * slots() + slot) * (grid.n / 2 + 1) + ix;
  }
};

inline SlabModes Slab::modes() const {
  SlabModes m;
  m.n = grid.n;
  m.whole = whole();
  m.slots = slots();
  m.kmax = kmax;
  m.jy0 = jy0;
  m.njy = njy;
  m.nr0 = nr0;
  return m;
}

/// The all-to-all of a 3-D transform on R > 1 ranks (core/fft.h SlabFft, core/fft_gpu.h its
/// device twin). The a side is the rank's modes [kz][slot][kx]; the b side its planes of every
/// ky, [z][ky][kx]. To rank r go the rank's slots at r's planes (a_counts[r] values from
/// a_displs[r]: kz is outermost, so they lie together); from rank r come r's slots at this
/// rank's planes, [z][r's slot][kx], one message after the other in rank order (b_counts,
/// b_displs). Counts and displacements in complex values. Row q of the b side's messages (N/2 + 1
/// values) is row rows[q] = z N + ky of the [z][ky][kx] planes (transpose_b_index).
struct SlabTranspose {
  std::vector<std::size_t> a_counts, a_displs, b_counts, b_displs;
  std::vector<int> rows;
};
SlabTranspose slab_transpose(const Slab& s);

/// Where value q of the b side's messages lies in the [z][ky][kx] planes (nxh = N/2 + 1).
VH_HD inline std::size_t transpose_b_index(const int* rows, int nxh, std::size_t q) {
  return std::size_t(rows[q / nxh]) * nxh + q % nxh;
}

/// Calls f(m, ix, iy, iz) for every mode of the rank's slab: m its storage index, iy the ky
/// index of its slot; in parallel over (kz, slot). With one rank slot = ky index, so this is the
/// loop over the half layout of grid.h.
template <class F>
void for_each_mode(const Slab& s, F&& f) {
  const int n = s.grid.n, nxh = n / 2 + 1, sl = s.slots();
#pragma omp parallel for collapse(2) schedule(static)
  for (int iz = 0; iz < n; ++iz)
    for (int j = 0; j < sl; ++j) {
      const int iy = s.ky_index(j);
      for (int ix = 0; ix < nxh; ++ix) f(s.mode_index(ix, j, iz), ix, iy, iz);
    }
}

/// This rank's coefficients of a vector field: c[i] holds slab.local_modes() values in the
/// slab's [kz][slot][kx] order. With one rank it is a SpectralVector's layout.
struct SpectralSlab {
  Slab slab;
  std::array<std::vector<Complex>, 3> c;

  SpectralSlab() = default;
  explicit SpectralSlab(const Slab& s) : slab(s) {
    for (auto& a : c) a.assign(s.local_modes(), Complex(0.0, 0.0));
  }
  /// The whole field of one rank (the arrays are moved in).
  static SpectralSlab whole(SpectralVector u);
  /// Back to a SpectralVector (one rank; the arrays are moved out).
  SpectralVector to_vector() &&;
};

}  // namespace vh

namespace vh {

/// Collective: rank 0 receives the kz-plane `iz` of component c of the global field in
/// grid.h order ([ky][kx], N (N/2 + 1) values) into `plane`; the other ranks pass nullptr.
/// Checkpoints go out plane by plane through rank 0 (app/steppers.cpp).
void gather_plane(const SpectralSlab& u, int c, int iz, Complex* plane);
/// The inverse: every rank takes its slots of the plane rank 0 holds.
void scatter_plane(const Complex* plane, int c, int iz, SpectralSlab& u);

}  // namespace vh
