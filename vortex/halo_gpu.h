// Ghost particles between the GPUs of the vortex solver on R ranks (issue 25; the device side of
// vortex/halo.h). A rank holds its own particles only; what its sums need of the others' is
// said in z planes of some grid along z (`planes` of side `side`, periodic): a window of them,
// [first, first + count) mod planes, widened by `reach` planes either way. Each rank gives its
// window; every particle goes to every rank whose widened window holds its plane floor(z / side)
// (base/planes.h: plane_of, near_window; the test the blob sums' selection has always made), its
// own rank included. Only the ranks whose widened windows meet the planes this rank's particles
// occupy are looked at (one selection each): on slabs, the neighbours, whatever R.
// Two users, one mechanism:
//   the blob sums   the lattice's planes, the rank's slab, the stencil's reach (vortex/blobs.h):
//                   the same particles in the same order as the gathered set's selection, so the
//                   same bits;
//   the FMM         the uniform levels' leaf planes, the planes the rank's particles occupy, the
//                   near field's reach (fmm::GpuEvaluator::source_planes).
// What a rank sends grows with its slab's faces, not with N: the all-gathers of every particle go.
// Order: a receiver takes the particles in rank order and each sender's in its own index order.
// The selection is planned once per set of positions (collective); exchange() then moves any
// per-particle values along it. CUDA sources only.
#pragma once

#include <cstddef>
#include <vector>

#include "base/device_buffer.h"

namespace vh {
class DeviceComm;
}

namespace vh::vortex {

/// A rank's window of z planes and the reach of its sums (the header).
struct GhostWindow {
  int planes = 1;     ///< planes of the grid along z (the period)
  double side = 0;    ///< their side: a height z is in plane floor(z / side) mod planes
  int first = 0;      ///< the window: planes [first, first + count) mod planes
  int count = 0;
  int reach = 0;      ///< planes either way beyond the window
};

class DeviceHalo {
 public:
  /// Plans the exchange of this rank's n particles (positions x: device, 3 a particle) to the
  /// ranks whose windows (every rank gives its own: `mine`; one grid on every rank) hold them.
  /// Collective over comm's ranks.
  void plan(DeviceComm& comm, const double* x, long long n, const GhostWindow& mine);
  /// The values v (k doubles a particle, of this rank's n) of the particles planned to this
  /// rank into out (room for received() k doubles), in the header's order. Collective.
  void exchange(const double* v, int k, double* out);
  /// The same into `all`, grown as needed.
  void exchange(const double* v, int k, DeviceArray<double>& all);

  /// Particles this rank receives, its own included (the last plan()).
  long long received() const { return received_; }
  /// Where this rank's own particles begin among those it receives, and how many there are.
  long long own_first() const { return own_first_; }
  long long own_count() const { return own_count_; }
  /// Particles this rank sends to other ranks and receives from them (its own not counted).
  long long sent_out() const { return sent_out_; }
  long long received_in() const { return received_ - own_count_; }

 private:
  DeviceComm* comm_ = nullptr;
  std::vector<std::size_t> sc_, sd_, rc_, rd_;  // counts and displacements, particles
  long long received_ = 0, own_first_ = 0, own_count_ = 0, sent_out_ = 0;
  DeviceArray<int> index_;   // the particles sent, grouped by destination rank
  DeviceArray<int> planes_;  // the planes this rank's particles occupy
  DeviceArray<double> send_;
  DeviceArray<int> count_;
  DeviceBytes flags_, temp_;
};

}  // namespace vh::vortex
