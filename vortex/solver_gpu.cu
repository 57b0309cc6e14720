// GpuSolver (solver_gpu.h). Each kernel is the device twin of a loop of the CPU solver and calls
// the same per-particle or per-mode function:
//   advance_kernel     ↔ Solver::evaluate_rhs's stretch_all and Solver::step's loops and wrap()
//                        (update_kernel.h)
//   mode_steps_kernel  ↔ Fft3d's 1/n³, Lattice::field's ÷ s, Lattice::diffuse,
//                        diffusion_increment, project, filter
//                        (remesh_kernel.h)
//   blob_scale_kernel  ↔ Lattice::values(blob = true)'s × V/s
//   biot_savart_kernel ↔ Lattice::biot_savart;  resample_kernel, drop_nyquist_kernel ↔ resample
//                        (remesh.cpp; the latter between two grids of one N, in place)
//   send_modes_kernel, place_modes_kernel ↔ resample between slabs (remesh.cpp, its plan's
//                        copies on each side of the exchange)
//   blob_velocity_kernel ↔ Lattice::blob_velocity (Solver::lattice_rhs, vortex.velocity = lattice)
//   init_modes_kernel  ↔ Solver::set_velocity's resample and spectral curl (core/diagnostics)
//   split_kernel, join_kernel ↔ Lattice::modes and Lattice::values' copies between the particles'
//                        layout (n × 3) and the fields' (3 × n); lattice_kernel ↔ lattice_particles
//   the reductions     ↔ max_velocity, total_strength, the monitors' maxima, project's sums
// This file is compiled without fused multiply-adds (vortex/CMakeLists.txt), so these functions
// round as on the CPU; what differs is exp, the FFTs and the order of the blob sums and of the
// reductions. Everything runs on the default stream, in order; the host waits only where a
// scalar comes back.
#include "vortex/solver_gpu.h"

#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/cuda_check.h"
#include "base/device_comm.h"
#include "base/device_buffer.h"
#include "base/launch.h"
#include "core/device.h"
#include "core/fft_gpu.h"
#include "core/modes_kernel.h"
#include "core/error.h"
#include "core/slab_copy.h"
#include "fmm/evaluator.h"
#include "fmm/p2p_kernel.h"
#include "vortex/blobs.h"
#include "vortex/blobs_gpu.h"
#include "vortex/blobs_kernel.h"
#include "vortex/halo_gpu.h"
#include "vortex/rbf.h"
#include "vortex/remesh.h"
#include "vortex/remesh_kernel.h"
#include "vortex/update_kernel.h"

