// 3-D real-to-complex FFTs on the CPU (FFTW, threads), with the normalisation of grid.h.
//
// forward:  c(k) = (1/n³) Σ_x u(x) e^{−i k·x}     (so that u = Σ_k c(k) e^{i k·x})
// inverse:  u(x) = Σ_k c(k) e^{i k·x}              (no scaling)
// Arrays are [z][y][x] real and [kz][ky][kx] half-layout complex (kx = 0 … n/2).
// Plans use FFTW_ESTIMATE, so results are deterministic for a given size and thread count.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "core/grid.h"
#include "core/slab.h"

namespace vh {

class Fft3d {
 public:
  /// Plans an n³ transform; `threads` ≤ 0 means omp_get_max_threads().
  explicit Fft3d(int n, int threads = 0);
  ~Fft3d();
  Fft3d(const Fft3d&) = delete;
  Fft3d& operator=(const Fft3d&) = delete;

  int n() const { return n_; }
  /// c = FFT(u) / n³. `u` holds n³ values, `c` n·n·(n/2+1); `u` is left unchanged.
  void forward(const double* u, Complex* c);
  /// u = Σ c e^{ikx}. `c` is left unchanged.
  void inverse(const Complex* c, double* u);

  /// Transforms of the three components of a vector field.
  void forward(const VectorField& u, SpectralVector& c);
  void inverse(const SpectralVector& c, VectorField& u);

 private:
  struct Plans;
  int n_;
  std::unique_ptr<Plans> plans_;
};

/// 3-D real FFTs of a field spread over the ranks of a slab (core/slab.h), normalised as
/// Fft3d: coefficients in the slab's [kz][slot][kx] order, grid values on its z-planes.
/// One rank: an Fft3d (the same plans: bit-identical results). R > 1, inverse: 1-D
/// transforms along z of the rank's ky slots, an all-to-all that hands each rank its
/// z-planes of every slot, then along y and x (c2r); forward the reverse. Collective.
class SlabFft {
 public:
  explicit SlabFft(const Slab& s, int threads = 0);
  ~SlabFft();
  SlabFft(const SlabFft&) = delete;
  SlabFft& operator=(const SlabFft&) = delete;

  const Slab& slab() const { return slab_; }
  /// c = FFT(u) / N³: `u` holds the slab's planes, `c` its modes; `u` is left unchanged.
  void forward(const double* u, Complex* c);
  /// u = Σ c e^{ikx} on the slab's planes; `c` is left unchanged.
  void inverse(const Complex* c, double* u);

 private:
  struct Plans;
  Slab slab_;
  std::unique_ptr<Fft3d> whole_;  // one rank
  std::unique_ptr<Plans> plans_;  // R > 1
};

/// FFTW's planner is not thread safe: every plan in the program is made under this lock.
std::mutex& fftw_planner_mutex();

}  // namespace vh
