#include "app/memory_estimate.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "core/slab.h"
#include "fmm/level_stencil.h"
#include "fmm/traverse.h"
#include "spectral/fused.h"
#include "spectral/slab_kernel.h"
#include "vortex/blobs.h"
#include "vortex/solver.h"

namespace vh::app {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Calibration of the host side against the peak RSS of CPU runs (quick.ini with one solver, to
// t/T = 0.01 with fields at the end, 2 threads; the log's "memory" line):
//   spectral 32³, 64³, 128³: 30.9, 110, 734 MiB, estimated 52.8, 140, 836;
//   vortex (fmm.tolerance 1e-3: p 8, ncrit 128) 32³, 48³, 64³, 80³, 96³: 32.3, 99.0, 165, 302,
//   727 MiB; 64³ at 1e-4 (θ 0.6, p 12) 183, at 1e-5 (θ 0.5, p 12) 204 MiB.
// The program itself, its libraries, FFTW's and HDF5's tables and the threads' stacks (21.6 MiB
// at 16³), with room; the CUDA context and libraries add several hundred MiB.
constexpr double kProgramBytes = 40 * kMiB;
constexpr double kCudaHostBytes = 512 * kMiB;
// The vortex solver on the host, per particle: particles, AB2 history, u and ∇u (224 B), the grid
// velocity's targets and results, the lattice fields of reinitialisation, the FMM's tree and
// sorted copies; and per FMM cell, its interaction lists (the M2L and P2P entries of one cell)
// plus its multipole and local expansions, 3 components of (p + 1)(p + 2)/2 complex doubles each.
// The cells follow the lattice: leaves of (N/2^l)³ particles, the first level at or below ncrit
// (64³: leaves of 64; 96³: of 27, hence 727 MiB against 302 at 80³, leaves of 125). Fitted to
// 80³ and 96³ with 10 % to spare: 14 % to 24 % above the other vortex runs. 72³ particles (leaves
// of 91; 2026-11-28, the 48³ grid at the default refine 1.5 and the 72³ grid at refine 1) peaked
// at 242 and 282 MiB, 2 % above what 400 B a particle gave: 480 B leaves 8–10 % there. On
// 2026-11-29 the 72³ run (48³ grid, refine 1.5, with the integrating factor's 48 B a particle,
// which the estimate counts apart) peaked at 267–273 MiB alone on 2 cores and at 283 MiB beside
// another test, 1 MiB above what 480 B gave (282): 520 B gives 296 MiB.
constexpr double kVortexHostPerParticle = 520;
// On R > 1 CPU ranks, per copy of a neighbour's particle over the planes of both reaches: more
// than a ghost's position, core and the three sets of strengths the blob sums take (80 B) or a
// local essential tree particle's position, strength and core (56 B), the rest for the LET's
// multipoles and the exchanges' buffers. With the own
// particles at kVortexHostPerParticle, 2026-12-01 (quick.ini, vortex, domain.n 48 at refine 1.5:
// 72³ particles, one step and a restart for one more, one thread a rank on 2 cores): rank 0's
// peak RSS 140/155 MiB on 2 ranks (estimated 182), 106/116 MiB on 3 (141); one rank 219 (288);
// 40³ (60³ particles) on 2 ranks 95.5 MiB (131).
constexpr double kNearPerParticle = 128;
constexpr double kFmmHostPerCell = 4000;
// The GPU FMM per particle and per cell: the sorted sources, the results, the blob sums' packed
// particles; per cell the interaction lists and the expansions (M, L and the folded
// single-precision M: 120 B per coefficient); and the M2L translation tables. Measured on an
// NVIDIA H200, 2026-12-03 (vortex_step_bench --tolerance 1e-4 --p 10 --m2l lists, the GPU memory
// in use less the solver's own arrays): 1.02, 5.18 and 7.27 GiB at 128³, 192³ and 256³ (leaves of
// 64, 27 and 64 particles): 230 B a particle and 12.2 KB a cell above the tables' 256 MiB, where
// these constants had 400 B a particle from the allocations, never measured (at 2²⁷ particles on
// 4 GPUs it asked 121 GiB of vortex memory a rank where 67 were in use, and with the spectral
// solver 142 GiB: the 512³ case was refused on 4 H200s, where it had run). With 280 B the whole
// device estimate of those runs is 5-13 % above what they held (tests/app/test_memory_estimate.cpp).
constexpr double kFmmDevicePerParticle = 280;
constexpr double kFmmDevicePerCell = 4000;
// Of the 4000 B a cell, what every rank of R > 1 holds for every cell of the complete tree whose
// cells are the whole set's (fmm/tree_gpu.h: the cells' records, their grid of the uniform levels
// and rows): the rest, the near field's entries and the expansions, only for the cells it keeps.
constexpr double kFmmDeviceTreePerCell = 256;
constexpr double kFmmDeviceTables = 256 * kMiB;
// The P2M and L2P as matrix products on lattice leaves (fmm/far_gpu_device.h LatticeLeaves): the
// L2P's results of a run of leaves.
constexpr double kFmmDeviceLatticeLeaves = 64 * kMiB;

/// The GPU FMM's bytes over `sources` sources and a tree of `cells` cells, of which `kept` hold
/// their near entries and expansions (all of them on one rank; a rank's windows' on R > 1) at nc
/// coefficients an expansion component.
double fmm_device_bytes(double sources, double cells, double kept, double nc) {
  return kFmmDevicePerParticle * sources + kFmmDeviceTreePerCell * cells +
         (kFmmDevicePerCell - kFmmDeviceTreePerCell + 120 * nc) * kept + kFmmDeviceTables + kFmmDeviceLatticeLeaves;
}
// The item of the FMM's uniform levels' FFT tables (fmm.m2l fft), which fit_fmm_m2l weighs.
constexpr const char* kFftTablesItem = "FMM uniform levels' FFTs";
// The GPU-resident vortex solver (vortex/solver_gpu.h, device = gpu with reinit_from = points)
// per particle of its (refine·N)³ lattice: state 152 B, the FMM's results and the FFT work space
// over them 96 B, the blob sums' sorted particles 108 B and the history's two sets of sums kept
// aside 48 B, cuFFT's work area (one component) ~16 B.
constexpr double kVortexGpuPerParticle = 420;
// Its host side: the state downloaded for a checkpoint (GpuSolver::state: x, α, γ, σ and the AB2
// history, 152 B a particle) with room. On an NVIDIA H200, 2026-12-03 (vortex alone, two steps,
// fields and a checkpoint at the end: sc09_256.ini at N = 128, 192, 256, refine 1, and quick.ini
// at N = 128, refine 1.5: 652 MiB, 1.64 GiB, 3.63 GiB, 1.38 GiB of peak RSS) the peaks fit 222 MB
// + 164 B a particle + 56 B a grid point (the program and the grid's arrays the other items count).
// On R > 1 GPU ranks a rank downloads its own particles' state, and a restart reads every
// position to find its own (24 B a particle of the lattice): 2 ranks at 256³ sharing the GPU,
// rank 0's peak 2.65 GiB, restarted 2.66 GiB (bench/RESULTS.md 2026-12-03).
constexpr double kVortexGpuHostPerParticle = 192;
constexpr double kVortexGpuHostAllPerParticle = 24;
// On R > 1 ranks (each its z-slab's particles and, as ghosts, the others' that its sums reach):
// per particle of the rank, the state and the slab of the three sets' blob sums (224 B), the
// three sets' strengths of the particles near its planes (its own and a halo of m/2 + 1 planes
// each side: 56 B), the blob sums' sorted particles, which are those selected near its planes
// (108 B), and its slab's share of the lattice's FFT work space (88 B); per source of its FMM,
// its own and the ghosts (vortex_gpu_ghosts), the positions, strengths and cores (56 B). Until
// 2026-12-05 every rank gathered every particle and transformed the whole lattice: 168 B a
// particle of the lattice on every rank, which at 256³ on 4 ranks counted 2.6 GiB where the
// solver's arrays were 2.8 GiB in all (bench/RESULTS.md 2026-12-05 "the FMM's ghosts kept").
constexpr double kVortexGpuOwnPerParticle = 388 + 88;
constexpr double kVortexGpuSourcePerParticle = 56;

struct Sizes {
  double R, C;  // one real grid array, one complex half spectrum (bytes)
  explicit Sizes(int n) : R(8.0 * n * n * n), C(16.0 * n * n * (n / 2 + 1)) {}
};

/// Sources a leaf of the octree over `particles` evenly spread sources holds: particles/8^l at
/// the first level l where that is at most ncrit (on the lattice, (N/2^l)³).
double leaf_particles(double particles, int ncrit) {
  double leaf = particles;
  while (leaf > ncrit) leaf /= 8;
  return leaf;
}

/// FMM cells per source: the leaves (leaf_particles), and 8/7 cells per leaf in the octree
/// above them.
double cells_per_particle(double particles, int ncrit) { return (8.0 / 7.0) / leaf_particles(particles, ncrit); }

/// The particles one of R > 1 CPU ranks holds (docs/design.md, "The vortex solver on several
/// ranks"): its own — rank 0's slab of the lattice planes, the largest (core/slab.h: blocks give
/// the first ranks one plane more) — and copies of its neighbours' near its planes: the blob sums'
/// ghosts (the stencil's planes, vortex/halo.h) and the local essential tree's near-field leaves
/// (two leaves' sides each way, fmm/let.h); never more than all of them.
struct RankParticles {
  double own, near;
};
RankParticles vortex_rank_particles(const RunConfig& c, int R) {
  const int m = vortex::lattice_points_per_direction(c.vortex.refine, c.n);
  const double plane = double(m) * m, all = plane * m, h = 2 * kPi / m;
  const double own = std::ceil(double(m) / R) * plane;
  const int stencil = vortex::stencil_points(c.vortex.overlap * h, h, c.vortex.blob_cutoff);
  const double leaf = leaf_particles(all, c.vortex.fmm.resolved().ncrit);  // the whole lattice's
  const double near_planes = stencil - 1 + 4 * std::cbrt(leaf);
  return {own, std::min(all - own, near_planes * plane)};
}

/// The uniform levels of the vortex solver's lattice: their depth L (the leaves' side 2π / 2^L)
/// and the FMM's cut-off at the largest core (σ₀ grown to max_core_ratio) in leaf sides.
struct UniformLeaves {
  int L;
  double rcut;
};
UniformLeaves uniform_leaves(const RunConfig& c) {
  const fmm::Params r = c.vortex.fmm.resolved();
  const double m = vortex::lattice_points_per_direction(c.vortex.refine, c.n);
  const int L = fmm::uniform_depth(m * m * m, r.ncrit);
  const double sigma = c.vortex.overlap * c.vortex.max_core_ratio * (2 * M_PI / m);
  return {L, fmm::rcut_per_sigma(r.tolerance) * sigma / (2 * M_PI / (1 << L))};
}

/// The ghosts of the FMM of one of R > 1 GPU ranks (vortex/halo_gpu.h): the particles of the
/// uniform levels' leaf planes within the near field's reach either way of the rank's slab
/// (fmm::GpuEvaluator::source_planes: the near stencil's reach at the largest core, and one plane
/// for a particle on a leaves' face); never more than the others'.
double vortex_gpu_ghosts(const RunConfig& c, int R) {
  const int m = vortex::lattice_points_per_direction(c.vortex.refine, c.n);
  const double plane = double(m) * m, all = plane * m, own = vortex_rank_particles(c, R).own;
  const UniformLeaves u = uniform_leaves(c);
  const int reach = fmm::near_z_reach(c.vortex.fmm.resolved().theta, u.rcut) + 1;  // leaf planes
  const double planes = 2.0 * reach * std::ceil(double(m) / (1 << u.L));          // lattice planes
  return std::min(all - own, planes * plane);
}

/// Whether the vortex solver's GPU ranks take the uniform levels, each its own sources and the
/// ghosts (vortex/solver_gpu.cu): fmm.m2l fft as fitted, an order the FFT M2L has (p ≤ 14) and a
/// depth of at least 2 (fmm/uniform_gpu.h). Otherwise every rank gathers every particle and
/// evaluates the whole set's FMM, its targets only.
bool vortex_gpu_ranks_take_uniform_levels(const RunConfig& c) {
  const fmm::Params r = c.vortex.fmm.resolved();
  return c.vortex.fmm.m2l == "fft" && r.p <= 14 && uniform_leaves(c).L >= 2;
}

/// The GPU FMM of one of R > 1 ranks on the uniform levels (docs/design.md, "The vortex solver on
/// several GPUs"): per source, its own particles and the ghosts (vortex_gpu_ghosts); the complete
/// tree's records for every cell; the near field's entries and the multipoles and locals for the
/// cells of its windows (fmm::uniform_expansion_cells), not the whole tree's.
double vortex_gpu_rank_fmm(const RunConfig& c, int R) {
  const fmm::Params r = c.vortex.fmm.resolved();
  const UniformLeaves u = uniform_leaves(c);
  const int n = vortex::lattice_points_per_direction(c.vortex.refine, c.n);
  const double nc = (r.p + 1) * (r.p + 2) / 2;
  const double cells = static_cast<double>(fmm::level_offset(u.L + 1));
  const double kept = fmm::uniform_expansion_cells(u.L, r.theta, u.rcut, n, R);
  const double sources = vortex_rank_particles(c, R).own + vortex_gpu_ghosts(c, R);
  return fmm_device_bytes(sources, cells, kept, nc);
}

/// Complex values of the transform grid (M²(M/2+1)).
double transform_modes(const RunConfig& c) {
  const spectral::kernel::Geometry g = spectral::kernel::make_geometry(c.n, c.spectral.dealias);
  return double(g.m) * g.m * g.mxh();
}

/// The spectral solver of one rank of R > 1 (core/slab.h, spectral/gpu_slab.cuh and
/// slab_passes.cpp): rank 0's part, the largest (blocks give the first ranks one more). The
/// state's slots; the three pass buffers of its layouts (fused: zb, zt, yb; lines: the z, y and
/// x lines of 6 fields), those of max|u| on the N grid sharing them; the lines' message buffers
/// (two of the largest message); cuFFT's work area taken as large as the largest buffer.
void spectral_on_ranks(const RunConfig& c, bool gpu, bool fused, MemoryEstimate& e) {
  namespace sk = spectral::kernel;
  const spectral::Params& p = c.spectral;
  const sk::Geometry g = sk::make_geometry(c.n, p.dealias);
  sk::Geometry gn = g;
  gn.m = g.n;
  const Slab slab = Slab::layout(Grid{c.n}, spectral::kept_kmax(p.dealias, c.n), 0, c.ranks);
  const sk::SlabLayout l = sk::SlabLayout::make(g, slab), lu = sk::SlabLayout::make(gn, slab);
  const sk::FusedLayout fl = sk::FusedLayout::make(g, l.jy0, l.njy, l.nzl, l.slots, false, c.ranks);
  const bool f = gpu && fused;
  const double n1 = std::max(double(lu.z_size(3)), double(f ? fl.zb_size() : l.z_size(6)));
  const double n2 = std::max(double(lu.y_size(3)), double(f ? fl.zt_size() : l.y_size(6)));
  const double n3 = std::max(double(lu.x_size(3)), double(f ? fl.yb_size() : l.x_size(6)));
  double msg = std::max(double(lu.z_size(3)), 3.0 * lu.nk * lu.nx * lu.nzl);
  if (!f) msg = std::max({msg, double(l.z_size(6)), 6.0 * l.nk * l.nx * l.nzl});
  const double cx = gpu && p.single_precision ? 8 : 16;  // bytes of one complex value
  const double state = (p.viscosity == spectral::Viscosity::explicit_rk4 ? 9 : 6) * double(slab.local_modes());
  const double work = cx * (n1 + n2 + n3 + 2 * msg);
  e.host.push_back({"spectral host copy", 3 * 16 * double(slab.local_modes())});
  e.host.push_back({"spectral checkpoint buffer", 3 * 16 * double(slab.local_modes())});
  if (!gpu) {
    e.host.push_back({"spectral solver", 16 * state + work});
  } else {
    e.device.push_back({"spectral state", cx * state});
    e.device.push_back({"spectral transforms", work});
    e.device.push_back({"cuFFT work area", cx * std::max({n1, n2, n3})});
  }
  e.checkpoint += 3 * Sizes(c.n).C;
}

}  // namespace

double MemoryEstimate::host_bytes() const {
  double s = 0;
  for (const auto& i : host) s += i.bytes;
  return s;
}

double MemoryEstimate::device_bytes() const {
  double s = 0;
  for (const auto& i : device) s += i.bytes;
  return s;
}

FmmMemory fmm_memory(double particles, const fmm::Params& f, bool gpu, double tree) {
  const fmm::Params r = f.resolved();
  const double nc = (r.p + 1) * (r.p + 2) / 2;
  const double cells = cells_per_particle(tree > 0 ? tree : particles, r.ncrit) * particles;
  FmmMemory m;
  // With the GPU back end the results come back through pinned staging memory (12 doubles).
  m.host = (kVortexHostPerParticle + (gpu ? 96 : 0)) * particles + (kFmmHostPerCell + 96 * nc) * cells;
  if (gpu)
    m.device = fmm_device_bytes(particles, cells, cells, nc);
  return m;
}

bool spectral_fused_on_gpu(const RunConfig& c, Backend b) {
  const spectral::Params& p = c.spectral;
  if (b != Backend::gpu || !runs_spectral(c.solver) || p.pruned_transforms) return false;
  if (p.transforms == spectral::Transforms::cufft) return false;
  if (p.transforms == spectral::Transforms::automatic && p.dealias == spectral::Dealias::none) return false;
  return spectral::fused::unsupported_reason(spectral::kernel::make_geometry(c.n, p.dealias), p.single_precision)
      .empty();
}

MemoryEstimate estimate_memory(const RunConfig& c, Backend b, bool fused) {
  MemoryEstimate e;
  const Sizes s(c.n);
  const double m = runs_vortex(c.solver) ? vortex::lattice_points_per_direction(c.vortex.refine, c.n) : 0;
  const double particles = m * m * m;  // (refine·N)³
  const bool gpu = b == Backend::gpu;
  const int nsolvers = int(runs_spectral(c.solver)) + int(runs_vortex(c.solver));

  const int R = std::max(1, c.ranks);  // the driver's arrays are slabs on R > 1 ranks
  e.host.push_back({"program", kProgramBytes});
  if (gpu) e.host.push_back({"CUDA context and libraries", kCudaHostBytes});
  e.host.push_back({"run driver", (8 * s.C + 2 * s.R) / R});
  if (!c.fields_at.empty()) {
    e.host.push_back({"field output", (7 * s.R * std::max(1, nsolvers) + 2 * s.R + s.C) / R});
    e.fields_file = 7 * s.R * std::max(1, nsolvers);
  }
  if (runs_spectral(c.solver) && c.ranks > 1) {
    spectral_on_ranks(c, gpu, fused, e);
  } else if (runs_spectral(c.solver)) {
    const bool expl = c.spectral.viscosity == spectral::Viscosity::explicit_rk4;
    const double state = (expl ? 9 : 6) * s.C;
    if (!gpu) {
      e.host.push_back({"spectral solver", state + 6 * 16 * transform_modes(c)});
    } else {
      const double cx = c.spectral.single_precision ? 8 : 16;  // bytes of one complex value
      const double nmodes = s.C / 16;
      e.host.push_back({"spectral host copy", 3 * cx * nmodes});
      const double work = 6 * cx * transform_modes(c);
      e.device.push_back({"spectral state", state * cx / 16});
      e.device.push_back({"spectral transforms", work});
      e.device.push_back({"cuFFT work area", work});
      if (fused) {
        const auto l = spectral::kernel::FusedLayout::make(spectral::kernel::make_geometry(c.n, c.spectral.dealias));
        e.device.push_back({"fused transforms", cx * double(l.zb_size() + l.yb_size())});
      }
      if (!c.spectral.single_precision) e.device.push_back({"GPU statistics", 2 * s.C + s.R});
    }
    e.checkpoint += 3 * s.C;  // u as [3][modes][2] doubles
    // Writing a checkpoint copies the state into a flat array first.
    e.host.push_back({"spectral checkpoint buffer", 3 * s.C});
  }
  if (runs_vortex(c.solver)) {
    const bool resident = gpu && c.vortex.reinit_from == vortex::ReinitFrom::points;
    if (R > 1 && !resident) {  // CPU ranks: this rank's share of the particles, and copies of its neighbours'
      const RankParticles rp = vortex_rank_particles(c, R);
      e.host.push_back(
          {"vortex solver and FMM (this rank's particles)", fmm_memory(rp.own, c.vortex.fmm, false, particles).host});
      e.host.push_back({"neighbours' particles (blob sums' ghosts, local essential tree)", kNearPerParticle * rp.near});
    }
    const FmmMemory f = fmm_memory(particles, c.vortex.fmm, gpu);
    if (resident) {
      e.host.push_back({"vortex state for checkpoints", kVortexGpuHostPerParticle * vortex_rank_particles(c, R).own +
                                                            (R > 1 ? kVortexGpuHostAllPerParticle * particles : 0.0)});
    } else if (R == 1) {
      e.host.push_back({"vortex solver and FMM", f.host});
    }
    if (gpu && (!resident || R == 1 || !vortex_gpu_ranks_take_uniform_levels(c)))
      e.device.push_back({"FMM and blob sums", f.device});
    if (gpu && c.vortex.reinit_from == vortex::ReinitFrom::points) {
      if (R == 1) {
        e.device.push_back({"vortex state and work space", kVortexGpuPerParticle * particles});
      } else {
        const double own = vortex_rank_particles(c, R).own;
        e.device.push_back({"vortex state and work space (this rank's particles)", kVortexGpuOwnPerParticle * own});
        e.device.push_back({"FMM's sources (this rank's and the ghosts)",
                            kVortexGpuSourcePerParticle * (own + vortex_gpu_ghosts(c, R))});
        if (vortex_gpu_ranks_take_uniform_levels(c))
          e.device.push_back({"FMM (this rank's sources, its windows' cells)", vortex_gpu_rank_fmm(c, R)});
        // The diagnostics on the device (GpuSolver::device_velocity, core/diagnostics.h
        // DeviceStatistics): the grid velocity on the rank's slab of the grid, the modes sent and
        // received to put it there (three components each), and the statistics' transform space
        // (a derivative's modes, the slab transforms' buffers: four more), 16 B each.
        e.device.push_back({"vortex diagnostics (this rank's slab of the grid)", 16.0 * 13 * Sizes(c.n).C / 16 / R});
      }
      // u and ∇u apart from the work space they share with the FMM's (vortex/solver_gpu.cu);
      // the FMM stays counted: an evaluation off the lattice (a restart) takes it.
      if (c.vortex.velocity == vortex::Velocity::lattice)
        e.device.push_back({"u and grad u of the lattice velocity", 96 * particles / R});
      // fmm.m2l fft: the uniform levels' FFT tables and transforms, the deepest level's with a
      // chunk of its tables while they are built (fmm/level_stencil.h m2l_fft_set_bytes): the
      // whole levels on one GPU, on R a rank's windows over the parent planes above its slab
      // (GpuEvaluator::evaluate_own). A run takes them only where the whole estimate with them
      // fits its GPU, else the lists (fit_fmm_m2l), so that a run the lists carry is admitted.
      if (c.vortex.velocity == vortex::Velocity::fmm && c.vortex.fmm.m2l == "fft") {
        const fmm::Params r = c.vortex.fmm.resolved();
        const UniformLeaves u = uniform_leaves(c);
        const int n = vortex::lattice_points_per_direction(c.vortex.refine, c.n);
        e.device.push_back({kFftTablesItem, fmm::m2l_fft_set_bytes(u.L, r.p, r.theta, u.rcut, n, R)});
      }
    }
    // The integrating factor's first half at the particles: γ of the step's start, then the
    // increments of the point and blob strengths (vortex/solver.h).
    if (c.vortex.diffusion == vortex::Diffusion::integrating_factor)
      (gpu && c.vortex.reinit_from == vortex::ReinitFrom::points ? e.device : e.host)
          .push_back({"viscous half step", 48 * particles / R});
    e.checkpoint += 152 * particles;  // x, α, γ, σ and the AB2 history (u, dα, dγ), doubles
  }
  return e;
}

std::string format_bytes(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : b < 10 ? "%.2f %s" : b < 100 ? "%.1f %s" : "%.0f %s", b,
                unit[u]);
  return buf;
}

