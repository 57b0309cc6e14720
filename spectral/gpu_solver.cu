// GPU back end (gpu_solver.h). One kernel per phase of rk4.h, each the device twin of a
// loop in cpu_solver.cpp, all calling rhs_kernel.h:
//   load_kernel   ↔ CpuSolver::load_state_inputs     (û, ω̂ → zero-padded buffers)
//   cross_kernel  ↔ CpuSolver::nonlinear_transforms  (u × ω on the M³ grid)
//   post_kernel   ↔ CpuSolver::post                  (project, truncate, RK4 stage, next input)
//   max_kernel    ↔ CpuSolver::max_velocity          (max |u_i| on the N³ grid)
//   energy_kernel ↔ CpuSolver::energies              (K and ½⟨ω·ω⟩ of the state)
// Transforms: cuFFT in place (T = double: Z2D/D2Z; T = float: C2R/R2C). With
// Params::fft_callbacks (off by default, solver.h says why) with LTO callbacks (fft_callbacks.h) that fold the per-point work
// into the transforms' first and last passes: ω's 3 inverse transforms make i k × û from
// buffers 0–2 as they load, u's read only the retained modes, the last one (u_z, alone in
// its plan) stores u × ω instead of u, and the 3 forward transforms store only the
// retained modes; load_kernel and post_kernel then visit the retained modes only and
// cross_kernel is not run. Without callbacks: one batched plan for the 6 inverse and one
// for the 3 forward transforms, every pass separate; with Params::pruned_transforms a
// (z, y) C2C plan over the non-zero kx columns and an x plan instead (slower on the H200,
// see solver.h). The bare batched plans also time the floor (time_transforms).
// With the fused transforms (Params::transforms, fused.h) the evaluation is five passes of
// cuFFTDx line FFTs instead: load_state_inputs runs ZI, nonlinear_transforms YI, XC and YF,
// post_transform ZFP (post_mode's work and the next stage's ZI); the state keeps its layout,
// so max_velocity, energies and velocity are unchanged.
// Everything in the time loop stays on the device; the host only launches. Measured on an
// H200: bench/RESULTS.md.
// On R > 1 ranks (core/slab.h) the evaluation and max|u| are gpu_slab.cuh's instead: the
// fused passes per slab, or cuFFT line transforms in the same structure, with all-to-all
// transposes between the ranks; the state is the rank's slab.
#include <cuda_runtime.h>

#include <cufft.h>
#include <cufftXt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "base/cuda_check.h"
#include "base/comm.h"
#include "base/device_buffer.h"
#include "base/device_comm.h"
#include "base/launch.h"
#include "core/error.h"
#include "spectral/fft_callbacks.h"
#include "spectral/fft_callbacks_fatbin.h"  // vh_fft_callbacks_fatbin (generated, LTO-IR)
#include "spectral/fused.h"
#include "spectral/gpu_solver.h"
#include "spectral/rhs_kernel.h"
#include "spectral/rk4.h"
#include "spectral/slab_kernel.h"

