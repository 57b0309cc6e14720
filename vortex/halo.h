// Particles between the ranks of the vortex solver (docs/design.md, "The vortex solver on
// several ranks").  The particle lattice is split into z-slabs like the spectral grid
// (core/slab.h: rank r holds the lattice planes z0 … z0 + nz − 1), and a rank owns the
// particles whose nearest lattice plane is one of its own.  Two movements:
//   ghosts     the blob sums at a rank's planes (the reinitialisation, the monitors) need every
//              particle whose stencil, cut off at `cutoff` σ, reaches one of them (vortex/blobs.h):
//              Halo sends each particle to every rank whose planes its stencil reaches, the
//              owner included;
//   migration  between reinitialisations (vortex.reinit_every > 1) particles drift out of their
//              slab: migrate() hands each to the owner of its nearest plane, with the per-particle
//              history.  With a reinitialisation every step the new lattice particles are born on
//              their owner and nothing migrates.
// Order: a receiver takes the particles in rank order and each sender's in its own index order.
// After a reinitialisation the ranks' particles in rank order are the one-rank solver's lattice
// order, so the blob sums at a point add the same particles in the same order on any rank count.
// Nothing here is in the FMM's way: it asks only for each rank's box (fmm/partition.h).
#pragma once

#include <cstddef>
#include <vector>

#include "base/comm.h"
#include "base/error.h"
#include "core/slab.h"
#include "vortex/particles.h"

namespace vh::vortex {

/// The rank of the slab decomposition `lattice` that owns a particle at height z: the one
/// holding the lattice plane nearest to z (periodic).
int owner_of(const Slab& lattice, double z);

/// Whether this rank (lattice.rank) owns some height in [zlo, zhi] (owner_of of some z there).
bool owns_any(const Slab& lattice, double zlo, double zhi);

/// The exchange of ghost particles for the blob sums at this rank's planes (collective).
class Halo {
 public:
  /// Plans it from the rank's particles (positions wrapped into the box, cores sigma).
  Halo(const Slab& lattice, const std::vector<Vec3>& x, const std::vector<double>& sigma, double cutoff);

  /// The values `v` (one per particle of this rank) of every particle whose stencil reaches this
  /// rank's planes, in rank order and each rank's index order.  One rank: `v` itself, no copy;
  /// else `buf`, filled.  Collective.
  template <class T>
  const std::vector<T>& gather(const std::vector<T>& v, std::vector<T>& buf) const {
    if (comm_.size() == 1) return v;
    VH_CHECK(v.size() == total_, "Halo::gather: one value per particle expected");
    buf.resize(recv_displs_.back() + recv_counts_.back());
    exchange(v.data(), sizeof(T), buf.data());
    return buf;
  }

  /// Particles this rank receives from other ranks, and sends to them.
  std::size_t received() const { return received_; }
  std::size_t sent() const { return sent_; }

 private:
  void exchange(const void* v, std::size_t elem_bytes, void* out) const;
  Comm comm_;
  std::vector<std::size_t> send_index_;  ///< particles to send, grouped by destination rank
  std::vector<std::size_t> send_counts_, send_displs_, recv_counts_, recv_displs_;
  std::size_t total_ = 0, received_ = 0, sent_ = 0;
};

/// Hands every particle of p (and its rows of the per-particle arrays `carried`, e.g. the AB2
/// history; empty arrays are left alone) to the rank that owns it (owner_of).  Particles that
/// stay keep their order, arrivals follow in rank order.  Returns how many left this rank.
/// Collective; one rank: nothing moves.
std::size_t migrate(const Slab& lattice, Particles& p, const std::vector<std::vector<Vec3>*>& carried);

}  // namespace vh::vortex