namespace vh::vortex {
namespace {

using kernel::Cx;

constexpr int kThreads = 256;
// Grid-stride kernels and reductions run this many blocks, whatever the size: every reduction
// then adds its terms in one order on every run (restarts continue bit for bit).
constexpr int kBlocks = 1024;

unsigned blocks_for(long long n) { return vh::blocks_for(n, kThreads, kBlocks); }

__device__ inline long long thread_index() { return blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; }
__device__ inline long long thread_stride() { return static_cast<long long>(gridDim.x) * blockDim.x; }

// ---- the step --------------------------------------------------------------------------------

struct Advance {
  double dt, nu, L;
  Ab2Weights w;
  bool history, classical, spread;
};

// Solver::evaluate_rhs's rates and Solver::step's update for particle i: ds/dt = stretching(∇u, s)
// at the current α and γ, y ← y + Δt (c0 fⁿ + c1 fⁿ⁻¹) for x, α, γ (fⁿ⁻¹ = 0 without history),
// fⁿ kept as the next step's history, core spreading, the wrap.
__global__ void advance_kernel(long long np, Advance a, double* __restrict__ x, double* __restrict__ alpha,
                               double* __restrict__ gamma, double* __restrict__ sigma, const double* __restrict__ u,
                               const double* __restrict__ grad, double* __restrict__ u_prev,
                               double* __restrict__ da_prev, double* __restrict__ dg_prev) {
  for (long long i = thread_index(); i < np; i += thread_stride()) {
    const double* G = grad + 9 * i;
    double da[3], dg[3], ui[3];
    stretching(G, alpha + 3 * i, a.classical, da);
    stretching(G, gamma + 3 * i, a.classical, dg);
    double up[3] = {0, 0, 0}, dap[3] = {0, 0, 0}, dgp[3] = {0, 0, 0};
    for (int d = 0; d < 3; ++d) {
      ui[d] = u[3 * i + d];
      if (a.history) {
        up[d] = u_prev[3 * i + d];
        dap[d] = da_prev[3 * i + d];
        dgp[d] = dg_prev[3 * i + d];
      }
    }
    ab2_update(x + 3 * i, ui, up, a.dt, a.w);
    ab2_update(alpha + 3 * i, da, dap, a.dt, a.w);
    ab2_update(gamma + 3 * i, dg, dgp, a.dt, a.w);
    for (int d = 0; d < 3; ++d) {
      u_prev[3 * i + d] = ui[d];
      da_prev[3 * i + d] = da[d];
      dg_prev[3 * i + d] = dg[d];
      x[3 * i + d] = wrap_coordinate(x[3 * i + d], a.L);
    }
    if (a.spread) sigma[i] = spread_core(sigma[i], a.nu, a.dt);
  }
}

// γ += v[0, 3 np), α += v[3 np, 6 np): Solver::step's add_increment (the integrating factor's
// first half, point then blob strengths).
__global__ void add_increments_kernel(long long np, const double* __restrict__ v, double* __restrict__ gamma,
                                      double* __restrict__ alpha) {
  for (long long i = thread_index(); i < np; i += thread_stride()) {
    add_increment(gamma + 3 * i, v + 3 * i);
    add_increment(alpha + 3 * i, v + 3 * (np + i));
  }
}

// ∇u − each particle's own pair (fmm/p2p_kernel.h at r = 0: G(0) ε·α), which the lattice
// field by FFTs includes and evaluate_self leaves out.
__global__ void drop_self_pair_kernel(long long np, const double* __restrict__ alpha, const double* __restrict__ sigma,
                                      double* __restrict__ grad) {
  for (long long i = thread_index(); i < np; i += thread_stride()) {
    const double r[3] = {0, 0, 0}, a[3] = {alpha[3 * i], alpha[3 * i + 1], alpha[3 * i + 2]};
    double u[3] = {0, 0, 0}, g[3][3] = {};
    fmm::p2p_pair(r, a, sigma[i], u, g);
    for (int m = 0; m < 3; ++m)
      for (int k = 0; k < 3; ++k) grad[9 * i + 3 * m + k] -= g[m][k];
  }
}

// The lattice particles (lattice_particles) of the planes z0 … z0 + nz − 1: x_i = h (ix, iy, iz)
// in [z][y][x] order, σ = σ₀.
__global__ void lattice_kernel(int n, int z0, int nz, double h, double sigma0, double* __restrict__ x,
                               double* __restrict__ sigma) {
  const long long np = static_cast<long long>(n) * n * nz;
  for (long long i = thread_index(); i < np; i += thread_stride()) {
    const int ix = static_cast<int>(i % n), iy = static_cast<int>(i / n % n), iz = z0 + static_cast<int>(i / n / n);
    x[3 * i] = ix * h;
    x[3 * i + 1] = iy * h;
    x[3 * i + 2] = iz * h;
    sigma[i] = sigma0;
  }
}

// v (n × 3) times scale → f (3 × n): Lattice::modes' copy.
__global__ void split_kernel(long long np, const double* __restrict__ v, double scale, double* __restrict__ f) {
  for (long long i = thread_index(); i < np; i += thread_stride())
    for (int d = 0; d < 3; ++d) f[d * np + i] = v[3 * i + d] * scale;
}

// f (3 components `stride` apart) times scale → v (count × 3): Lattice::values' copy, of a
// rank's planes where f points at their first value. With vstride, first and step: component d
// of point i to v[vstride i + first + step d] (a column of the gradients' 3 × 3 rows).
__global__ void join_kernel(long long count, long long stride, const double* __restrict__ f, double scale,
                            double* __restrict__ v, int vstride = 3, int first = 0, int step = 1) {
  for (long long i = thread_index(); i < count; i += thread_stride())
    for (int d = 0; d < 3; ++d) v[vstride * i + first + step * d] = f[d * stride + i] * scale;
}

// ---- per-mode steps --------------------------------------------------------------------------

/// What mode_steps_kernel does to each mode, in this order (the CPU's).
struct ModeSteps {
  double scale = 1;         ///< the forward transform's 1/n³ (Fft3d::forward)
  bool deconvolve = false;  ///< ÷ s(k) with the floor (Lattice::field)
  double floor = 0;
  double nu_tau = 0;        ///< ≠ 0: × exp(−ντ|k|²) (Lattice::diffuse)
  double increment = 0;     ///< ≠ 0: × (exp(−increment |k|²) − 1) (Lattice::diffusion_increment)
  bool project = false;     ///< Lattice::project, its sums per block into `partial`
  Filter filter = Filter::none;  ///< Lattice::filter: zero where kernel::kept is false
  double kc = 0;                 ///< the filter's cut-off, filter_fraction · N_p/2
};

__global__ void mode_steps_kernel(long long nm, SlabModes L, ModeSteps s, const double* __restrict__ s1, Cx* c0,
                                  Cx* c1, Cx* c2, double* __restrict__ partial) {
  __shared__ double red[2][kThreads];
  double removed = 0, total = 0;
  const int n = L.n;
  for (long long m = thread_index(); m < nm; m += thread_stride()) {
    int ix, iy, iz;
    L.mode(m, ix, iy, iz);
    const int ky = modes::signed_k(iy, n), kz = modes::signed_k(iz, n);
    Cx c[3] = {c0[m], c1[m], c2[m]};
    for (int d = 0; d < 3; ++d) kernel::scale(c[d], s.scale);
    if (s.deconvolve) {
      const double sy = kernel::symbol(s1, ix, iy, iz, s.floor);
      for (int d = 0; d < 3; ++d) kernel::deconvolve(c[d], sy);
    }
    if (s.nu_tau != 0) {
      const double f = kernel::diffusion_factor(s.nu_tau, ix, ky, kz);
      for (int d = 0; d < 3; ++d) kernel::scale(c[d], f);
    }
    if (s.increment != 0) {
      const double f = kernel::diffusion_increment(s.increment, ix, ky, kz);
      for (int d = 0; d < 3; ++d) kernel::scale(c[d], f);
    }
    if (s.project) kernel::project(ix, ky, kz, modes::mode_weight(ix, n), c, removed, total);
    if (!kernel::kept(s.filter, s.kc, ix, ky, kz))
      for (int d = 0; d < 3; ++d) c[d] = Cx{0, 0};
    c0[m] = c[0];
    c1[m] = c[1];
    c2[m] = c[2];
  }
  if (!s.project) return;  // uniform over the grid: no thread leaves the reduction below alone
  red[0][threadIdx.x] = removed;
  red[1][threadIdx.x] = total;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      red[0][threadIdx.x] += red[0][threadIdx.x + w];
      red[1][threadIdx.x] += red[1][threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partial[2 * blockIdx.x] = red[0][0];
    partial[2 * blockIdx.x + 1] = red[1][0];
  }
}

// dst = src × V/s(k), 3 components: the blob strengths' coefficients (Lattice::values, blob).
__global__ void blob_scale_kernel(long long nm, SlabModes L, double vol, double floor, const double* __restrict__ s1,
                                  const Cx* __restrict__ src, Cx* __restrict__ dst) {
  for (long long m = thread_index(); m < nm; m += thread_stride()) {
    int ix, iy, iz;
    L.mode(m, ix, iy, iz);
    const double f = vol / kernel::symbol(s1, ix, iy, iz, floor);
    for (int d = 0; d < 3; ++d) {
      Cx c = src[d * nm + m];
      kernel::scale(c, f);
      dst[d * nm + m] = c;
    }
  }
}

// u = i k × w / |k|² (Lattice::biot_savart), 3 components each.
__global__ void biot_savart_kernel(long long nm, SlabModes L, const Cx* __restrict__ w, Cx* __restrict__ u) {
  const int n = L.n;
  for (long long m = thread_index(); m < nm; m += thread_stride()) {
    int ix, iy, iz;
    L.mode(m, ix, iy, iz);
    const Cx wm[3] = {w[m], w[nm + m], w[2 * nm + m]};
    Cx um[3];
    modes::biot_savart(double(ix), double(modes::signed_k(iy, n)), double(modes::signed_k(iz, n)), wm, um);
    for (int d = 0; d < 3; ++d) u[d * nm + m] = um[d];
  }
}

// Lattice::blob_velocity of the coefficients c × scale (3 components nm apart) into out.
__global__ void blob_velocity_kernel(long long nm, SlabModes L, double sigma, int reach, int what, double scale,
                                     const Cx* __restrict__ c, Cx* __restrict__ out) {
  const int n = L.n;
  for (long long m = thread_index(); m < nm; m += thread_stride()) {
    int ix, iy, iz;
    L.mode(m, ix, iy, iz);
    Cx v[3] = {c[m], c[nm + m], c[2 * nm + m]};
    for (int d = 0; d < 3; ++d) kernel::scale(v[d], scale);
    Cx r[3];
    kernel::blob_velocity(ix, modes::signed_k(iy, n), modes::signed_k(iz, n), n, sigma, reach, what, v, r);
    for (int d = 0; d < 3; ++d) out[d * nm + m] = r[d];
  }
}

// out[3 i + d] = from[d nm + send[i]], i < n: the modes a ResamplePlan sends (remesh.h).
__global__ void send_modes_kernel(long long n, long long nm, const long long* __restrict__ send,
                                  const Cx* __restrict__ from, Cx* __restrict__ out) {
  for (long long i = thread_index(); i < n; i += thread_stride())
    for (int d = 0; d < 3; ++d) out[3 * i + d] = from[d * nm + send[i]];
}

// to[d nt + where[i]] = in[3 i + d], i < n: the modes a ResamplePlan receives, in place.
__global__ void place_modes_kernel(long long n, long long nt, const long long* __restrict__ where,
                                   const Cx* __restrict__ in, Cx* __restrict__ to) {
  for (long long i = thread_index(); i < n; i += thread_stride())
    for (int d = 0; d < 3; ++d) to[d * nt + where[i]] = in[3 * i + d];
}

// resample_kernel between two grids of one N, in place: the modes it leaves out, |k_i| = N/2,
// zeroed.
__global__ void drop_nyquist_kernel(long long nm, int n, Cx* v) {
  for (long long m = thread_index(); m < nm; m += thread_stride()) {
    int ix, iy, iz;
    modes::mode_of(m, n, ix, iy, iz);
    if (kernel::resample_source(ix, iy, iz, n, n) < 0)
      for (int d = 0; d < 3; ++d) v[d * nm + m] = Cx{0, 0};
  }
}

// to (n_to lattice, nm_to modes a component) from `from` (n_from, nm_from): resample (remesh.cpp).
__global__ void resample_kernel(long long nm_to, int n_to, long long nm_from, int n_from,
                                const Cx* __restrict__ from, Cx* __restrict__ to) {
  for (long long m = thread_index(); m < nm_to; m += thread_stride()) {
    int ix, iy, iz;
    modes::mode_of(m, n_to, ix, iy, iz);
    const long long src = kernel::resample_source(ix, iy, iz, n_to, n_from);
    for (int d = 0; d < 3; ++d) to[d * nm_to + m] = src < 0 ? Cx{0, 0} : from[d * nm_from + src];
  }
}

// The vorticity coefficients on the rank's lattice modes (nm of layout L) of the velocity u given
// on the whole grid (n_grid, nm_grid): resampled to the lattice, then the spectral curl
// (Solver::set_velocity).
__global__ void init_modes_kernel(long long nm, SlabModes L, long long nm_grid, int n_grid, const Cx* __restrict__ u,
                                  Cx* __restrict__ w) {
  const int n = L.n;
  for (long long m = thread_index(); m < nm; m += thread_stride()) {
    int ix, iy, iz;
    L.mode(m, ix, iy, iz);
    // As Solver::set_velocity's resample: the modes |k_i| < N/2, on any rank count and refine.
    const long long src = kernel::resample_source(ix, iy, iz, n, n_grid);
    Cx um[3], wm[3];
    for (int d = 0; d < 3; ++d) um[d] = src < 0 ? Cx{0, 0} : u[d * nm_grid + src];
    double k[3];
    modes::derivative_wavevector(n, ix, iy, iz, k);
    modes::curl(k[0], k[1], k[2], um, wm);
    for (int d = 0; d < 3; ++d) w[d * nm + m] = wm[d];
  }
}

// ---- reductions (per block into `partial`, finished on the host in block order) ---------------

enum class Reduce { max_abs, max_norm3, sum3, nonfinite };

/// max that keeps a NaN (fmax drops it): a blow-up reaches the run's "not finite" guard.
__host__ __device__ inline double max_nan(double a, double b) { return (b > a || b != b) ? b : a; }

// max_abs: max |v_i| over count values; max_norm3: max √(a² + b² + c²) over the 3 × count field
// v (max_norm in solver.cpp); sum3: the sums of the three components of the count × 3 array v;
// nonfinite: how many of the count values are not finite.
__global__ void reduce_kernel(Reduce op, long long count, const double* __restrict__ v, double* __restrict__ partial) {
  __shared__ double red[3][kThreads];
  double a[3] = {0, 0, 0};
  for (long long i = thread_index(); i < count; i += thread_stride()) {
    if (op == Reduce::max_abs) {
      a[0] = max_nan(a[0], fabs(v[i]));
    } else if (op == Reduce::max_norm3) {
      const double x = v[i], y = v[count + i], z = v[2 * count + i];
      a[0] = max_nan(a[0], sqrt(x * x + y * y + z * z));
    } else if (op == Reduce::sum3) {
      for (int d = 0; d < 3; ++d) a[d] += v[3 * i + d];
    } else {
      a[0] += isfinite(v[i]) ? 0.0 : 1.0;
    }
  }
  for (int d = 0; d < 3; ++d) red[d][threadIdx.x] = a[d];
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w)
      for (int d = 0; d < 3; ++d)
        red[d][threadIdx.x] =
            op == Reduce::sum3 || op == Reduce::nonfinite ? red[d][threadIdx.x] + red[d][threadIdx.x + w]
                                                          : max_nan(red[d][threadIdx.x], red[d][threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0)
    for (int d = 0; d < 3; ++d) partial[3 * blockIdx.x + d] = red[d][0];
}

// ---- host helpers ----------------------------------------------------------------------------

/// A cuFFT plan, destroyed with it.
struct FftPlan {
  cufftHandle h = 0;
  bool made = false;
  FftPlan() = default;
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;
  ~FftPlan() {
    if (made) cufftDestroy(h);
  }
};

/// CUDA events around the phases of a step (between start_step and finish_step; none are
/// recorded elsewhere): begin/end pairs per phase, resolved when asked.
class PhaseEvents {
 public:
  enum Phase { update, blob_sums, fft_steps, rest, kPhases };
  PhaseEvents() = default;
  PhaseEvents(const PhaseEvents&) = delete;
  PhaseEvents& operator=(const PhaseEvents&) = delete;
  ~PhaseEvents() {
    for (auto* v : {&cur_, &done_})
      for (const Entry& e : *v) cudaEventDestroy(e.a), cudaEventDestroy(e.b);
    for (cudaEvent_t e : free_) cudaEventDestroy(e);
  }
  void start_step() { on_ = true; }
  void begin(Phase p) {
    if (!on_) return;
    cur_.push_back({p, take(), take()});
    VH_CHECK_CUDA(cudaEventRecord(cur_.back().a));
  }
  void end() {
    if (on_) VH_CHECK_CUDA(cudaEventRecord(cur_.back().b));
  }
  /// The step's phases are recorded; the previous step's events go back to the pool.
  void finish_step() {
    for (const Entry& e : done_) free_.push_back(e.a), free_.push_back(e.b);
    done_.swap(cur_);
    cur_.clear();
    on_ = false;
  }
  /// Seconds per phase of the last finished step (waits for its events).
  void times(double out[kPhases]) const {
    for (int p = 0; p < kPhases; ++p) out[p] = 0;
    for (const Entry& e : done_) {
      VH_CHECK_CUDA(cudaEventSynchronize(e.b));
      float ms = 0;
      VH_CHECK_CUDA(cudaEventElapsedTime(&ms, e.a, e.b));
      out[e.phase] += 1e-3 * ms;
    }
  }