namespace {

/// A number of bytes from a file holding one integer, or "max"; NaN when unreadable.
double read_bytes(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s)) return std::nan("");
  if (s == "max") return std::numeric_limits<double>::infinity();
  try {
    return std::stod(s);
  } catch (const std::exception&) {
    return std::nan("");
  }
}

/// A "Key: value kB" line of /proc/meminfo or /proc/self/status, in bytes; NaN when absent.
double proc_kb(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return 1024.0 * std::atof(line.c_str() + key.size() + 1);
  return std::nan("");
}

void add_limit(MemoryAvailable& a, const std::string& what, double bytes) {
  if (std::isnan(bytes) || std::isinf(bytes)) return;
  bytes = std::max(0.0, bytes);
  a.limits.push_back({what, bytes});
  if (bytes < a.bytes) {
    a.bytes = bytes;
    a.limited_by = what;
  }
}

/// The cgroup limits less usage, from this process's cgroup up to the root (v2, then v1).
void add_cgroup_limits(MemoryAvailable& a) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    // "0::/path" (v2) or "4:memory:/path" (v1)
    const auto c1 = line.find(':'), c2 = line.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) continue;
    const std::string ctrl = line.substr(c1 + 1, c2 - c1 - 1);
    std::string path = line.substr(c2 + 1);
    const bool v2 = ctrl.empty(), v1 = ctrl.find("memory") != std::string::npos;
    if (!v2 && !v1) continue;
    const std::string root = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
    const std::string max_file = v2 ? "/memory.max" : "/memory.limit_in_bytes";
    const std::string cur_file = v2 ? "/memory.current" : "/memory.usage_in_bytes";
    // Inside a container the path may not exist under /sys: its levels up to the root do.
    while (true) {
      if (path == "/") path.clear();
      const double lim = read_bytes(root + path + max_file);
      // v1 writes "no limit" as a number near 2^63.
      if (!std::isnan(lim) && lim < 4e18) {
        const double cur = read_bytes(root + path + cur_file);
        add_limit(a, std::string(v2 ? "cgroup memory.max" : "cgroup memory.limit_in_bytes") + " " +
                         format_bytes(lim) + " less usage",
                  lim - (std::isnan(cur) ? 0.0 : cur));
      }
      if (path.empty()) break;
      path = path.substr(0, path.rfind('/'));
    }
  }
}

}  // namespace