namespace vh::spectral {
namespace {

/// Whether Params::transforms = automatic takes the fused passes for this case: where they
/// were measured faster than the cuFFT path on the H200 (bench/RESULTS.md): with the 3/2 and
/// the 2/3 rule (nothing to prune without dealiasing: fp64 `none` took 1.85 ms at 128³ and
/// 14.9 ms at 256³ fused against 1.64 and 11.8 with cuFFT).
bool fused_by_default(const kernel::Geometry& g, bool) { return g.dealias != kernel::kNone; }

using kernel::Cx;
using kernel::Geometry;
using kernel::StageArrays;

constexpr int kBx = 32, kBy = 8;  // warps run along x: coalesced rows

dim3 grid_for(int nx, int ny, int nz) { return dim3((nx + kBx - 1) / kBx, (ny + kBy - 1) / kBy, nz); }

// Mode kernels run flat over the M-grid half layout (no idle lanes when M/2+1 is not a
// multiple of the warp width) and decode (ix, iy, iz); 32-bit indices suffice (768²·385 < 2³²).
constexpr int kFlat = 256;

__device__ inline bool decode(const Geometry& g, int& ix, int& iy, int& iz) {
  const unsigned i = blockIdx.x * kFlat + threadIdx.x;
  const unsigned mxh = g.mxh(), m = g.m;
  if (i >= mxh * m * m) return false;
  const unsigned r = i / mxh;
  ix = int(i - r * mxh);
  iy = int(r % m);
  iz = int(r / m);
  return true;
}

/// Largest |k_i| of the retained set (rhs_kernel.h retained(): a box).
__host__ __device__ inline int kmax_retained(const Geometry& g) {
  return g.dealias == kernel::kTwoThirds ? (g.n - 1) / 3 : g.n / 2 - 1;
}
/// Modes a mode kernel visits: the whole M-grid half layout, or only the retained box
/// when the transforms themselves mask the other modes (transforms_load_retained).
std::size_t mode_count(const Geometry& g, bool retained_only) {
  const std::size_t k = kmax_retained(g);
  return retained_only ? (k + 1) * (2 * k + 1) * (2 * k + 1) : std::size_t(g.m) * g.m * g.mxh();
}
/// Flat index → (ix, iy, iz) over the retained box (kx = 0 … K, ky, kz = −K … K).
__device__ inline bool decode_retained(const Geometry& g, int& ix, int& iy, int& iz) {
  const unsigned i = blockIdx.x * kFlat + threadIdx.x;
  const unsigned k = kmax_retained(g), nx = k + 1, ny = 2 * k + 1;
  if (i >= nx * ny * ny) return false;
  const unsigned r = i / nx;
  ix = int(i - r * nx);
  iy = kernel::axis_index(int(r % ny) - int(k), g.m);
  iz = kernel::axis_index(int(r / ny) - int(k), g.m);
  return true;
}
template <class T>
__device__ inline bool decode_for(const Geometry& g, const StageArrays<T>& arr, int& ix, int& iy, int& iz) {
  return arr.transforms_load_retained ? decode_retained(g, ix, iy, iz) : decode(g, ix, iy, iz);
}

template <class T>
__global__ void __launch_bounds__(kFlat) load_kernel(Geometry g, StageArrays<T> arr) {
  int ix, iy, iz;
  if (!decode_for(g, arr, ix, iy, iz)) return;
  kernel::load_mode(g, ix, iy, iz, arr);
}

template <class T>
__global__ void __launch_bounds__(kFlat) post_kernel(Geometry g, int s, bool expl, T nu, T dt, StageArrays<T> arr) {
  int ix, iy, iz;
  if (!decode_for(g, arr, ix, iy, iz)) return;
  kernel::post_mode(g, s, expl, nu, dt, ix, iy, iz, arr);
}

template <class T>
struct Vec2;
template <>
struct Vec2<double> {
  using type = double2;
};
template <>
struct Vec2<float> {
  using type = float2;
};

/// u × ω over buffers 0–2 (u) and 3–5 (ω), flat over the in-place real arrays (padding
/// columns included: the forward transform ignores them), two reals per thread; `pairs`
/// = reals per buffer / 2.
template <class T>
__global__ void __launch_bounds__(kFlat) cross_kernel(unsigned pairs, typename Vec2<T>::type* __restrict__ r) {
  const unsigned i = blockIdx.x * kFlat + threadIdx.x;
  if (i >= pairs) return;
  using V = typename Vec2<T>::type;
  V u0 = r[i], u1 = r[pairs + i], u2 = r[2 * pairs + i];
  const V w0 = r[3 * pairs + i], w1 = r[4 * pairs + i], w2 = r[5 * pairs + i];
  kernel::cross_in_place(u0.x, u1.x, u2.x, w0.x, w1.x, w2.x);
  kernel::cross_in_place(u0.y, u1.y, u2.y, w0.y, w1.y, w2.y);
  r[i] = u0;
  r[pairs + i] = u1;
  r[2 * pairs + i] = u2;
}

// max of non-negative floating-point numbers via their bit patterns (monotone for x ≥ 0).
__device__ inline void atomic_max_nonneg(double* a, double v) {
  atomicMax(reinterpret_cast<unsigned long long*>(a), (unsigned long long)__double_as_longlong(v));
}
__device__ inline void atomic_max_nonneg(float* a, float v) {
  atomicMax(reinterpret_cast<unsigned int*>(a), (unsigned int)__float_as_uint(v));
}

/// max over the N³ points of |u_i| for the 3 buffers of an N-size in-place transform.
template <class T>
__global__ void max_kernel(int n, int row, long long cd, const T* __restrict__ r, T* out) {
  __shared__ T red[kBx * kBy];
  const int ix = blockIdx.x * kBx + threadIdx.x, iy = blockIdx.y * kBy + threadIdx.y;
  const int iz = blockIdx.z;
  T mx = 0;
  if (ix < n && iy < n) {
    const T* p = r + ((long long)iz * n + iy) * row + ix;
    for (int c = 0; c < 3; ++c) mx = fmax(mx, fabs(p[c * cd]));
  }
  const int t = threadIdx.y * kBx + threadIdx.x;
  red[t] = mx;
  __syncthreads();
  for (int w = kBx * kBy / 2; w > 0; w /= 2) {
    if (t < w) red[t] = fmax(red[t], red[t + w]);
    __syncthreads();
  }
  if (t == 0) atomic_max_nonneg(out, red[0]);
}

/// Per-block partial sums of mode_energy() over the state (slab order [kz][slot][kx]; ky of a
/// slot from ky_of_slot, or the slot itself on one rank): part[2b], part[2b+1].
template <class T>
__global__ void energy_kernel(Geometry g, int slots, const int* ky_of_slot, StageArrays<T> arr, double* part) {
  __shared__ double se[kBx * kBy], sz[kBx * kBy];
  const int ix = blockIdx.x * kBx + threadIdx.x, j = blockIdx.y * kBy + threadIdx.y;
  const int iz = blockIdx.z;
  double e = 0, z = 0;
  if (ix < g.nxh() && j < slots) {
    const Cx<T>* u[3] = {arr.u0[0], arr.u0[1], arr.u0[2]};
    const long long nm = ((long long)iz * slots + j) * g.nxh() + ix;
    kernel::mode_energy(g, ix, ky_of_slot ? ky_of_slot[j] : j, iz, nm, u, e, z);
  }
  const int t = threadIdx.y * kBx + threadIdx.x;
  se[t] = e;
  sz[t] = z;
  __syncthreads();
  for (int w = kBx * kBy / 2; w > 0; w /= 2) {
    if (t < w) {
      se[t] += se[t + w];
      sz[t] += sz[t + w];
    }
    __syncthreads();
  }
  if (t == 0) {
    const long long b = ((long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    part[2 * b] = se[0];
    part[2 * b + 1] = sz[0];
  }
}

template <class T>
struct CufftTypes;
template <>
struct CufftTypes<double> {
  static constexpr cufftType r2c = CUFFT_D2Z, c2r = CUFFT_Z2D, c2c = CUFFT_Z2Z;
  static constexpr cufftXtCallbackType ld_complex = CUFFT_CB_LD_COMPLEX_DOUBLE,
                                       st_real = CUFFT_CB_ST_REAL_DOUBLE,
                                       st_complex = CUFFT_CB_ST_COMPLEX_DOUBLE;
  static constexpr int cb = 0;  // index into the callback names (fft_callbacks.h)
  static cufftResult c2c_exec(cufftHandle h, void* d, int dir) {
    auto* z = static_cast<cufftDoubleComplex*>(d);
    return cufftExecZ2Z(h, z, z, dir);
  }
  static cufftResult fwd(cufftHandle h, double* d) {
    return cufftExecD2Z(h, d, reinterpret_cast<cufftDoubleComplex*>(d));
  }
  static cufftResult inv(cufftHandle h, double* d) {
    return cufftExecZ2D(h, reinterpret_cast<cufftDoubleComplex*>(d), d);
  }
};
template <>
struct CufftTypes<float> {
  static constexpr cufftType r2c = CUFFT_R2C, c2r = CUFFT_C2R, c2c = CUFFT_C2C;
  static constexpr cufftXtCallbackType ld_complex = CUFFT_CB_LD_COMPLEX, st_real = CUFFT_CB_ST_REAL,
                                       st_complex = CUFFT_CB_ST_COMPLEX;
  static constexpr int cb = 1;
  static cufftResult c2c_exec(cufftHandle h, void* d, int dir) {
    auto* z = static_cast<cufftComplex*>(d);
    return cufftExecC2C(h, z, z, dir);
  }
  static cufftResult fwd(cufftHandle h, float* d) {
    return cufftExecR2C(h, d, reinterpret_cast<cufftComplex*>(d));
  }
  static cufftResult inv(cufftHandle h, float* d) {
    return cufftExecC2R(h, reinterpret_cast<cufftComplex*>(d), d);
  }
};

/// A cuFFT LTO callback of fft_callbacks.cu: its symbol and kind.
struct Callback {
  const char* name;
  cufftXtCallbackType type;
};

/// In-place batched plan of `howmany` m³ transforms, buffers m²(m/2+1) complex apart,
/// without its own work area (the solver shares one among its plans); `ws` gets its size.
/// `cbs`: LTO callbacks linked into the plan, each given the caller info *info_slot (a
/// device pointer). cuFFT keeps the pointers given to cufftXtSetJITCallback (the slot, the
/// fatbin, the name) and may read them when the plan is made, so the slot must outlive
/// the plan: the solver's member, not a local (d7a6ad4 passed a loop-local's address).
/// 64-bit sizes: six 768³ buffers exceed 2³¹ reals.
template <class T>
cufftHandle plan_many(int m, int howmany, bool inverse, cudaStream_t st, std::size_t& ws,
                      std::initializer_list<Callback> cbs = {}, void** info_slot = nullptr) {
  long long n[3] = {m, m, m};
  long long cemb[3] = {m, m, m / 2 + 1};
  long long remb[3] = {m, m, 2 * (m / 2 + 1)};
  const long long cdist = (long long)m * m * (m / 2 + 1);
  cufftHandle h;
  VH_CHECK_CUFFT(cufftCreate(&h));
  try {
    for (const Callback& cb : cbs)
      VH_CHECK_CUFFT(cufftXtSetJITCallback(h, cb.name, vh_fft_callbacks_fatbin,
                                           sizeof vh_fft_callbacks_fatbin, cb.type, info_slot));
    VH_CHECK_CUFFT(cufftSetAutoAllocation(h, 0));
    if (inverse)
      VH_CHECK_CUFFT(cufftMakePlanMany64(h, 3, n, cemb, 1, cdist, remb, 1, 2 * cdist,
                                         CufftTypes<T>::c2r, howmany, &ws));
    else
      VH_CHECK_CUFFT(cufftMakePlanMany64(h, 3, n, remb, 1, 2 * cdist, cemb, 1, cdist,
                                         CufftTypes<T>::r2c, howmany, &ws));
    VH_CHECK_CUFFT(cufftSetStream(h, st));
  } catch (...) {
    cufftDestroy(h);
    throw;
  }
  return h;
}

/// A plan from cuFFT's advanced layout (64-bit sizes), without its own work area.
cufftHandle plan_layout(int rank, long long* n, long long* iemb, long long istride, long long idist,
                        long long* oemb, long long ostride, long long odist, cufftType type,
                        long long batch, cudaStream_t st, std::size_t& ws) {
  cufftHandle h;
  VH_CHECK_CUFFT(cufftCreate(&h));
  VH_CHECK_CUFFT(cufftSetAutoAllocation(h, 0));
  VH_CHECK_CUFFT(cufftMakePlanMany64(h, rank, n, iemb, istride, idist, oemb, ostride, odist, type,
                                     batch, &ws));
  VH_CHECK_CUFFT(cufftSetStream(h, st));
  return h;
}

#include "spectral/gpu_slab.cuh"

template <class T>
class GpuSolver final : public Rk4Solver {
 public:
  GpuSolver(const Params& p, const Slab& s) : p_(p), slab_(s) {
    const int n = s.grid.n;
    g_ = kernel::make_geometry(n, p.dealias);
    nmodes_ = s.local_modes();
    pmodes_ = std::size_t(g_.m) * g_.m * g_.mxh();
    pruned_ = p.pruned_transforms;
    VH_CHECK_CUDA(cudaStreamCreate(&st_));
    const bool expl = p.viscosity == Viscosity::explicit_rk4;
    const std::size_t nstate = (expl ? 9 : 6) * nmodes_;
    state_.resize(nstate);
    state_.zero();
    dmax_.resize(1);
    for (int c = 0; c < 3; ++c) {
      arr_.u0[c] = state_.data() + c * nmodes_;
      arr_.acc[c] = state_.data() + (3 + c) * nmodes_;
      arr_.a[c] = expl ? state_.data() + (6 + c) * nmodes_ : nullptr;
    }
    VH_CHECK_CUDA(cudaEventCreate(&e0_));
    VH_CHECK_CUDA(cudaEventCreate(&e1_));
    if (!s.whole()) {
      make_slab(p, s);
      return;
    }
    work_.resize(6 * pmodes_);
    work_.zero();
    for (int c = 0; c < 6; ++c) arr_.buf[c] = work_.data() + c * pmodes_;
    std::size_t w1 = 0, w2 = 0, w3 = 0, w4 = 0, w5 = 0, w6 = 0;
    invn_ = plan_many<T>(n, 3, true, st_, w3);
    plans_.push_back(invn_);
    if (p.pruned_transforms) {
      // Pruned 3-D transforms: the (z, y) C2C passes only over the kx columns that can be
      // non-zero (kx ≤ kxmax, 2/3 of them for the 3/2 and 2/3 rules), the x pass over all rows.
      const int kxmax = g_.dealias == kernel::kTwoThirds ? (n - 1) / 3 : n / 2 - 1;
      long long m = g_.m, mxh = g_.mxh(), mrow = g_.mrow();
      long long n2[2] = {m, m}, e2[2] = {m, m};
      colsA_ = plan_layout(2, n2, e2, mxh, 1, e2, mxh, 1, CufftTypes<T>::c2c, kxmax + 1, st_, w4);
      long long n1[1] = {m}, ec[1] = {mxh}, er[1] = {mrow};
      rowsInv_ = plan_layout(1, n1, ec, 1, mxh, er, 1, mrow, CufftTypes<T>::c2r, 6 * m * m, st_, w5);
      rowsFwd_ = plan_layout(1, n1, er, 1, mrow, ec, 1, mxh, CufftTypes<T>::r2c, 3 * m * m, st_, w6);
      plans_.insert(plans_.end(), {colsA_, rowsInv_, rowsFwd_});
    } else {
      inv6_ = plan_many<T>(g_.m, 6, true, st_, w1);
      fwd3_ = plan_many<T>(g_.m, 3, false, st_, w2);
      plans_.insert(plans_.end(), {inv6_, fwd3_});
    }
    const bool want_fused = !p.pruned_transforms &&
                            (p.transforms == Transforms::fused ||
                             (p.transforms == Transforms::automatic && fused_by_default(g_, p.single_precision)));
    if (want_fused) {
      const std::string why = fused::unsupported_reason(g_, p.single_precision);
      if (why.empty()) {
        const kernel::FusedLayout l = kernel::FusedLayout::make(g_);
        zb_.resize(l.zb_size());
        yb_.resize(l.yb_size());
        zb_.zero();
        yb_.zero();
        fused_ = true;
      } else if (p.transforms == Transforms::fused) {
        std::fprintf(stderr, "spectral: fused transforms unavailable (%s); cuFFT instead\n", why.c_str());
      }
    }
    std::size_t wc = 0;
    cb_ = p.fft_callbacks && !p.pruned_transforms && !fused_ ? kAllCallbacks : 0;
    if (const char* e = std::getenv("VH_SPECTRAL_CB")) cb_ = p.pruned_transforms || fused_ ? 0 : std::atoi(e);
    if (cb_) make_callback_plans(wc);
    arr_.transforms_load_retained = (cb_ & kLoads) != 0;
    const std::size_t ws = std::max({w1, w2, w3, w4, w5, w6, wc, std::size_t(256)});
    fftws_.resize(ws);
    for (cufftHandle h : plans_) VH_CHECK_CUFFT(cufftSetWorkArea(h, fftws_.data()));
  }
  ~GpuSolver() override {
    slab_passes_.reset();
    for (cufftHandle h : plans_) cufftDestroy(h);
    cudaEventDestroy(e0_);
    cudaEventDestroy(e1_);
    cudaStreamDestroy(st_);
  }

  void set_velocity(const SpectralSlab& u, double t) override {
    VH_CHECK(u.slab.grid.n == g_.n && u.c[0].size() == nmodes_, "set_velocity: grid or slab differs from the solver's");
    std::vector<Cx<T>> h(3 * nmodes_);
    kernel::for_each_state_mode(g_, slab_, [&](std::size_t m, bool keep) {
      for (int c = 0; c < 3; ++c)
        h[c * nmodes_ + m] = keep ? Cx<T>{T(u.c[c][m].real()), T(u.c[c][m].imag())} : Cx<T>{T(0), T(0)};
    });
    VH_CHECK_CUDA(cudaMemcpyAsync(state_.data(), h.data(), h.size() * sizeof(Cx<T>),
                                  cudaMemcpyHostToDevice, st_));
    VH_CHECK_CUDA(cudaStreamSynchronize(st_));
    t_ = t;
    inputs_ready_ = false;
    max_valid_ = false;
  }

  void velocity(SpectralSlab& u) override { download(state_.data(), u); }

  double max_velocity() override {
    if (max_valid_) return max_cache_;
    if (slab_passes_) {
      inputs_ready_ = false;
      max_valid_ = true;
      return max_cache_ = slab_passes_->max_velocity(arr_, dmax_.data());
    }
    const int n = g_.n;
    const std::size_t cd = std::size_t(n) * n * g_.nxh();
    for (int c = 0; c < 3; ++c)
      VH_CHECK_CUDA(cudaMemcpyAsync(work_.data() + c * cd, arr_.u0[c], nmodes_ * sizeof(Cx<T>),
                                    cudaMemcpyDeviceToDevice, st_));
    VH_CHECK_CUFFT(CufftTypes<T>::inv(invn_, work_.template as<T>()));
    dmax_.zero(st_);
    max_kernel<T><<<grid_for(n, n, n), dim3(kBx, kBy), 0, st_>>>(
        n, 2 * g_.nxh(), 2 * (long long)cd, work_.template as<const T>(), dmax_.data());
    VH_CHECK_LAUNCH();
    T mx = 0;
    VH_CHECK_CUDA(cudaMemcpyAsync(&mx, dmax_.data(), sizeof(T), cudaMemcpyDeviceToHost, st_));
    VH_CHECK_CUDA(cudaStreamSynchronize(st_));
    inputs_ready_ = false;
    max_valid_ = true;
    return max_cache_ = double(mx);
  }

  Energies energies() override {
    const dim3 grid = grid_for(g_.nxh(), slab_.slots(), g_.n);
    const std::size_t nb = std::size_t(grid.x) * grid.y * grid.z;
    part_.reserve(2 * nb);
    energy_kernel<T><<<grid, dim3(kBx, kBy), 0, st_>>>(g_, slab_.slots(), ky_of_slot_.data(), arr_, part_.data());
    VH_CHECK_LAUNCH();
    std::vector<double> h(2 * nb);
    VH_CHECK_CUDA(cudaMemcpyAsync(h.data(), part_.data(), h.size() * sizeof(double), cudaMemcpyDeviceToHost, st_));
    VH_CHECK_CUDA(cudaStreamSynchronize(st_));
    Energies r;
    for (std::size_t b = 0; b < nb; ++b) {
      r.K += h[2 * b];
      r.enstrophy += h[2 * b + 1];
    }
    return {slab_.comm.sum(r.K), slab_.comm.sum(r.enstrophy)};
  }

  void nonlinear_term(SpectralSlab& out) override {
    load_state_inputs();
    nonlinear_transforms();
    StageArrays<T> arr = arr_;
    for (int c = 0; c < 3; ++c) arr.a[c] = arr.acc[c];
    VH_CHECK_CUDA(cudaMemsetAsync(arr_.acc[0], 0, 3 * nmodes_ * sizeof(Cx<T>), st_));
    post(kernel::kRhsOnly, 0.0, arr);
    download(arr_.acc[0], out);
    inputs_ready_ = false;
  }

  double time_transforms(int reps) override {
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
      load_state_inputs();
      VH_CHECK_CUDA(cudaEventRecord(e0_, st_));
      for (int s = 0; s < 4; ++s) {
        if (slab_passes_) {
          slab_passes_->local_passes(arr_);
          continue;
        }
        inverse_transforms();
        forward_transforms();
      }
      VH_CHECK_CUDA(cudaEventRecord(e1_, st_));
      VH_CHECK_CUDA(cudaEventSynchronize(e1_));
      float ms = 0;
      VH_CHECK_CUDA(cudaEventElapsedTime(&ms, e0_, e1_));
      t.push_back(1e-3 * ms);
    }
    inputs_ready_ = false;
    std::sort(t.begin(), t.end());
    return t.empty() ? 0.0 : t[t.size() / 2];
  }

  void synchronize() override { VH_CHECK_CUDA(cudaStreamSynchronize(st_)); }
  const void* device_velocity(int c) override {
    if (!std::is_same<T, double>::value) return nullptr;
    synchronize();
    return state_.data() + std::size_t(c) * nmodes_;
  }
  int transform_size() const override { return g_.m; }
  bool uses_fft_callbacks() const override { return cb_ != 0; }
  bool uses_fused_transforms() const override { return fused_ || (slab_passes_ && slab_passes_->fused()); }
  ExchangeStats exchange_stats() const override { return slab_passes_ ? slab_passes_->stats() : ExchangeStats{}; }
  std::string path() const override {
    if (slab_passes_)
      return std::string(slab_passes_->fused() ? "slab: fused cuFFTDx passes" : "slab: cuFFT lines") +
             ", exchange " + slab_passes_->transport() + (slab_passes_->overlapped() ? " overlapped" : "");
    return fused_ ? "fused cuFFTDx passes" : cb_ ? "cuFFT 3-D, callbacks" : pruned_ ? "cuFFT pruned" : "cuFFT 3-D";
  }

 protected:
  void load_state_inputs() override {
    if (slab_passes_) return slab_passes_->load(arr_);
    if (fused_) {
      fused_pass(fused::Pass::z_inverse, kernel::kRhsOnly, 0.0, arr_);
      return;
    }
    const std::size_t nm = mode_count(g_, arr_.transforms_load_retained);
    load_kernel<T><<<blocks_for(nm, kFlat), kFlat, 0, st_>>>(g_, arr_);
    VH_CHECK_LAUNCH();
  }

  void nonlinear_transforms() override {
    if (slab_passes_) return slab_passes_->transforms();
    if (fused_) {
      for (fused::Pass p : {fused::Pass::y_inverse, fused::Pass::x_cross, fused::Pass::y_forward})
        fused_pass(p, kernel::kRhsOnly, 0.0, arr_);
      return;
    }
    T* r = work_.template as<T>();
    if (cb_) {  // ω first: its load callback reads û from buffers 0–2, which u's overwrite
      VH_CHECK_CUFFT(CufftTypes<T>::inv(invW_, reinterpret_cast<T*>(arr_.buf[3])));
      VH_CHECK_CUFFT(CufftTypes<T>::inv(invU2_, r));
      VH_CHECK_CUFFT(CufftTypes<T>::inv(invU1_, reinterpret_cast<T*>(arr_.buf[2])));
    } else {
      inverse_transforms();
    }
    if (!(cb_ & kCross)) {
      cross_kernel<T><<<blocks_for(pmodes_, kFlat), kFlat, 0, st_>>>(
          unsigned(pmodes_), reinterpret_cast<typename Vec2<T>::type*>(r));
      VH_CHECK_LAUNCH();
    }
    if (cb_)
      VH_CHECK_CUFFT(CufftTypes<T>::fwd(fwdS_, r));
    else
      forward_transforms();
  }

  void post_transform(int s, double dt) override { post(s, dt, arr_); }

 private:
  /// The 6 inverse transforms of u and ω on the M grid (in place).
  void inverse_transforms() {
    if (!pruned_) {
      VH_CHECK_CUFFT(CufftTypes<T>::inv(inv6_, work_.template as<T>()));
      return;
    }
    for (int c = 0; c < 6; ++c) VH_CHECK_CUFFT(CufftTypes<T>::c2c_exec(colsA_, arr_.buf[c], CUFFT_INVERSE));
    VH_CHECK_CUFFT(CufftTypes<T>::inv(rowsInv_, work_.template as<T>()));
  }
  /// The 3 forward transforms of u × ω (in place; pruned: only kx ≤ kxmax is complete).
  void forward_transforms() {
    if (!pruned_) {
      VH_CHECK_CUFFT(CufftTypes<T>::fwd(fwd3_, work_.template as<T>()));
      return;
    }
    VH_CHECK_CUFFT(CufftTypes<T>::fwd(rowsFwd_, work_.template as<T>()));
    for (int c = 0; c < 3; ++c) VH_CHECK_CUFFT(CufftTypes<T>::c2c_exec(colsA_, arr_.buf[c], CUFFT_FORWARD));
  }

  /// The callback plans (fft_callbacks.h) for the parts of cb_; on failure none (cb_ = 0).
  void make_callback_plans(std::size_t& ws) {
    using CT = CufftTypes<T>;
    const int i = CT::cb, m = g_.m;
    if (3 * (unsigned long long)pmodes_ >= (1ull << 32)) {  // offsets decoded in 32 bits
      std::fprintf(stderr, "spectral: cuFFT callbacks need 3·M²(M/2+1) < 2³² (M = %d); separate passes instead\n", m);
      cb_ = 0;
      return;
    }
    const kernel::CallbackInfo info{g_, work_.data(), pmodes_, kernel::FastDiv::make(unsigned(pmodes_)),
                                    kernel::FastDiv::make(unsigned(g_.mxh())), kernel::FastDiv::make(unsigned(m))};
    cbinfo_.upload(&info, 1);
    cbinfo_slot_ = cbinfo_.data();
    const bool ld = cb_ & kLoads, cross = cb_ & kCross, st = cb_ & kStore;
    const Callback curl{kernel::kLoadCurlName[i], CT::ld_complex};
    const Callback keep{kernel::kLoadRetainedName[i], CT::ld_complex};
    const Callback xst{kernel::kStoreCrossName[i], CT::st_real};
    const Callback kst{kernel::kStoreRetainedName[i], CT::st_complex};
    std::size_t w[4] = {0, 0, 0, 0};
    std::vector<cufftHandle> made;
    try {
      made.push_back(invW_ = ld ? plan_many<T>(m, 3, true, st_, w[0], {curl}, &cbinfo_slot_)
                                : plan_many<T>(m, 3, true, st_, w[0]));
      made.push_back(invU2_ = ld ? plan_many<T>(m, 2, true, st_, w[1], {keep}, &cbinfo_slot_)
                                 : plan_many<T>(m, 2, true, st_, w[1]));
      made.push_back(invU1_ = ld && cross ? plan_many<T>(m, 1, true, st_, w[2], {keep, xst}, &cbinfo_slot_)
                              : ld        ? plan_many<T>(m, 1, true, st_, w[2], {keep}, &cbinfo_slot_)
                              : cross     ? plan_many<T>(m, 1, true, st_, w[2], {xst}, &cbinfo_slot_)
                                          : plan_many<T>(m, 1, true, st_, w[2]));
      made.push_back(fwdS_ = st ? plan_many<T>(m, 3, false, st_, w[3], {kst}, &cbinfo_slot_)
                                : plan_many<T>(m, 3, false, st_, w[3]));
    } catch (const vh::LibraryError& e) {
      for (cufftHandle h : made) cufftDestroy(h);
      std::fprintf(stderr, "spectral: cuFFT callbacks unavailable (%s); separate passes instead\n", e.what());
      cb_ = 0;
      return;
    }
    plans_.insert(plans_.end(), made.begin(), made.end());
    ws = std::max({w[0], w[1], w[2], w[3]});
  }

  void fused_pass(fused::Pass p, int s, double dt, const StageArrays<T>& arr) {
    fused::launch<T>(p, kernel::FusedLayout::make(g_), s, p_.viscosity == Viscosity::explicit_rk4, T(p_.nu), T(dt),
                     arr, zb_.data(), zb_.data(), yb_.data(), st_);
  }

  /// R > 1 ranks: the slab passes (gpu_slab.cuh), fused where they run, and the slot → ky
  /// map of the energies.
  void make_slab(const Params& p, const Slab& s) {
    bool fused = false;  // as on one rank: where asked, or automatic and measured faster
    if (p.transforms == Transforms::fused ||
        (p.transforms == Transforms::automatic && fused_by_default(g_, p.single_precision))) {
      const std::string why = fused::unsupported_reason(g_, p.single_precision);
      fused = why.empty();
      if (!fused && p.transforms == Transforms::fused && s.comm.root())
        std::fprintf(stderr, "spectral: fused transforms unavailable (%s); cuFFT line transforms per slab instead\n",
                     why.c_str());
    }
    slab_passes_ = std::make_unique<GpuSlab<T>>(g_, s, fused, p.overlap_exchange ? p.exchange_chunks : 1, st_);
    std::vector<int> ky(std::size_t(s.slots()));
    for (int j = 0; j < s.slots(); ++j) ky[j] = s.ky_index(j);
    ky_of_slot_.upload(ky);
  }

  void post(int s, double dt, const StageArrays<T>& arr) {
    if (slab_passes_)
      return slab_passes_->post(s, p_.viscosity == Viscosity::explicit_rk4, T(p_.nu), T(dt), arr);
    if (fused_) {
      fused_pass(fused::Pass::z_forward_post, s, dt, arr);
      return;
    }
    post_kernel<T><<<blocks_for(mode_count(g_, arr.transforms_load_retained), kFlat), kFlat, 0, st_>>>(
        g_, s, p_.viscosity == Viscosity::explicit_rk4, T(p_.nu), T(dt), arr);
    VH_CHECK_LAUNCH();
  }

  void download(const Cx<T>* d, SpectralSlab& u) {
    std::vector<Cx<T>> h(3 * nmodes_);
    VH_CHECK_CUDA(cudaMemcpyAsync(h.data(), d, h.size() * sizeof(Cx<T>), cudaMemcpyDeviceToHost, st_));
    VH_CHECK_CUDA(cudaStreamSynchronize(st_));
    if (u.c[0].size() != nmodes_) u = SpectralSlab(slab_);
    u.slab = slab_;
    for (int c = 0; c < 3; ++c)
      for (std::size_t m = 0; m < nmodes_; ++m)
        u.c[c][m] = Complex(double(h[c * nmodes_ + m].re), double(h[c * nmodes_ + m].im));
  }

  Params p_;
  Slab slab_;
  Geometry g_{};
  std::size_t nmodes_ = 0, pmodes_ = 0;
  cudaStream_t st_ = nullptr;
  DeviceArray<Cx<T>> state_;  // u0 (3), acc (3), stage input a (3, explicit viscosity only)
  DeviceArray<Cx<T>> work_;   // 6 transform buffers of pmodes_ complex each
  DeviceArray<T> dmax_;
  DeviceArray<double> part_;  // per-block partial sums of energies()
  DeviceBytes fftws_;         // cuFFT work area shared by the three plans
  cufftHandle inv6_ = 0, fwd3_ = 0, invn_ = 0;       // full 3-D plans
  cufftHandle colsA_ = 0, rowsInv_ = 0, rowsFwd_ = 0;  // pruned: (z, y) columns, x rows
  std::vector<cufftHandle> plans_;  // every plan created (they share fftws_)
  bool pruned_ = false;
  // Parts of the evaluation done by cuFFT callbacks (fft_callbacks.h); 0: separate passes.
  enum : int { kLoads = 1, kCross = 4, kStore = 8, kAllCallbacks = kLoads | kCross | kStore };
  int cb_ = 0;
  cufftHandle invW_ = 0, invU2_ = 0, invU1_ = 0, fwdS_ = 0;  // callback plans: ω, u_x u_y, u_z, fwd
  DeviceArray<kernel::CallbackInfo> cbinfo_;  // device copy of the callbacks' caller info
  void* cbinfo_slot_ = nullptr;  // = cbinfo_; its address is the plans' caller_info (lives as long)
  cudaEvent_t e0_ = nullptr, e1_ = nullptr;
  StageArrays<T> arr_{};
  bool fused_ = false;                        // evaluation through the fused passes (fused.h)
  DeviceArray<Cx<T>> zb_, yb_;                // their buffers (fused_kernel.h layouts)
  std::unique_ptr<GpuSlab<T>> slab_passes_;   // R > 1 ranks (gpu_slab.cuh)
  DeviceArray<int> ky_of_slot_;               // R > 1: device slot → ky index, for energies()
};

}  // namespace

std::unique_ptr<Solver> make_gpu_solver(const Params& p, const Slab& s) {
  if (!vh::gpu_available()) throw vh::InputError("device: gpu requested but no GPU is visible");
  if (p.single_precision) return std::make_unique<GpuSolver<float>>(p, s);
  return std::make_unique<GpuSolver<double>>(p, s);
}

}  // namespace vh::spectral