 private:
  struct Entry {
    Phase phase;
    cudaEvent_t a, b;
  };
  cudaEvent_t take() {
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
    cudaEvent_t e;
    VH_CHECK_CUDA(cudaEventCreate(&e));
    return e;
  }
  std::vector<Entry> cur_, done_;
  std::vector<cudaEvent_t> free_;
  bool on_ = false;
};

/// Bytes rounded up to 256 (cudaMalloc's alignment), so that sub-buffers of one allocation stay
/// aligned for cuFFT and vector loads.
std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

struct GpuSolver::Impl {
  Params prm;
  Grid g, gp;         // the diagnostics' grid and the particle lattice
  Slab gs, ls;        // this rank's slabs of the grid and of the lattice (one rank: the whole)
  Comm comm;
  bool many = false;  // R > 1 ranks
  long long nl = 0;   // lattice points
  long long nown = 0; // this rank's lattice points (ls.nz n²): its fields' values a component
  long long np = 0;   // particles this rank holds (nown after a reinitialisation; one rank: nl)
  long long nm = 0;   // this rank's lattice modes per component (ls's slab)
  long long nmg = 0;  // grid modes per component (the whole grid's)
  SlabModes lm;       // the layout of the rank's lattice modes
  double sigma0 = 0, vol = 0, kc = 0, box = 2.0 * kPi;

  // R > 1: the device transport, the lattice's transforms over the ranks' slabs (this rank's
  // planes and modes), and the particles of the other ranks that this rank's sums need: the
  // ghosts (halo_gpu.h) of the FMM's near field and of the blob sums, or, where the FMM could
  // not take the uniform levels, every rank's particles gathered in rank order.
  std::unique_ptr<DeviceComm> dcomm;
  std::unique_ptr<GpuSlabFft> sfft;
  cudaStream_t dstream = nullptr;
  std::vector<std::size_t> counts;  // particles per rank, when last gathered
  long long nall = 0;               // their sum
  // The FMM's sources: this rank's particles and its ghosts, or every rank's (gathered).
  DeviceArray<double> all_x, all_a, all_s;
  DeviceArray<double> later;  // the blob sums of blob_sums3's sets 1 and 2
  bool gathered_xs = false;   // all_x, all_s hold every rank's current positions and cores
  DeviceHalo fmm_halo;        // the FMM's ghosts (fmm::GpuEvaluator::source_planes)
  bool ghosts_of_last = false;  // all_x, all_s hold the FMM's ghosts of the last evaluation's positions
  bool fmm_ghosts = true;     // false once the FMM declined them (took the lists): gathers since
  // The particles whose stencils reach this rank's planes (blob_halo), and their positions, cores
  // and strengths: the blob sums' input.
  DeviceHalo blob_halo;
  DeviceArray<double> sel_x, sel_s, sel_q;
  long long nsel = 0;
  // The grid velocity on this rank's slab of the grid (slab_grid_velocity, for the diagnostics):
  // the lattice's modes to the grid's slabs (remesh.h ResamplePlan), planned at the first call.
  std::unique_ptr<ResamplePlan> to_grid;
  DeviceArray<long long> to_grid_send, to_grid_where;
  DeviceArray<Cx> to_grid_out, to_grid_in, slab_velocity;

  // The state (solver_gpu.h: bytes per particle).
  DeviceArray<double> x, alpha, gamma, sigma, u_prev, da_prev, dg_prev;
  DeviceArray<double> visc;  // diffusion = integrating_factor: first_viscous_half's γ, then increments
  // u (3 np) and ∇u (9 np) of the last evaluation, and over them the FFT work space: two lattice
  // spectra W and H (3 nm complex each), the real fields R (3 nown), cuFFT's work area (one rank;
  // on R > 1 GpuSlabFft holds its own). The fields and spectra are the rank's planes and modes. With
  // vortex.velocity = lattice u and ∇u come from that space and live apart, in `rhs`.
  DeviceBytes work;
  DeviceArray<double> rhs;
  double *u = nullptr, *grad = nullptr, *R = nullptr;
  Cx *W = nullptr, *H = nullptr;
  DeviceArray<double> s1;       // symbol_factors(gp, σ₀)
  DeviceArray<double> partial;  // reductions' per-block values
  DeviceArray<double> proj;     // the last projection's per-block sums
  FftPlan fwd, inv;
  detail::DeviceBlobSums sums;
  fmm::GpuEvaluator fmm;
  PhaseEvents events;
  std::vector<double> host_partial;

