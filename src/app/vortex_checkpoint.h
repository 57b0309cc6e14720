// The vortex solver's state in a checkpoint group: the particles as global arrays "x", "alpha",
// "gamma" [n][3] and "sigma" [n], the AB2 history "u_prev", "dalpha_prev", "dgamma_prev" [n][3]
// (all three or none), n the particle lattice's points in rank order (after a reinitialisation
// the one-rank solver's lattice order), and the scalars as attributes of the group. So any rank
// count restarts from any other.
//
// Both directions move a bounded chunk of particles at a time, so that no rank holds more than
// its own particles and one chunk (issue 25: memory O(N/R) a rank, the restart included): rank 0
// writes the ranks' parts as they arrive, in rank order, and beside the positions their boxes,
// "x_boxes" [n_boxes][6] (lowest x, y, z, highest x, y, z of each `rows` consecutive particles of
// the file, `rows` its attribute: 2^16; each component an interval of the periodic box,
// vortex::PeriodicInterval, so that particles of the first plane that drifted below z = 0 and
// wrapped to the top leave their box a few cells high, lo below 0). Every rank reads the
// positions a chunk at a time, skips the chunks whose boxes it keeps nothing from, and keeps the
// particles its `keep` takes, reading the other arrays only where it keeps them; each part is
// checked (vortex/validate.h), and the positions against their box. So a z-slab's I/O is its own
// share and the few chunks that straddle its faces (in lattice order, z slowest, a box is one or
// two planes' particles). Files written before the boxes are read whole, as before; those
// written before the periodic intervals (every lo ≥ 0) are read by the same rule.
#pragma once

#include <cstddef>
#include <functional>

#include "base/comm.h"
#include "core/grid.h"
#include "io/h5.h"
#include "vortex/solver.h"
#include "vortex/validate.h"

namespace vh::app {

/// Particles a chunk holds: 2^16, 152 B each with the history (9.5 MiB for the seven arrays).
inline constexpr std::size_t kParticleChunk = std::size_t(1) << 16;

/// Writes `st` (this rank's particles; the scalars, the same on every rank, from rank 0) into
/// `grp`. Collective over comm; errors of the writes on rank 0 go to `err` (the messages go on).
void save_vortex_state(h5::Id grp, const vortex::State& st, RootErrors& err, const Comm& comm,
                       std::size_t chunk = kParticleChunk);

/// Which particles a rank keeps, by position (empty: all of them).
using KeepParticle = std::function<bool(const vortex::Vec3& x)>;
/// Whether the rank's KeepParticle may take some position in the box [lo, hi], each component
/// periodic (lo may lie below 0: vortex::PeriodicInterval; true where unsure; empty: read every
/// chunk). The ranks' predicates must keep every position of the box
/// [0, 2π)³ somewhere, so that every chunk is read, and its boxes checked, by some rank.
using KeepBox = std::function<bool(const vortex::Vec3& lo, const vortex::Vec3& hi)>;

/// The state in `grp`, whose arrays must hold one particle per point of `lattice` (InputError
/// naming the dataset otherwise, and for any value vortex/validate.h refuses against `b`, with
/// the file's index), with the particles `keep` takes in the file's order. `expected`: about
/// how many it keeps (room reserved). Every rank reads and checks the positions of the chunks
/// whose boxes `may_keep` takes (all of them where the file has no boxes), and the other arrays
/// only where it keeps the particles; `positions_read` (if given) gets how many positions it
/// read. Collective over comm: a value one rank refuses is refused by all, with that rank's
/// message.
vortex::State load_vortex_state(h5::Id grp, const Grid& lattice, const vortex::Bounds& b, const KeepParticle& keep,
                                const KeepBox& may_keep, std::size_t expected, const Comm& comm,
                                std::size_t chunk = kParticleChunk, std::size_t* positions_read = nullptr);

}  // namespace vh::app
