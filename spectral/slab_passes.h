// The CPU slab passes (slab_kernel.h): one evaluation of the nonlinear term as FFTW line
// transforms of the kept modes with the two all-to-all transposes between the ranks of a
// slab, and max|u| on the N grid the same way. What the CPU solver runs on R > 1 ranks
// (and on one rank with Params::transforms = fused); the reference of the GPU's cuFFT slab
// path (gpu_slab.cu). Internal to spectral/.
#pragma once

#include <memory>

#include "core/slab.h"
#include "spectral/rhs_kernel.h"
#include "spectral/slab_kernel.h"
#include "spectral/solver.h"

namespace vh::spectral {

class SlabPasses {
 public:
  /// Plans for geometry g (its M) and N (max|u|) on slab s; `threads` for FFTW and OpenMP.
  SlabPasses(const kernel::Geometry& g, const Slab& s, int threads);
  ~SlabPasses();
  SlabPasses(const SlabPasses&) = delete;
  SlabPasses& operator=(const SlabPasses&) = delete;

  /// load: the first stage input (û and ω̂ of the state arr.u0) into the z lines.
  void load(const kernel::StageArrays<double>& arr);
  /// ZI, Z→Y, YI, XC, YF, Y→Z, ZF (collective).
  void transforms();
  /// post of RK4 stage s (or kRhsOnly) after transforms(); leaves the next stage's input.
  void post(int s, bool explicit_visc, double nu, double dt, const kernel::StageArrays<double>& arr);
  /// max |u_i| over the N³ grid points of the state arr.u0 (collective). Leaves the lines
  /// without a stage input (load again).
  double max_velocity(const kernel::StageArrays<double>& arr);
  /// The line FFTs of one evaluation without the exchanges (time_transforms()).
  void local_ffts();
  const ExchangeStats& stats() const { return stats_; }

 private:
  struct Lines;
  /// The all-to-all of F fields' messages (S → R): to the planes' ranks, or back.
  void alltoall(const kernel::SlabLayout& l, int fields, bool to_planes);
  void exchange_to_planes(const Lines& L, int fields);
  void exchange_to_columns(const Lines& L);
  void to_rows(const Lines& L, int fields);

  Slab slab_;
  int threads_;
  std::unique_ptr<Lines> eval_, maxu_;  // transforms of size M, and of size N for max|u|
  struct Buffers;
  std::unique_ptr<Buffers> buf_;
  ExchangeStats stats_;
};

}  // namespace vh::spectral