  // Host scalars of the state (Solver's).
  double t = 0, t_reinit = 0, dt_prev = 0, sigma_max = 0, ratio_at_reinit = 0, last_residual = 0;
  long steps = 0, since_reinit = 0, reinits = 0;
  bool have_history = false, rhs_valid = false, maxima_valid = false, sorted = false;
  bool last_eval_on_lattice = false;  // the last evaluation saw the particles on the lattice
  double umax = 0, gmax = 0;
  mutable bool proj_pending = false;
  mutable double div_removed = 0;
  fmm::Timings timings;
  GpuStepTimes cur, last;
  ExchangeStats exchanged;  // dcomm's totals when the last step ended

  Impl(const Params& p, const Slab& grid_slab)
      : prm(p),
        g(grid_slab.grid),
        gp{lattice_points_per_direction(p.refine, grid_slab.grid.n)},
        gs(grid_slab),
        ls(lattice_slab(p, grid_slab.grid.n, grid_slab.comm)),
        comm(grid_slab.comm),
        many(!grid_slab.whole()),
        fmm(fmm_params(p)) {
    if (prm.reinit_from != ReinitFrom::points)
      throw std::invalid_argument(
          "vortex::GpuSolver runs reinit_from = points; reinit_from = blobs runs on vortex::Solver (make_solver)");
    if (const std::string why = diffusion_conflict(prm); !why.empty()) throw InputError("vortex.diffusion" + why);
    nl = static_cast<long long>(gp.points());
    nown = static_cast<long long>(ls.local_points());
    np = nown;
    nm = static_cast<long long>(ls.local_modes());
    lm = ls.modes();
    nmg = static_cast<long long>(g.modes());
    sigma0 = prm.overlap * gp.h();
    vol = gp.h() * gp.h() * gp.h();
    kc = prm.filter_fraction * 0.5 * gp.n;
    sigma_max = sigma0;

    reserve_particles(np);

    const std::vector<double> f = symbol_factors(gp, sigma0);
    s1.upload(f);
    partial.resize(3 * kBlocks);
    proj.resize(2 * kBlocks);
    host_partial.resize(3 * kBlocks);
    if (many) {
      // Blocking: in order with the default stream. Of the greatest priority: the FMM's
      // all-reduce of the multipoles runs while its near field fills the GPU, and its blocks
      // then take SMs as the near field's free them, not after the whole near field.
      int least = 0, greatest = 0;
      VH_CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
      VH_CHECK_CUDA(cudaStreamCreateWithPriority(&dstream, cudaStreamDefault, greatest));
      dcomm = std::make_unique<DeviceComm>(comm, dstream);
      sfft = std::make_unique<GpuSlabFft>(ls, dcomm.get());
    } else {
      // cuFFT plans on the lattice, one component at a time, sharing a work area in `work`.
      std::size_t wf = 0, wi = 0;
      VH_CHECK_CUFFT(cufftCreate(&fwd.h));
      fwd.made = true;
      VH_CHECK_CUFFT(cufftCreate(&inv.h));
      inv.made = true;
      VH_CHECK_CUFFT(cufftSetAutoAllocation(fwd.h, 0));
      VH_CHECK_CUFFT(cufftSetAutoAllocation(inv.h, 0));
      VH_CHECK_CUFFT(cufftMakePlan3d(fwd.h, gp.n, gp.n, gp.n, CUFFT_D2Z, &wf));
      VH_CHECK_CUFFT(cufftMakePlan3d(inv.h, gp.n, gp.n, gp.n, CUFFT_Z2D, &wi));
      fft_work = aligned(std::max(wf, wi));
    }
    lay_out_work();
  }
  ~Impl() {
    sfft.reset();
    dcomm.reset();
    if (dstream) cudaStreamDestroy(dstream);
  }

  std::size_t fft_work = 0;
  std::size_t particles_cap = 0;

  /// Room for n particles on this rank (the state's contents are not kept).
  void reserve_particles(long long n) {
    const std::size_t want = static_cast<std::size_t>(std::max(n, nown));
    if (want <= particles_cap) return;
    for (auto* a : {&x, &alpha, &gamma, &u_prev, &da_prev, &dg_prev}) a->resize(3 * want);
    sigma.resize(want);
    particles_cap = want;
    if (work.bytes() > 0) lay_out_work();
  }
  /// u and ∇u of this rank's particles, and over them (or apart: vortex.velocity = lattice) the
  /// lattice's FFT work space.
  void lay_out_work() {
    const std::size_t cap = particles_cap;
    const std::size_t spectrum = aligned(3 * nm * sizeof(Cx)), field = aligned(3 * nown * sizeof(double));
    const std::size_t both = aligned(3 * cap * sizeof(double)) + aligned(9 * cap * sizeof(double));
    const bool apart = prm.velocity == Velocity::lattice;
    work.resize(std::max(apart ? 0 : both, 2 * spectrum + field + fft_work));
    char* base = work.as<char>();
    if (apart) rhs.resize(both / sizeof(double));
    char* ub = apart ? reinterpret_cast<char*>(rhs.data()) : base;
    u = reinterpret_cast<double*>(ub);
    grad = reinterpret_cast<double*>(ub + aligned(3 * cap * sizeof(double)));
    W = reinterpret_cast<Cx*>(base);
    H = reinterpret_cast<Cx*>(base + spectrum);
    R = reinterpret_cast<double*>(base + 2 * spectrum);
    if (fwd.made) VH_CHECK_CUFFT(cufftSetWorkArea(fwd.h, base + 2 * spectrum + field));
    if (inv.made) VH_CHECK_CUFFT(cufftSetWorkArea(inv.h, base + 2 * spectrum + field));
  }

  // ---- the ranks' particles (R > 1) ----

  /// Every rank's values v (k doubles a particle) into `all`, in rank order. Collective.
  void gather(const double* v, int k, DeviceArray<double>& all) {
    all.reserve(static_cast<std::size_t>(k * nall));
    dcomm->allgatherv(v, static_cast<std::size_t>(np), all.data(), counts, k * sizeof(double));
  }
  /// The particles' positions and cores of every rank, gathered (once per set of positions).
  void gather_positions() {
    if (gathered_xs) return;
    gather_counts();
    gather(x.data(), 3, all_x);
    gather(sigma.data(), 1, all_s);
    gathered_xs = true;
    ghosts_of_last = false;
  }

  static fmm::Params fmm_params(const Params& p) {
    fmm::Params f = p.fmm;
    f.periodic = true;
    f.use_gpu = true;
    return f;
  }

  // ---- transforms and layouts ----

  /// c = the coefficients of the real fields f (3 components nown apart: R, or the blob sums
  /// kept aside), before the 1/n³ (mode_steps). R > 1: the rank's planes to its modes.
  void forward(const double* f, Cx* c) {
    for (int d = 0; d < 3; ++d) {
      if (sfft)
        sfft->forward(f + d * nown, reinterpret_cast<Complex*>(c + d * nm), 1.0);
      else
        VH_CHECK_CUFFT(cufftExecD2Z(fwd.h, const_cast<double*>(f) + d * nown,
                                    reinterpret_cast<cufftDoubleComplex*>(c + d * nm)));
    }
  }
  /// R = the fields of the coefficients c (3 components; c may be overwritten: cuFFT's C2R).
  void inverse_to_R(Cx* c) {
    for (int d = 0; d < 3; ++d) {
      if (sfft)
        sfft->inverse(reinterpret_cast<const Complex*>(c + d * nm), R + d * nown);
      else
        VH_CHECK_CUFFT(cufftExecZ2D(inv.h, reinterpret_cast<cufftDoubleComplex*>(c + d * nm), R + d * nown));
    }
  }
  void mode_steps(const ModeSteps& s, Cx* c) {
    mode_steps_kernel<<<blocks_for(nm), kThreads>>>(nm, lm, s, s1.data(), c, c + nm, c + 2 * nm, proj.data());
    VH_CHECK_LAUNCH();
  }
  /// The steps of a field from its blob sums (Lattice::field: 1/n³, ÷ s) and those given.
  ModeSteps field_steps(double nu_tau, bool project, bool filter) const {
    ModeSteps s;
    s.scale = 1.0 / static_cast<double>(nl);
    s.deconvolve = true;
    s.floor = prm.rbf.symbol_floor;
    s.nu_tau = nu_tau;
    s.project = project;
    s.filter = filter ? prm.filter : Filter::none;
    s.kc = kc;
    return s;
  }
  /// Lattice::values of the coefficients W: the point values × `point_scale` into `points`
  /// (if not null) and the blob strengths (÷ S) × `blob_scale` into `blobs` (if not null), at
  /// this rank's lattice points (its new particles). W is overwritten.
  void values(double* points, double point_scale, double* blobs, double blob_scale) {
    if (blobs) {
      events.begin(PhaseEvents::fft_steps);
      blob_scale_kernel<<<blocks_for(nm), kThreads>>>(nm, lm, vol, prm.rbf.symbol_floor, s1.data(), W, H);
      VH_CHECK_LAUNCH();
      inverse_to_R(H);
      events.end();
      join(R, blob_scale, blobs);
    }
    if (points) {
      events.begin(PhaseEvents::fft_steps);
      inverse_to_R(W);
      events.end();
      join(R, point_scale, points);
    }
  }
  void join(const double* f, double scale, double* v) {
    events.begin(PhaseEvents::rest);
    join_kernel<<<blocks_for(nown), kThreads>>>(nown, nown, f, scale, v);
    VH_CHECK_LAUNCH();
    events.end();
  }