MemoryAvailable host_memory_available() {
  MemoryAvailable a;
  add_limit(a, "MemAvailable", proc_kb("/proc/meminfo", "MemAvailable"));
  add_cgroup_limits(a);
  rlimit r{};
  if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
    add_limit(a, "ulimit -v " + format_bytes(double(r.rlim_cur)) + " less the mapped address space",
              double(r.rlim_cur) - proc_kb("/proc/self/status", "VmSize"));
  if (getrlimit(RLIMIT_DATA, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
    add_limit(a, "ulimit -d " + format_bytes(double(r.rlim_cur)) + " less the mapped data",
              double(r.rlim_cur) - proc_kb("/proc/self/status", "VmData"));
  return a;
}

MemoryAvailable device_memory_available() {
  MemoryAvailable a;
  std::size_t free = 0, total = 0;
  if (gpu_memory(free, total)) add_limit(a, "free GPU memory of " + format_bytes(double(total)), double(free));
  return a;
}

MemoryAvailable shared_by(const MemoryAvailable& a, int ranks, const std::string& who) {
  if (ranks <= 1) return a;
  MemoryAvailable s;
  for (const MemoryItem& l : a.limits) {
    if (l.what.rfind("ulimit", 0) == 0) add_limit(s, l.what, l.bytes);  // per process
    else add_limit(s, l.what + " shared by " + std::to_string(ranks) + " " + who, l.bytes / ranks);
  }
  return s;
}

namespace {

/// fit_fmm_m2l against `device` bytes.
std::string fit_fmm_m2l(RunConfig& c, Backend b, bool fused, double device) {
  if (b != Backend::gpu || !runs_vortex(c.solver) || c.vortex.fmm.m2l != "fft") return "";
  const MemoryEstimate e = estimate_memory(c, b, fused);
  double tables = 0;
  for (const MemoryItem& i : e.device)
    if (i.what == kFftTablesItem) tables = i.bytes;
  if (tables == 0 || e.device_bytes() <= device) return "";
  // On R > 1 GPU ranks the lists gather every particle on every rank: no way out where that is
  // no smaller.
  RunConfig lists = c;
  lists.vortex.fmm.m2l = "lists";
  if (estimate_memory(lists, b, fused).device_bytes() >= e.device_bytes()) return "";
  c.vortex.fmm.m2l = "lists";
  return "the uniform levels' FFT tables, " + format_bytes(tables) + ", do not fit beside the run's " +
         format_bytes(e.device_bytes() - tables) + " in " + format_bytes(device) + " of free GPU memory";
}

/// The largest N (≤ c.n, allowed by the deck's rules) whose estimate fits, the FMM's M2L fitted to
/// the GPU as a run at that N would fit it; 0 when none does.
int largest_n_that_fits(const RunConfig& c, Backend b, bool fused, double host, double device) {
  const int step = runs_spectral(c.solver) && c.spectral.dealias == spectral::Dealias::three_halves ? 4 : 2;
  auto fits = [&](int n) {
    RunConfig d = c;
    d.n = n;
    try {
      fit_fmm_m2l(d, b, fused, device);
      const MemoryEstimate e = estimate_memory(d, b, fused);
      return e.host_bytes() <= host && e.device_bytes() <= device;
    } catch (const InputError&) {  // an N another rule refuses (vortex.refine · N an even integer)
      return false;
    }
  };
  for (int n = c.n - c.n % step; n >= 8; n -= step)
    if (fits(n)) return n;
  return 0;
}

std::string items(const std::vector<MemoryItem>& v) {
  std::string s;
  std::vector<MemoryItem> sorted(v);
  std::sort(sorted.begin(), sorted.end(), [](const MemoryItem& a, const MemoryItem& b) { return a.bytes > b.bytes; });
  for (std::size_t i = 0; i < sorted.size() && i < 3; ++i)
    s += (i ? ", " : "") + sorted[i].what + " " + format_bytes(sorted[i].bytes);
  return s;
}

}  // namespace

std::string fit_fmm_m2l(RunConfig& c, Backend b, bool fused, const MemoryAvailable& device) {
  return fit_fmm_m2l(c, b, fused, device.bytes);
}

std::string memory_shortfall(const MemoryEstimate& e, Backend b, const MemoryAvailable& host,
                             const MemoryAvailable& device) {
  const bool host_short = e.host_bytes() > host.bytes;
  const bool device_short = b == Backend::gpu && e.device_bytes() > device.bytes;
  if (!host_short && !device_short) return "";
  const MemoryAvailable& a = host_short ? host : device;
  return "needs " + format_bytes(host_short ? e.host_bytes() : e.device_bytes()) + " of " +
         (host_short ? "host" : "GPU") + " memory (" + items(host_short ? e.host : e.device) + "), " +
         format_bytes(a.bytes) + " available (" + a.limited_by + ")";
}

void check_memory(const RunConfig& c, Backend b, const MemoryEstimate& e, const MemoryAvailable& host,
                  const MemoryAvailable& device) {
  const std::string why = memory_shortfall(e, b, host, device);
  if (why.empty()) return;
  const bool fused = spectral_fused_on_gpu(c, b);
  std::ostringstream msg;
  msg << c.options.where("domain.n") << " " << why;
  const int n = largest_n_that_fits(c, b, fused, host.bytes, b == Backend::gpu ? device.bytes
                                                                            : std::numeric_limits<double>::infinity());
  msg << "; allowed here: " << (n > 0 ? "domain.n <= " + std::to_string(n) : std::string("no domain.n"));
  if (runs_spectral(c.solver) && c.spectral.dealias == spectral::Dealias::three_halves) {
    RunConfig d = c;
    d.spectral.dealias = spectral::Dealias::two_thirds;
    const MemoryEstimate e2 = estimate_memory(d, b, spectral_fused_on_gpu(d, b));
    if (e2.host_bytes() <= host.bytes && (b != Backend::gpu || e2.device_bytes() <= device.bytes))
      msg << ", or spectral.dealias = 2/3";
  }
  msg << ", or a machine with more memory";
  throw InputError(msg.str());
}

std::vector<std::string> memory_lines(const MemoryEstimate& e, Backend b, const MemoryAvailable& host,
                                      const MemoryAvailable& device) {
  auto available = [](const MemoryAvailable& a) {
    return a.limits.empty() ? std::string("unknown available")
                            : format_bytes(a.bytes) + " available (" + a.limited_by + ")";
  };
  std::vector<std::string> out;
  out.push_back("memory   host " + format_bytes(e.host_bytes()) + " needed (" + items(e.host) + "), " +
                available(host));
  if (b == Backend::gpu)
    out.push_back("memory   GPU  " + format_bytes(e.device_bytes()) + " needed (" + items(e.device) + "), " +
                  available(device));
  return out;
}

std::string dry_run_report(const RunConfig& c, const std::string& device_name, const MemoryEstimate& e, Backend b,
                           const MemoryAvailable& host, const MemoryAvailable& device) {
  std::ostringstream o;
  o << "dry run: the deck is valid; nothing was written\n";
  o << "case " << c.name << "  solver " << c.solver << "  N " << c.n << "  device " << device_name << "  output "
    << c.out_dir << "\n";
  for (const std::string& l : memory_lines(e, b, host, device)) o << l << "\n";
  if (e.fields_file > 0)
    o << "fields   " << format_bytes(e.fields_file) << " per fields_<i>.h5, " << c.fields_at.size()
      << " of them (output.fields_at)\n";
  else
    o << "fields   none (output.fields_at is empty)\n";
  if (e.checkpoint > 0)
    o << "checkpoint " << format_bytes(e.checkpoint)
      << " per checkpoint.h5 (checkpoint_prev.h5 keeps the one before: twice that on disk)\n";
  return o.str();
}

double peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return 1024.0 * double(u.ru_maxrss);  // kilobytes on Linux
}

}  // namespace vh::app
