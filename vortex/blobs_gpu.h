// GPU counterpart of the blob sums of vortex/blobs.cpp (CUDA builds, VH_HAVE_CUDA): a tiled
// gather.  The particles are sorted into lattice cells on the device; a thread block owns a tile
// of lattice points, stages the particles whose stencils reach it (their 1-D weights at the
// tile's points, computed there) in shared memory, and each thread sums its own points in a
// fixed order: no atomics, the same bits on every run.  Internal to vh_vortex: host particles
// go through vorticity_on_lattice / divergence_on_lattice / blob_sums with gpu = true
// (gather_gpu below), device-resident ones (the GPU vortex solver, solver_gpu.h) through
// DeviceBlobSums; both run the same kernels.  Host header, no CUDA syntax.
#pragma once

#include <cstddef>
#include <memory>

#include "core/grid.h"

namespace vh::vortex::detail {

/// Doubles per particle in gather_gpu's input: x, y, z, α_x, α_y, α_z, σ.
constexpr int kPacked = 7;

/// Page-locked host memory of at least `count` doubles (vh::pinned_staging, base/device_buffer.h:
/// one buffer per process, kept).  The caller packs gather_gpu's input into it and copies the sums out of it with
/// all host threads: cudaMemcpy from pageable memory runs at the driver's one-thread speed.
double* pinned_doubles(std::size_t count);

/// Sums at every lattice point of g from the np particles packed in `host` (page-locked,
/// kPacked doubles each), written over host[0 ...): the three components of ω_σ one after the
/// other (divergence = false) or ∇·ω_σ (divergence = true), g.points() values each.  m: stencil
/// points per direction (stencil_points in blobs.cpp); cutoff in σ.  Needs np and g.points()
/// below 2^31.  Throws vh::LibraryError on CUDA errors.
void gather_gpu(std::size_t np, const Grid& g, double cutoff, int m, bool divergence, double* host);

/// The blob sums of particles that live on the device.  sort() sorts them into the lattice cells
/// and prepares their constants, once per set of positions and cores; sum() then adds any
/// number of strength sets at the lattice points: Σ_p scale·s_p ζ_σp(x_i − x_p) (or the
/// divergence Σ_p scale·s_p·∇ζ_σp(x_i − x_p)), the same kernels and bits as gather_gpu.  All
/// pointers are device pointers; arrays of vectors are n × 3, xyz interleaved (std::vector<Vec3>'s
/// layout); sums are written as gather_gpu's, component c at out[c·g.points() …].  The calls are
/// asynchronous on the default stream.  Device memory, grown as needed and kept: per particle
/// 7 doubles and 10 ints (96 B), per lattice point 1 int; the sort's keys and scratch live in
/// those.  Needs np and g.points() below 2^31 (std::runtime_error otherwise; vh::LibraryError on
/// CUDA errors).
class DeviceBlobSums {
 public:
  DeviceBlobSums();
  ~DeviceBlobSums();
  DeviceBlobSums(const DeviceBlobSums&) = delete;
  DeviceBlobSums& operator=(const DeviceBlobSums&) = delete;

  /// np particles at d_x with cores d_sigma, summed later at the lattice points of g; m: stencil
  /// points per direction (vortex/blobs.h, stencil_points), cutoff in σ.
  /// d_x and d_sigma are read here only.
  void sort(const double* d_x, const double* d_sigma, std::size_t np, const Grid& g, double cutoff, int m);
  /// The sums of the sorted particles with strengths scale · d_s (read now, in the sorted order)
  /// into d_out: 3 components, or 1 with `divergence`. With nz ≥ 0 only at the z-planes
  /// [z0, z0 + nz) of the lattice (a rank's slab), written as a lattice of nz planes (component
  /// c at d_out[c·nz·n² …]), each value bit for bit the whole lattice's.
  void sum(const double* d_s, double scale, bool divergence, double* d_out, int z0 = 0, int nz = -1) const;
  /// The sums of three strength sets at once, set j's strengths scale[j] · d_s[j] into d_out[j]
  /// as sum() writes them: one pass of the stencils and weights for all nine components (the
  /// reinitialisation's γ and AB2 history), each value bit for bit what sum() gives it.
  void sum3(const double* const d_s[3], const double scale[3], double* const d_out[3], int z0 = 0,
            int nz = -1) const;
  /// Device memory held.
  std::size_t device_bytes() const;

  struct Impl;  ///< blobs_gpu.cu

 private:
  std::unique_ptr<Impl> impl_;
};

/// Seconds the last gather_gpu call spent from its first transfer to the end of its last one
/// (uploads, cell sort, gather, download; CUDA events): what blobs_bench reports.
double last_gather_gpu_seconds();

}  // namespace vh::vortex::detail