  // ---- blob sums ----

  /// The particles sorted for the blob sums: this rank's, or on R > 1 those of every rank whose
  /// stencils may reach this rank's planes (the lattice cell within m / 2 + 1 cells of them).
  void sort() {
    if (sorted) return;
    const int m = stencil_points(sigma_max, gp.h(), prm.blob_cutoff);
    if (many) {
      blob_halo.plan(*dcomm, x.data(), np, GhostWindow{gp.n, gp.h(), ls.z0, ls.nz, m / 2 + 1});
      nsel = blob_halo.received();
      blob_halo.exchange(x.data(), 3, sel_x);
      blob_halo.exchange(sigma.data(), 1, sel_s);
      sums.sort(sel_x.data(), sel_s.data(), static_cast<std::size_t>(nsel), gp, prm.blob_cutoff, m);
    } else {
      sums.sort(x.data(), sigma.data(), static_cast<std::size_t>(np), gp, prm.blob_cutoff, m);
    }
    sorted = true;
  }
  /// The blob sums at the rank's lattice planes of the particles' values scale · q into out (3
  /// components, or 1 with `divergence`, nown apart). R > 1: from every rank's particles that
  /// reach them.
  void blob_sums(const double* q, double scale, bool divergence, double* out) {
    sort();
    if (!many) {
      sums.sum(q, scale, divergence, out);
      return;
    }
    blob_halo.exchange(q, 3, sel_q);
    sums.sum(sel_q.data(), scale, divergence, out, ls.z0, ls.nz);
  }
  /// The blob sums of a reinitialisation's three sets, q[j] × scale[j] (dγ_prev, u_prev·V, γ), in
  /// one pass over the stencils and weights (DeviceBlobSums::sum3), at the rank's planes: set 0
  /// into R, sets 1 and 2 into `later`; summed(j) gives set j's.
  void blob_sums3(const double* const q[3], const double scale[3]) {
    sort();
    later.reserve(static_cast<std::size_t>(6 * nown));
    double* const out[3] = {R, later.data(), later.data() + 3 * nown};
    if (!many) {
      sums.sum3(q, scale, out);
      return;
    }
    sel_q.reserve(static_cast<std::size_t>(std::max(9 * nsel, 1LL)));
    for (int j = 0; j < 3; ++j) blob_halo.exchange(q[j], 3, sel_q.data() + 3 * nsel * j);
    const double* const sq[3] = {sel_q.data(), sel_q.data() + 3 * nsel, sel_q.data() + 6 * nsel};
    sums.sum3(sq, scale, out, ls.z0, ls.nz);
  }
  /// Set j of blob_sums3 as the rank's lattice fields.
  const double* summed(int j) const { return j == 0 ? R : later.data() + 3 * nown * (j - 1); }
  /// W = the coefficients (after mode_steps s) of the lattice fields f (Lattice::field's FFT and
  /// the steps after it).
  void transform(const double* f, const ModeSteps& s) {
    events.begin(PhaseEvents::fft_steps);
    forward(f, W);
    mode_steps(s, W);
    events.end();
  }
  /// W = the coefficients (after mode_steps s) of the field whose values × V the particles
  /// carry as scale · q (Lattice::field and the steps after it).
  void field(const double* q, double scale, const ModeSteps& s) {
    events.begin(PhaseEvents::blob_sums);
    blob_sums(q, scale, false, R);
    events.end();
    transform(R, s);
  }
  /// field() of set j of blob_sums3.
  void field_of_set(int j, const ModeSteps& s) {
    events.begin(PhaseEvents::blob_sums);
    const double* f = summed(j);
    events.end();
    transform(f, s);
  }

  // ---- reductions ----

  /// The per-block values of reduce_kernel, finished here in block order.
  std::vector<double> reduce(Reduce op, long long count, const double* v) {
    const unsigned nb = blocks_for(count);
    reduce_kernel<<<nb, kThreads>>>(op, count, v, partial.data());
    VH_CHECK_LAUNCH();
    VH_CHECK_CUDA(cudaMemcpy(host_partial.data(), partial.data(), 3 * nb * sizeof(double), cudaMemcpyDeviceToHost));
    std::vector<double> r(3, 0.0);
    for (unsigned b = 0; b < nb; ++b)
      for (int d = 0; d < 3; ++d)
        r[d] = op == Reduce::sum3 || op == Reduce::nonfinite ? r[d] + host_partial[3 * b + d]
                                                             : max_nan(r[d], host_partial[3 * b + d]);
    return r;
  }

  void resolve_projection() const {
    if (!proj_pending) return;
    const unsigned nb = blocks_for(nm);
    std::vector<double> h(2 * nb);
    VH_CHECK_CUDA(cudaMemcpy(h.data(), proj.data(), h.size() * sizeof(double), cudaMemcpyDeviceToHost));
    double removed = 0, total = 0;
    for (unsigned b = 0; b < nb; ++b) removed += h[2 * b], total += h[2 * b + 1];
    if (many) {  // the ranks' modes: collective, so reinitialise() resolves it on every rank at once
      removed = comm.sum(removed);
      total = comm.sum(total);
    }
    div_removed = total > 0 ? std::sqrt(removed / total) : 0.0;
    proj_pending = false;
  }

  // ---- the method ----

  /// This rank's particles: the lattice points of its planes, with the core σ₀.
  void to_lattice() {
    events.begin(PhaseEvents::rest);
    lattice_kernel<<<blocks_for(nown), kThreads>>>(gp.n, ls.z0, ls.nz, gp.h(), sigma0, x.data(), sigma.data());
    VH_CHECK_LAUNCH();
    events.end();
    np = nown;
    sigma_max = sigma0;
    sorted = gathered_xs = false;
  }
  /// Sum or max of a value over the ranks.
  double over_ranks_sum(double v) const { return many ? comm.sum(v) : v; }
  double over_ranks_max(double v) const { return many ? comm.max(v) : v; }

