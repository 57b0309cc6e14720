// The device twin of core/fft.h's SlabFft: 3-D real FFTs of a field on the z-planes of a slab's
// ranks, on device arrays (cuFFT), normalised as Fft3d, the coefficients in the slab's
// [kz][slot][kx] order.
//   One rank: one 3-D plan each way (cuFFT's [kz][ky][kx] half layout is the slab's).
//   R > 1: SlabFft's steps on the device. Inverse: the z transforms of the rank's slots (a side,
//   out of place from the caller's coefficients, which stay), the all-to-all through the ranks'
//   DeviceComm, the received rows into the rank's [z][ky][kx] planes (b side) by
//   slab_transpose's rows (core/slab.h: the same table and index function as SlabFft's), then
//   y and x as one batched 2-D c2r over the rank's planes. Forward the reverse, 2-D r2c first.
// Work on the legacy default stream; the DeviceComm's stream must be one that orders with it
// (created without cudaStreamNonBlocking): its exchange waits for the transforms before it and
// is complete when alltoallv returns.
// Built with CUDA only (VH_HAVE_CUDA). Its test: tests/mpi/test_spectral_mpi.cpp
// MpiGpu.SlabFftOnTheGpuEqualsTheCpus (against SlabFft on the ranks' slabs, Fft3d on one rank).
#pragma once

#include <cstddef>
#include <memory>

#include "core/slab.h"

namespace vh {

class DeviceComm;

class GpuSlabFft {
 public:
  /// Plans the transforms of slab s. R > 1: `dc` moves the all-to-all (must outlive this); one
  /// rank: unused (may be null).
  GpuSlabFft(const Slab& s, DeviceComm* dc);
  ~GpuSlabFft();
  GpuSlabFft(const GpuSlabFft&) = delete;
  GpuSlabFft& operator=(const GpuSlabFft&) = delete;

  const Slab& slab() const { return slab_; }
  /// c = scale · Σ_x u(x) e^{−ik·x} on device arrays: u the slab's planes (left unchanged), c its
  /// modes. scale = 1/N³ is SlabFft::forward; a caller that folds the scale into a later pass
  /// passes 1 and saves a pass over c. Collective.
  void forward(const double* u, Complex* c, double scale);
  /// u = Σ_k c(k) e^{ik·x} on the slab's planes (device arrays; c left unchanged). Collective.
  void inverse(const Complex* c, double* u);
  /// Device memory the plans and buffers hold (cuFFT's work areas included).
  std::size_t device_bytes() const;

 private:
  struct Impl;
  Slab slab_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vh