  void evaluate_rhs() {
    // A state that has overflowed is the driver's to report (max |u| not finite: exit 3 with a
    // checkpoint), not the FMM's bad input (Solver::evaluate_rhs): u = NaN (all bits set).
    const double bad = reduce(Reduce::nonfinite, 3 * np, x.data())[0] + reduce(Reduce::nonfinite, 3 * np, alpha.data())[0];
    if (over_ranks_sum(bad) > 0) {
      VH_CHECK_CUDA(cudaMemset(u, 0xff, 3 * np * sizeof(double)));
      rhs_valid = true;
      maxima_valid = false;
      return;
    }
    if (prm.velocity == Velocity::lattice && since_reinit == 0) {
      const auto t0 = std::chrono::steady_clock::now();
      lattice_rhs();
      VH_CHECK_CUDA(cudaDeviceSynchronize());
      cur.velocity += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      timings = cur.fmm_stages = fmm::Timings{};
      cur.particles = np;
      last_eval_on_lattice = false;  // the FMM's trees are not of these positions
      rhs_valid = true;
      maxima_valid = false;
      return;
    }
    const bool same = since_reinit == 0 && last_eval_on_lattice;
    // The evaluator may work on streams of its own: what this solver wrote is complete first
    // (the reductions above waited for it).
    const auto t0 = std::chrono::steady_clock::now();
    if (many) {
      // This rank's particles as the targets; as the sources, this rank's and the ghosts that
      // its near field reaches (fmm::GpuEvaluator::source_planes), the multipoles of the other
      // ranks' coming by the uniform levels' exchange: each rank forms those of its own
      // particles (where every rank has some: a rank without particles would not join the
      // sums). Where the FMM cannot take the uniform levels (a tree that is not complete), every
      // rank's particles in rank order instead: the evaluation of one rank on the whole set.
      const double before = dcomm->stats().seconds;
      gather_counts();
      const bool share = std::find(counts.begin(), counts.end(), std::size_t(0)) == counts.end();
      bool done = false;
      if (share && fmm_ghosts) {
        // Positions as at the last evaluation (`same`: the lattice again, every step with
        // vortex.reinit_every = 1) keep its ghosts: only α travels.
        if (!(same && ghosts_of_last)) {
          const fmm::GpuEvaluator::SourcePlanes sp = fmm.source_planes(x.data(), static_cast<std::size_t>(np), nall,
                                                                       over_ranks_max(sigma_max));
          fmm_halo.plan(*dcomm, x.data(), np, GhostWindow{sp.planes, sp.side, sp.first, sp.count, sp.reach});
          VH_CHECK(fmm_halo.own_count() == np, "vortex::GpuSolver: the FMM's ghosts left out some of the rank's own");
          gathered_xs = false;  // all_x now holds the ghosts
          fmm_halo.exchange(x.data(), 3, all_x);
          fmm_halo.exchange(sigma.data(), 1, all_s);
          ghosts_of_last = true;
        }
        const long long ns = fmm_halo.received();
        fmm_halo.exchange(alpha.data(), 3, all_a);
        fmm.share_upward(dcomm.get(), static_cast<std::size_t>(fmm_halo.own_first()), static_cast<std::size_t>(np),
                         nall);
        timings = fmm.evaluate_own(all_x.data(), all_a.data(), all_s.data(), static_cast<std::size_t>(ns), u, grad,
                                   same);
        done = fmm.took_uniform();
        fmm_ghosts = done;  // declined: the lists need every particle, gathered from now on
      }
      if (!done) {
        gather_positions();
        gather(alpha.data(), 3, all_a);
        const std::size_t first = displacements(counts)[comm.rank()];
        fmm.share_upward(share ? dcomm.get() : nullptr, first, static_cast<std::size_t>(np));
        timings = fmm.evaluate_own(all_x.data(), all_a.data(), all_s.data(), static_cast<std::size_t>(nall), u, grad,
                                   same);
      }
      timings.exchange = dcomm->stats().seconds - before;
      cur.sources = done ? fmm_halo.received() : nall;
    } else {
      timings = fmm.evaluate_self(x.data(), alpha.data(), sigma.data(), static_cast<std::size_t>(np), u, grad, same);
    }
    cur.velocity += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cur.fmm_stages = timings;
    cur.particles = np;
    last_eval_on_lattice = since_reinit == 0;
    rhs_valid = true;
    maxima_valid = false;
  }

  /// Solver::lattice_rhs: u and ∇u of the particles on the lattice (np = nown, this rank's
  /// lattice points in order: its planes of the lattice field) by FFTs of α.
  void lattice_rhs() {
    split_kernel<<<blocks_for(nown), kThreads>>>(nown, alpha.data(), 1.0, R);
    VH_CHECK_LAUNCH();
    forward(R, H);
    const int reach = kernel::alias_reach(sigma0, gp.h());
    const double scale = 1.0 / (static_cast<double>(nl) * vol);  // the 1/n³ and α/V
    for (int what = 0; what < 4; ++what) {
      blob_velocity_kernel<<<blocks_for(nm), kThreads>>>(nm, lm, sigma0, reach, what, scale, H, W);
      VH_CHECK_LAUNCH();
      inverse_to_R(W);
      if (what == 0) join_kernel<<<blocks_for(nown), kThreads>>>(nown, nown, R, 1.0, u);
      else join_kernel<<<blocks_for(nown), kThreads>>>(nown, nown, R, 1.0, grad, 9, what - 1, 3);
      VH_CHECK_LAUNCH();
    }
    drop_self_pair_kernel<<<blocks_for(np), kThreads>>>(np, alpha.data(), sigma.data(), grad);
    VH_CHECK_LAUNCH();
  }

  /// The work space is about to be overwritten: u and ∇u are gone.
  void use_work() { rhs_valid = maxima_valid = false; }

  bool integrating_factor() const { return prm.diffusion == Diffusion::integrating_factor; }
  /// Solver::first_viscous_half, after advance_kernel (the FFT work space lies over u and ∇u):
  /// visc holds γ of the step's start (the particles on the lattice); the increment
  /// (exp(−ν|k|²Δt/2) − 1) ω of its field is added to γ (× V) and to α (as blob strengths).
  void first_viscous_half(double dt) {
    ModeSteps s;
    s.increment = 0.5 * prm.nu * dt;
    lattice_modes_of(visc.data(), s);
    values(visc.data(), vol, visc.data() + 3 * np, 1.0);
    add_increments_kernel<<<blocks_for(np), kThreads>>>(np, visc.data(), gamma.data(), alpha.data());
    VH_CHECK_LAUNCH();
  }
  /// W = the coefficients of the field the lattice particles' point strengths q carry
  /// (Lattice::modes(q, 1/V): exact, no sums; the rank's lattice particles are its planes), after
  /// the steps s (its scale is set here).
  void lattice_modes_of(const double* q, ModeSteps s) {
    use_work();
    events.begin(PhaseEvents::rest);
    split_kernel<<<blocks_for(nown), kThreads>>>(nown, q, 1.0 / vol, R);
    VH_CHECK_LAUNCH();
    events.end();
    events.begin(PhaseEvents::fft_steps);
    forward(R, W);
    s.scale = 1.0 / static_cast<double>(nl);
    mode_steps(s, W);
    events.end();
  }

  /// W = the lattice vorticity now, with the viscous factor of output_nu_tau() (Solver::points_field).
  void points_field() {
    use_work();
    const double nu_tau = output_nu_tau(prm, t, t_reinit, dt_prev);
    if (since_reinit == 0) {
      ModeSteps s;
      s.nu_tau = nu_tau;
      lattice_modes_of(gamma.data(), s);
      return;
    }
    field(gamma.data(), 1.0, field_steps(nu_tau, false, false));
  }

  /// The steps of the arrived field at a reinitialisation (Solver::reinitialise): its viscous
  /// factor, the projection and the filter.
  ModeSteps field_steps_of_gamma() const { return field_steps(arrival_nu_tau(prm, t, t_reinit), prm.project, true); }

  void reinitialise() {
    use_work();
    ratio_at_reinit = sigma_max / sigma0;
    const double nu_tau = pending_nu_tau(prm, t, t_reinit);
    if (have_history) {
      // The history along the paths that end at the new lattice points (Solver::reinitialise):
      // the γ rate with the step's viscous factor; u_prev·V not projected nor diffused. The
      // three sets' blob sums in one pass, before any of them is overwritten.
      const double* const q[3] = {dg_prev.data(), u_prev.data(), gamma.data()};
      const double scale[3] = {1.0, vol, 1.0};
      events.begin(PhaseEvents::blob_sums);
      blob_sums3(q, scale);
      events.end();
      field_of_set(0, field_steps(nu_tau, false, true));
      values(dg_prev.data(), vol, da_prev.data(), 1.0);
      field_of_set(1, field_steps(0.0, false, true));
      values(u_prev.data(), 1.0, nullptr, 0.0);
      field_of_set(2, field_steps_of_gamma());
    } else {
      field(gamma.data(), 1.0, field_steps_of_gamma());
    }
    if (prm.project) proj_pending = true;
    if (many) resolve_projection();
    values(gamma.data(), vol, alpha.data(), 1.0);
    to_lattice();
    since_reinit = 0;
    t_reinit = t;
    ++reinits;
    last_residual = 0;
  }

  void step(double dt) {
    events.start_step();
    t_reinit -= step_lead(prm, dt, dt_prev, have_history);
    if (!rhs_valid) evaluate_rhs();
    Advance a;
    a.dt = dt;
    a.nu = prm.nu;
    a.L = box;
    a.w = ab2_weights(dt, dt_prev, have_history);
    a.history = have_history;
    a.classical = prm.stretching == Stretching::classical;
    a.spread = prm.diffusion == Diffusion::core_spreading;
    if (integrating_factor()) {  // γ of the step's start, for first_viscous_half after the update
      visc.reserve(static_cast<std::size_t>(6 * np));
      VH_CHECK_CUDA(cudaMemcpy(visc.data(), gamma.data(), 3 * np * sizeof(double), cudaMemcpyDeviceToDevice));
    }
    events.begin(PhaseEvents::update);
    advance_kernel<<<blocks_for(np), kThreads>>>(np, a, x.data(), alpha.data(), gamma.data(), sigma.data(), u, grad, u_prev.data(), da_prev.data(),
                                                 dg_prev.data());
    VH_CHECK_LAUNCH();
    events.end();
    if (integrating_factor()) first_viscous_half(dt);
    have_history = true;
    rhs_valid = maxima_valid = sorted = gathered_xs = false;
    dt_prev = dt;
    // Every particle has the same core (σ₀ at the last reinitialisation, spread alike since), so
    // the host follows the largest one with the device's formula.
    if (a.spread) sigma_max = spread_core(sigma_max, prm.nu, dt);
    t += dt;
    ++steps;
    ++since_reinit;
    const double ratio = std::max(sigma_max, sigma0) / sigma0;
    cur.reinitialised = false;
    if ((prm.reinit_every > 0 && since_reinit >= prm.reinit_every) || ratio > prm.max_core_ratio) {
      reinitialise();
      cur.reinitialised = true;
    }
    events.finish_step();
    if (many) {  // since the last step ended (its evaluation may have come before this call)
      const ExchangeStats now = dcomm->stats();
      cur.exchange = now.seconds - exchanged.seconds;
      cur.exchange_bytes = now.bytes - exchanged.bytes;
      exchanged = now;
    }
    last = cur;
    cur = GpuStepTimes{};
  }

  double max_velocity() {
    maxima();
    return umax;
  }
  double max_gradient() {
    maxima();
    return gmax;
  }
  /// max |u_i| and max |∂u_i/∂x_j| of the current right-hand side (computes it if stale).
  void maxima() {
    if (!rhs_valid) evaluate_rhs();
    if (maxima_valid) return;
    umax = over_ranks_max(reduce(Reduce::max_abs, 3 * np, u)[0]);
    gmax = over_ranks_max(reduce(Reduce::max_abs, 9 * np, grad)[0]);
    maxima_valid = true;
  }

  /// The lattice velocity's coefficients (Lattice::biot_savart of the vorticity now) into H: the
  /// rank's lattice modes.
  void lattice_velocity() {
    points_field();
    biot_savart_kernel<<<blocks_for(nm), kThreads>>>(nm, lm, W, H);
    VH_CHECK_LAUNCH();
  }
  /// One rank: the grid velocity's coefficients on the device (Solver::velocity, the modes
  /// |k_i| < N/2): in H (grid = lattice: its modes at N/2 zeroed) or R (refine > 1: the
  /// truncation to the grid).
  const Cx* grid_velocity() {
    lattice_velocity();
    if (gp.n == g.n) {
      drop_nyquist_kernel<<<blocks_for(nm), kThreads>>>(nm, g.n, H);
      VH_CHECK_LAUNCH();
      return H;
    }
    Cx* out = reinterpret_cast<Cx*>(R);  // 3 nmg complex ≤ 3 np doubles: np ≥ (N + 2)³
    resample_kernel<<<blocks_for(nmg), kThreads>>>(nmg, g.n, nm, gp.n, H, out);
    VH_CHECK_LAUNCH();
    return out;
  }

  /// R > 1: the grid velocity's coefficients on this rank's slab of the grid, on the device (3
  /// gs.local_modes() complex): the lattice's modes moved to the grid's slabs as resample moves
  /// them on the host (its plan, made at the first call; one all-to-all of the modes).
  const Cx* slab_grid_velocity() {
    lattice_velocity();
    if (!to_grid) {
      to_grid = std::make_unique<ResamplePlan>(plan_resample(ls, gs));
      const auto as_ll = [](const std::vector<std::size_t>& v) { return std::vector<long long>(v.begin(), v.end()); };
      to_grid_send.upload(as_ll(to_grid->send));
      to_grid_where.upload(as_ll(to_grid->where));
      to_grid_out.resize(std::max<std::size_t>(3 * to_grid->send.size(), 1));
      to_grid_in.resize(std::max<std::size_t>(3 * to_grid->where.size(), 1));
      slab_velocity.resize(3 * gs.local_modes());
    }
    const ResamplePlan& p = *to_grid;
    const long long ns = static_cast<long long>(p.send.size()), nr = static_cast<long long>(p.where.size());
    if (ns > 0) {
      send_modes_kernel<<<blocks_for(ns), kThreads>>>(ns, nm, to_grid_send.data(), H, to_grid_out.data());
      VH_CHECK_LAUNCH();
    }
    dcomm->alltoallv(to_grid_out.data(), p.send_counts, displacements(p.send_counts), to_grid_in.data(),
                     p.recv_counts, displacements(p.recv_counts), 3 * sizeof(Cx));
    slab_velocity.zero();
    if (nr > 0) {
      place_modes_kernel<<<blocks_for(nr), kThreads>>>(nr, static_cast<long long>(gs.local_modes()),
                                                       to_grid_where.data(), to_grid_in.data(), slab_velocity.data());
      VH_CHECK_LAUNCH();
    }
    return slab_velocity.data();
  }

  /// The particle counts of the ranks (for a gather of values other than the positions).
  void gather_counts() {
    counts = comm.counts(static_cast<std::size_t>(np));
    nall = 0;
    for (std::size_t c : counts) nall += static_cast<long long>(c);
  }

  template <class V>
  void download(std::vector<V>& h, const double* d) const {
    h.resize(static_cast<std::size_t>(np));
    VH_CHECK_CUDA(cudaMemcpy(h.data(), d, np * sizeof(V), cudaMemcpyDeviceToHost));
  }
  template <class V>
  void upload(double* d, const std::vector<V>& h) {
    copy_to_device(d, h.data(), np * sizeof(V));
  }
};

GpuSolver::GpuSolver(const Params& p, const Grid& g) : GpuSolver(p, Slab::whole_grid(g)) {}

GpuSolver::GpuSolver(const Params& p, const Slab& grid_slab) {
  if (!gpu_available())
    throw InputError("vortex: the GPU solver needs a visible CUDA device (--device cpu runs the CPU solver)");
  impl_ = std::make_unique<Impl>(p, grid_slab);
}

GpuSolver::~GpuSolver() = default;

RbfResult GpuSolver::set_velocity(const SpectralSlab& u, double t) {
  if (!impl_->many) return set_velocity(SpectralSlab(u).to_vector(), t);
  return set_velocity(allgather(u), t);  // every rank starts from the whole field
}

RbfResult GpuSolver::set_velocity(const SpectralVector& u, double t) {
  Impl& s = *impl_;
  VH_CHECK(u.grid.n == s.g.n, "GpuSolver::set_velocity: coefficients of another grid");
  s.np = s.nown;  // this rank's lattice points become its particles
  s.use_work();
  // The whole grid's coefficients (one rank: into H, 3 nmg ≤ 3 nm complex; R > 1: apart, once),
  // the vorticity at the rank's lattice modes into W.
  DeviceArray<Cx> whole;
  Cx* ug = s.H;
  if (s.many) {
    whole.resize(static_cast<std::size_t>(3 * s.nmg));
    ug = whole.data();
  }
  for (int d = 0; d < 3; ++d) copy_to_device(ug + d * s.nmg, u.c[d].data(), s.nmg * sizeof(Cx));
  init_modes_kernel<<<blocks_for(s.nm), kThreads>>>(s.nm, s.lm, s.nmg, s.g.n, ug, s.W);
  VH_CHECK_LAUNCH();
  ModeSteps carried;  // only the modes the filter keeps (keep_carried_modes)
  carried.filter = s.prm.filter;
  carried.kc = s.kc;
  s.mode_steps(carried, s.W);
  // Solver::set_velocity: γ = ω V; α the RBF strengths of ω (init = rbf) or α = γ (direct).
  if (s.prm.init == Init::rbf) {
    s.values(s.gamma.data(), s.vol, s.alpha.data(), 1.0);
  } else {
    s.values(s.gamma.data(), s.vol, nullptr, 0.0);
    VH_CHECK_CUDA(cudaMemcpy(s.alpha.data(), s.gamma.data(), 3 * s.nown * sizeof(double), cudaMemcpyDeviceToDevice));
  }
  s.to_lattice();
  s.t = s.t_reinit = t;
  s.have_history = false;
  s.since_reinit = 0;
  s.last_residual = 0;
  return RbfResult{};
}

void GpuSolver::step(double dt) { impl_->step(dt); }
double GpuSolver::max_velocity() { return impl_->max_velocity(); }
double GpuSolver::max_gradient() { return impl_->max_gradient(); }

void GpuSolver::velocity(SpectralVector& u) {
  Impl& s = *impl_;
  if (s.many) {  // every rank's slab, gathered
    SpectralSlab mine;
    velocity(mine);
    u = allgather(mine);
    return;
  }
  const Cx* d = s.grid_velocity();
  u = SpectralVector(s.g);
  for (int c = 0; c < 3; ++c)
    VH_CHECK_CUDA(cudaMemcpy(u.c[c].data(), d + c * s.nmg, s.nmg * sizeof(Cx), cudaMemcpyDeviceToHost));
}

void GpuSolver::velocity(SpectralSlab& u) {
  Impl& s = *impl_;
  if (!s.many) {
    SpectralVector whole;
    velocity(whole);
    u = SpectralSlab::whole(std::move(whole));
    return;
  }
  // R > 1: the rank's lattice modes to the host, then to the grid's slabs (resample: the grid's
  // ky go to the ranks in another order than the lattice's, and refine > 1 truncates).
  s.lattice_velocity();
  SpectralSlab lat(s.ls);
  for (int c = 0; c < 3; ++c)
    VH_CHECK_CUDA(cudaMemcpy(lat.c[c].data(), s.H + c * s.nm, s.nm * sizeof(Cx), cudaMemcpyDeviceToHost));
  if (u.slab.grid.n != s.g.n || u.slab.ranks() != s.gs.ranks()) u = SpectralSlab(s.gs);
  resample(lat, u);
}

bool GpuSolver::device_velocity(const void* d[3]) {
  Impl& s = *impl_;
  if (s.many) {  // R > 1: the lattice's slab of modes moved to the grid's slab, on the device
    const Cx* v = s.slab_grid_velocity();
    const long long nt = static_cast<long long>(s.gs.local_modes());
    for (int c = 0; c < 3; ++c) d[c] = v + c * nt;
    return true;
  }
  const Cx* v = s.grid_velocity();
  for (int c = 0; c < 3; ++c) d[c] = v + c * s.nmg;
  return true;
}

double GpuSolver::time() const { return impl_->t; }
long GpuSolver::steps() const { return impl_->steps; }
long GpuSolver::reinits() const { return impl_->reinits; }
double GpuSolver::core_ratio_at_reinit() const { return impl_->ratio_at_reinit; }
double GpuSolver::last_rbf_residual() const { return impl_->last_residual; }
double GpuSolver::last_div_removed() const {
  impl_->resolve_projection();
  return impl_->div_removed;
}
const fmm::Timings& GpuSolver::last_timings() const { return impl_->timings; }

RbfResult GpuSolver::reinitialise() {
  impl_->reinitialise();
  return RbfResult{};
}

Monitors GpuSolver::monitors() {
  Impl& s = *impl_;
  Monitors m;
  std::vector<double> sg = s.reduce(Reduce::sum3, s.np, s.gamma.data());
  if (s.many) s.comm.sum(sg);
  m.total_strength = {sg[0], sg[1], sg[2]};
  // ∇·ω_σ of the blob field the FMM sees, at the lattice points.
  s.use_work();
  s.blob_sums(s.alpha.data(), 1.0, true, s.R);
  m.max_div_omega = s.over_ranks_max(s.reduce(Reduce::max_abs, s.nown, s.R)[0]);
  s.points_field();
  s.inverse_to_R(s.W);
  m.max_omega = s.over_ranks_max(s.reduce(Reduce::max_norm3, s.nown, s.R)[0]);
  m.div_removed = last_div_removed();
  m.core_ratio = s.sigma_max / s.sigma0;
  m.reinits = s.reinits;
  m.last_rbf_residual = s.last_residual;
  m.core_ratio_at_reinit = s.ratio_at_reinit;
  return m;
}

State GpuSolver::state() const {
  const Impl& s = *impl_;
  State st;
  s.download(st.particles.x, s.x.data());
  s.download(st.particles.alpha, s.alpha.data());
  s.download(st.particles.gamma, s.gamma.data());
  s.download(st.particles.sigma, s.sigma.data());
  if (s.have_history) {
    s.download(st.u_prev, s.u_prev.data());
    s.download(st.dalpha_prev, s.da_prev.data());
    s.download(st.dgamma_prev, s.dg_prev.data());
  }
  st.t = s.t;
  st.t_reinit = s.t_reinit;
  st.dt_prev = s.dt_prev;
  st.last_residual = s.last_residual;
  st.ratio_at_reinit = s.ratio_at_reinit;
  st.div_removed = last_div_removed();
  st.steps = s.steps;
  st.since_reinit = s.since_reinit;
  st.reinits = s.reinits;
  return st;
}

void GpuSolver::set_state(const State& st) {
  Impl& s = *impl_;
  const Particles& p = st.particles;
  // One rank: one particle per lattice point. R > 1: this rank's share of them (the caller
  // checked the whole state and kept this rank's, app/steppers.cpp).
  const std::size_t n = s.many ? p.size() : static_cast<std::size_t>(s.nl);
  if (p.size() != n || p.alpha.size() != n || p.sigma.size() != n)
    throw InputError("vortex state: " + std::to_string(p.size()) + " particles, the lattice of this run has " +
                     std::to_string(n) + " (allowed: one per lattice point, (refine N)^3)");
  check_state_scheme(s.prm, st);
  const bool history = !st.u_prev.empty();
  if (history && (st.u_prev.size() != n || st.dalpha_prev.size() != n))
    throw InputError("vortex state: the AB2 history has " + std::to_string(st.u_prev.size()) + " entries, not " +
                     std::to_string(n));
  s.use_work();
  s.reserve_particles(static_cast<long long>(n));
  s.np = static_cast<long long>(n);
  s.upload(s.x.data(), p.x);
  s.upload(s.alpha.data(), p.alpha);
  s.upload(s.sigma.data(), p.sigma);
  if (p.gamma.size() == n) s.upload(s.gamma.data(), p.gamma);
  else VH_CHECK_CUDA(cudaMemset(s.gamma.data(), 0, s.gamma.bytes()));
  if (history) {
    s.upload(s.u_prev.data(), st.u_prev);
    s.upload(s.da_prev.data(), st.dalpha_prev);
    if (st.dgamma_prev.size() == n) s.upload(s.dg_prev.data(), st.dgamma_prev);
    else VH_CHECK_CUDA(cudaMemset(s.dg_prev.data(), 0, s.dg_prev.bytes()));
  }
  s.have_history = history;
  s.sigma_max = s.over_ranks_max(p.sigma.empty() ? 0.0 : *std::max_element(p.sigma.begin(), p.sigma.end()));
  s.t = st.t;
  s.t_reinit = st.t_reinit;
  s.dt_prev = st.dt_prev;
  s.last_residual = st.last_residual;
  s.ratio_at_reinit = st.ratio_at_reinit;
  s.div_removed = st.div_removed;
  s.proj_pending = false;
  s.steps = st.steps;
  s.since_reinit = st.since_reinit;
  s.reinits = st.reinits;
  s.sorted = s.last_eval_on_lattice = s.gathered_xs = s.ghosts_of_last = false;
}

GpuStepTimes GpuSolver::last_step_times() {
  Impl& s = *impl_;
  double ph[PhaseEvents::kPhases];
  s.events.times(ph);
  GpuStepTimes t = s.last;
  t.update = ph[PhaseEvents::update];
  t.blob_sums = ph[PhaseEvents::blob_sums];
  t.fft_steps = ph[PhaseEvents::fft_steps];
  t.rest = ph[PhaseEvents::rest];
  return t;
}

std::size_t GpuSolver::device_bytes() const {
  const Impl& s = *impl_;
  std::size_t b = s.work.bytes() + s.s1.bytes() + s.partial.bytes() + s.proj.bytes() + s.sums.device_bytes();
  for (const auto* a : {&s.x, &s.alpha, &s.gamma, &s.sigma, &s.u_prev, &s.da_prev, &s.dg_prev, &s.all_x, &s.all_a,
                        &s.all_s, &s.sel_x, &s.sel_s, &s.sel_q, &s.rhs, &s.later, &s.visc})
    b += a->bytes();
  if (s.sfft) b += s.sfft->device_bytes();
  return b;
}

std::size_t GpuSolver::fmm_device_bytes() const { return impl_->fmm.memory().reserved; }

}  // namespace vh::vortex
