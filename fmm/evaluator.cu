// GpuEvaluator (fmm/evaluator.h): the resident GPU evaluation.  The stages are the GPU back end's
// own (particles_gpu, tree_gpu, traverse_gpu, p2p_gpu, and the far field's FarStages of
// far_gpu_device.h), driven here on device arrays; fmm.cpp's use_gpu path runs the same kernels
// in the same sequence on the same trees and lists, built there through the host.
#include "base/cuda_check.h"
#include "fmm/evaluator.h"

#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/device_buffer.h"
#include "base/device_comm.h"
#include "base/planes_gpu.h"
#include "base/select_flagged.h"
#include "fmm/far_gpu_device.h"
#include "fmm/p2p_gpu.h"
#include "fmm/p2p_gpu_device.h"
#include "fmm/particles_gpu.h"
#include "fmm/periodic.h"
#include "fmm/profile.h"
#include "fmm/traverse.h"
#include "fmm/traverse_gpu.h"
#include "fmm/traverse_gpu_device.h"
#include "fmm/tree.h"
#include "fmm/tree_gpu.h"
#include "fmm/level_stencil.h"
#include "fmm/multipole_halo_gpu.h"
#include "fmm/uniform_gpu.h"

namespace vh::fmm {

namespace {

using clock_type = std::chrono::steady_clock;
double seconds(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// ------------------------------------------------------------------------- input check
// fmm.cpp's check_inputs on the device: the first bad index of each kind (positions, strengths,
// core radii, targets), and what the host needs besides: the bounding box of the finite
// positions and targets (free space: the cube) and the largest core radius (the periodic
// check).  Minima and maxima are exact, so the result does not depend on the order.
struct CheckOut {
  int bad_x, bad_a, bad_s, bad_t;        // INT_MAX: none
  unsigned long long lo[3], hi[3], smax;  // order-preserving images of the doubles (ordered)
};

__global__ void check_init_kernel(CheckOut* o) {
  o->bad_x = o->bad_a = o->bad_s = o->bad_t = INT_MAX;
  for (int d = 0; d < 3; ++d) {
    o->lo[d] = ordered(INFINITY);
    o->hi[d] = ordered(-INFINITY);
  }
  o->smax = ordered(0.0);
}

__device__ inline bool finite3(const double* v) { return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]); }

// Point p checked: the box [lo, hi] extended to it when it is finite; returns whether it is.
__device__ inline bool take_point(const double* p, double lo[3], double hi[3]) {
  if (!finite3(p)) return false;
  for (int d = 0; d < 3; ++d) {
    lo[d] = fmin(lo[d], p[d]);
    hi[d] = fmax(hi[d], p[d]);
  }
  return true;
}

__global__ void check_kernel(int n, const double* __restrict__ x, const double* __restrict__ a,
                             const double* __restrict__ s, int m, const double* __restrict__ t,
                             CheckOut* __restrict__ out) {
  int bx = INT_MAX, ba = INT_MAX, bs = INT_MAX, bt = INT_MAX;
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, smax = 0;
  const int total = max(n, m);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    if (i < n) {
      if (!take_point(x + 3 * static_cast<long long>(i), lo, hi)) bx = min(bx, i);
      if (!finite3(a + 3 * static_cast<long long>(i))) ba = min(ba, i);
      const double si = s[i];
      if (!(si > 0) || !isfinite(si)) bs = min(bs, i);
      else smax = fmax(smax, si);
    }
    if (i < m && !take_point(t + 3 * static_cast<long long>(i), lo, hi)) bt = min(bt, i);
  }
  for (int off = 16; off > 0; off >>= 1) {
    bx = min(bx, __shfl_down_sync(0xffffffffu, bx, off));
    ba = min(ba, __shfl_down_sync(0xffffffffu, ba, off));
    bs = min(bs, __shfl_down_sync(0xffffffffu, bs, off));
    bt = min(bt, __shfl_down_sync(0xffffffffu, bt, off));
    for (int d = 0; d < 3; ++d) {
      lo[d] = fmin(lo[d], __shfl_down_sync(0xffffffffu, lo[d], off));
      hi[d] = fmax(hi[d], __shfl_down_sync(0xffffffffu, hi[d], off));
    }
    smax = fmax(smax, __shfl_down_sync(0xffffffffu, smax, off));
  }
  if ((threadIdx.x & 31) == 0) {
    if (bx != INT_MAX) atomicMin(&out->bad_x, bx);
    if (ba != INT_MAX) atomicMin(&out->bad_a, ba);
    if (bs != INT_MAX) atomicMin(&out->bad_s, bs);
    if (bt != INT_MAX) atomicMin(&out->bad_t, bt);
    for (int d = 0; d < 3; ++d) {
      atomicMin(&out->lo[d], ordered(lo[d]));
      atomicMax(&out->hi[d], ordered(hi[d]));
    }
    atomicMax(&out->smax, ordered(smax));
  }
}

// What the host learns from the check.
struct Checked {
  Vec3 lo{}, hi{};
  double sigma_max = 0;
};

// Runs the check and throws fmm.cpp's messages (the lowest index with any fault, position
// before strength before core radius, then targets).
Checked check_inputs_gpu(const double* x, const double* a, const double* s, int n, const double* t, int m,
                         DeviceArray<CheckOut>& buf) {
  buf.reserve(1);
  CheckOut* d = buf.data();
  check_init_kernel<<<1, 1>>>(d);
  VH_CHECK_LAUNCH();
  const int total = std::max(n, m);
  if (total > 0) {
    const int blocks = std::min(4096, (total + 255) / 256);
    check_kernel<<<blocks, 256>>>(n, x, a, s, m, t, d);
    VH_CHECK_LAUNCH();
  }
  CheckOut h;
  buf.download(&h, 1);
  const int first = std::min({h.bad_x, h.bad_a, h.bad_s});
  if (first < n) {
    if (h.bad_x == first) throw std::invalid_argument("fmm: source position " + std::to_string(first) + " is not finite");
    if (h.bad_a == first) throw std::invalid_argument("fmm: strength " + std::to_string(first) + " is not finite");
    throw std::invalid_argument("fmm: core radius sigma[" + std::to_string(first) + "] must be > 0 and finite");
  }
  if (h.bad_t < m) throw std::invalid_argument("fmm: target position " + std::to_string(h.bad_t) + " is not finite");
  Checked c;
  for (int d = 0; d < 3; ++d) {
    c.lo[d] = from_ordered(h.lo[d]);
    c.hi[d] = from_ordered(h.hi[d]);
  }
  c.sigma_max = from_ordered(h.smax);
  return c;
}

// own_flag[s] = 1 where sorted source s (input index perm[s]) lies in [first, first + count).
__global__ void own_flag_kernel(int n, const int* __restrict__ perm, long long first, long long count,
                                int* __restrict__ own_flag) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s < n) own_flag[s] = perm[s] >= first && perm[s] < first + count ? 1 : 0;
}

// keep[t] = 1 where P2P task t (first target, count, ...; sorted targets) holds one of this
// rank's targets; own: the exclusive prefix counts of own_flag (n + 1 entries).
__global__ void own_tasks_kernel(int n, const int4* __restrict__ tasks, const int* __restrict__ own,
                                 int* __restrict__ keep) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) keep[t] = own[tasks[t].x + tasks[t].y] > own[tasks[t].x] ? 1 : 0;
}

// occupied[z] = 1 for the z plane (z_plane, the cube [lo_z, lo_z + side0)) of each leaf that holds
// one of this rank's targets (own as above).
__global__ void own_planes_kernel(int nl, const int* __restrict__ leaves, const GCell* __restrict__ cells,
                                  const int* __restrict__ own, double lo_z, double side0, int* __restrict__ occupied) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nl) return;
  const GCell C = cells[leaves[i]];
  if (own[C.end] > own[C.begin]) occupied[z_plane(C, lo_z, side0)] = 1;
}

// keep[i] = 1 where cell ids[i] holds one of this rank's targets (own as above).
__global__ void own_cells_kernel(int n, const int* __restrict__ ids, const GCell* __restrict__ cells,
                                 const int* __restrict__ own, int* __restrict__ keep) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const GCell C = cells[ids[i]];
  keep[i] = own[C.end] > own[C.begin] ? 1 : 0;
}

// The pairs of n P2P tasks (targets x sources of each entry, skipped self pairs counted, as
// Timings::n_p2p_pairs), summed a warp at a time into *pairs.
__global__ void task_pairs_kernel(int n, const int4* __restrict__ tasks, const int4* __restrict__ entries,
                                  unsigned long long* pairs) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long np = 0;
  if (t < n) {
    const int4 k = tasks[t];
    for (int e = k.z; e < k.w; ++e) np += static_cast<unsigned long long>(entries[e].y - entries[e].x);
    np *= static_cast<unsigned long long>(k.y);
  }
  for (int off = 16; off > 0; off >>= 1) np += __shfl_down_sync(0xffffffffu, np, off);
  if ((threadIdx.x & 31) == 0 && np > 0) atomicAdd(pairs, np);
}

__global__ void zero_kernel(long long n, double* __restrict__ v) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    v[i] = 0;
}

// The evaluator's memory pool (base/device_buffer.h current_pool): created with the evaluator,
// kept (release threshold unlimited), destroyed after every buffer (the first member of Impl).
struct Pool {
  cudaMemPool_t pool = nullptr;
  Pool() {
    int dev = 0, supported = 0;
    VH_CHECK_CUDA(cudaGetDevice(&dev));
    VH_CHECK_CUDA(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, dev));
    if (!supported) return;  // plain cudaMalloc then (ScopedPool with no pool)
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    VH_CHECK_CUDA(cudaMemPoolCreate(&pool, &props));
    std::uint64_t keep = UINT64_MAX;  // cuuint64_t: keep freed memory for the next call
    VH_CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }
  ~Pool() {
    if (pool) {
      cudaDeviceSynchronize();
      cudaMemPoolDestroy(pool);
    }
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
};

// own: a self evaluation written at this rank's sources only (evaluate_own).
enum class Kind { self, at, fixed, own };

}  // namespace

struct GpuEvaluator::Impl {
  Pool pool;  // first: destroyed after every buffer below
  Params user, prm;  // as given; resolved
  Overlap overlap = Overlap::streams;
  int split_blocks = 4;
  // The periodic shifts and the acceptance criterion (fixed by the parameters).
  int r0 = 0;
  std::vector<Vec3> shifts;
  Acceptance mac{0, 0, 0};
  DeviceArray<double> shifts3;       // 3 per shift (the traversal)
  DeviceArray<double4_32a> shifts4;  // (P2P, far field)
  // Sorted particles, trees, lists: kept for same_positions.
  SortedSourcesGpu src, tgt, fixed_tgt;
  DeviceTree src_tree, tgt_tree, fixed_tree;
  GpuLists lists;
  // A complete tree's uniform levels (fmm.m2l fft), in place of `lists` when use_uniform.
  UniformFar uniform;
  bool use_uniform = false;
  struct Kept {
    bool valid = false;
    Kind kind = Kind::self;
    int n = 0, m = 0;
  } kept;
  bool fixed_valid = false;
  int fixed_m = 0;
  // The far field's stages and work arrays; the near field's sums, its task counter; the check.
  FarStages far;
  DeviceBytes near_out;  // 12 values per sorted target, float or double
  DeviceArray<int> queue;
  DeviceArray<CheckOut> check;
  // The shared upward pass (share_upward): the ranks, this rank's sources, and the prefix
  // counts of them in sorted order (FarPlan::own) with the scan's scratch.
  DeviceComm* share = nullptr;
  long long share_first = 0, share_count = 0;
  long long share_total = 0;  // > 0: the sources given are this rank's and its ghosts, of so many
  DeviceArray<MeanTerms> mean, mean_part;  // then the mean terms of this rank's, summed over the ranks
  DeviceArray<int> own_flag, own_prefix;
  DeviceBytes scan_temp;
  // evaluate_own: the P2P tasks, target leaves and M2L rows that hold this rank's targets (of
  // the trees kept and the range [first, first + count)), and the pairs of those tasks; the
  // L2L's children that hold some, and with the upward pass shared the M2M's parents that hold
  // some of its sources, level by level (FarPlan's levels into own_children and own_parents).
  struct OwnSelection {
    bool valid = false;
    long long first = 0, count = 0;
    int tasks = 0, leaves = 0, rows = 0;
    long long pairs = 0;
    std::vector<std::pair<int, int>> l2l_levels, m2m_levels;
  } own_sel;
  DeviceArray<int4> own_tasks;
  DeviceArray<int> own_leaves, own_rows, own_children, own_parents, keep, n_selected;
  DeviceArray<unsigned long long> own_pairs;
  // evaluate_own with the upward pass shared on the uniform levels' windows: what the ranks
  // exchange of the multipoles (planned with the selection).
  MultipoleHalo halo;
  cudaStream_t s_far = nullptr, s_near = nullptr;
  enum { kStart, kEnd, kNear0, kNear1, kDrain0, kDrain1, kEvents };
  cudaEvent_t ev[kEvents] = {};
  int sm_count = 1;

  ~Impl() {
    for (auto& e : ev)
      if (e) cudaEventDestroy(e);
    if (s_far) cudaStreamDestroy(s_far);
    if (s_near) cudaStreamDestroy(s_near);
  }
  Timings run(Kind kind, const double* d_x, const double* d_alpha, const double* d_sigma, std::size_t n_in,
              const double* d_t, std::size_t m_in, double* d_u, double* d_grad, bool same);
  std::vector<std::pair<int, int>> select_own(const std::vector<std::pair<int, int>>& levels, const int* ids,
                                              const GCell* cells, DeviceArray<int>& out);
};

GpuEvaluator::GpuEvaluator(const Params& prm) {
  Params p = prm;
  p.use_gpu = true;
  p.validate();
  if (gpu_count() == 0) throw std::runtime_error("fmm: GpuEvaluator needs a CUDA device; none is visible");
  impl_ = std::make_unique<Impl>();
  Impl& m = *impl_;
  m.user = p;
  m.prm = p.resolved();
  const Params& r = m.prm;
  const double rcut_per_sigma = fmm::rcut_per_sigma(r.tolerance);
  const long long p2p_max_pairs =
      r.p2p_max_pairs >= 0 ? r.p2p_max_pairs : static_cast<long long>(std::pow(r.p + 1.0, 4) / 55);
  m.mac = Acceptance{r.theta, rcut_per_sigma, p2p_max_pairs};
  if (r.periodic) {
    m.r0 = near_image_range(r.theta);
    m.shifts = near_image_shifts(m.r0);
  } else {
    m.shifts = {Vec3{0, 0, 0}};
  }
  ScopedPool use(m.pool.pool);
  std::vector<double> s3(3 * m.shifts.size());
  std::vector<double4_32a> s4(m.shifts.size());
  for (std::size_t s = 0; s < m.shifts.size(); ++s) {
    for (int d = 0; d < 3; ++d) s3[3 * s + d] = m.shifts[s][d];
    s4[s] = make_double4_32a(m.shifts[s][0], m.shifts[s][1], m.shifts[s][2], 0);
  }
  m.shifts3.upload(s3);
  m.shifts4.upload(s4);
  int least = 0, greatest = 0, dev = 0;
  VH_CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  VH_CHECK_CUDA(cudaStreamCreateWithPriority(&m.s_far, cudaStreamNonBlocking, greatest));
  VH_CHECK_CUDA(cudaStreamCreateWithPriority(&m.s_near, cudaStreamNonBlocking, least));
  for (auto& e : m.ev) VH_CHECK_CUDA(cudaEventCreate(&e));
  VH_CHECK_CUDA(cudaGetDevice(&dev));
  VH_CHECK_CUDA(cudaDeviceGetAttribute(&m.sm_count, cudaDevAttrMultiProcessorCount, dev));
}

GpuEvaluator::~GpuEvaluator() = default;

const Params& GpuEvaluator::params() const { return impl_->user; }

void GpuEvaluator::set_overlap(Overlap mode, int p2p_blocks_per_sm) {
  if (p2p_blocks_per_sm < 1) throw std::invalid_argument("GpuEvaluator::set_overlap: p2p_blocks_per_sm must be >= 1");
  impl_->overlap = mode;
  impl_->split_blocks = p2p_blocks_per_sm;
}

void GpuEvaluator::set_lattice_leaves(bool on) { impl_->far.set_lattice_leaves(on); }

void GpuEvaluator::set_lattice_levels_from(int parents) { impl_->far.set_lattice_levels_from(parents); }

// For each level (first, count) of ids, those whose cells hold some of this rank's particles
// (own_prefix), in order, one level after the other into out; returns their levels.
std::vector<std::pair<int, int>> GpuEvaluator::Impl::select_own(const std::vector<std::pair<int, int>>& levels,
                                                                const int* ids, const GCell* cells,
                                                                DeviceArray<int>& out) {
  int total = 0, widest = 1;
  for (const auto& lv : levels) total += lv.second, widest = std::max(widest, lv.second);
  out.reserve(static_cast<std::size_t>(std::max(total, 1)));
  keep.reserve(static_cast<std::size_t>(widest));
  std::vector<std::pair<int, int>> sel;
  int at = 0;
  for (const auto& lv : levels) {
    int k = 0;
    if (lv.second > 0) {
      own_cells_kernel<<<(lv.second + 255) / 256, 256>>>(lv.second, ids + lv.first, cells, own_prefix.data(),
                                                          keep.data());
      VH_CHECK_LAUNCH();
      k = select_flagged(ids + lv.first, keep.data(), lv.second, out.data() + at, n_selected, scan_temp);
    }
    sel.emplace_back(at, k);
    at += k;
  }
  return sel;
}

void GpuEvaluator::share_upward(DeviceComm* comm, std::size_t first, std::size_t count, long long total) {
  impl_->share = comm && comm->comm().size() > 1 ? comm : nullptr;
  impl_->share_first = static_cast<long long>(first);
  impl_->share_count = static_cast<long long>(count);
  impl_->share_total = impl_->share ? std::max(total, 0LL) : 0;
}

bool GpuEvaluator::took_uniform() const { return impl_->use_uniform; }

GpuEvaluator::Memory GpuEvaluator::memory() const {
  Memory m;
  const cudaMemPool_t pool = impl_->pool.pool;
  if (!pool) return m;
  std::uint64_t v = 0;
  VH_CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &v));
  m.reserved = static_cast<std::size_t>(v);
  VH_CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &v));
  m.in_use = static_cast<std::size_t>(v);
  return m;
}

GpuEvaluator::SourcePlanes GpuEvaluator::source_planes(const double* d_x, std::size_t n, long long total,
                                                       double sigma_max) const {
  const Impl& m = *impl_;
  SourcePlanes sp;
  const int L = uniform_depth(static_cast<double>(std::max(total, 1LL)), m.prm.ncrit);
  sp.planes = 1 << L;
  sp.side = kBoxLength / sp.planes;
  sp.reach = near_z_reach(m.mac.theta, m.mac.rcut_per_sigma * sigma_max / sp.side) + 1;
  if (n == 0) return sp;
  DeviceArray<int> scratch;
  occupied_arc(occupied_planes(d_x, static_cast<long long>(n), sp.side, sp.planes, scratch), sp.first, sp.count);
  if (sp.count == 0) sp.first = 0, sp.count = sp.planes;  // every plane (n > 0: some are)
  return sp;
}

Timings GpuEvaluator::evaluate_self(const double* d_x, const double* d_alpha, const double* d_sigma, std::size_t n,
                                    double* d_u, double* d_grad, bool same_positions) {
  return impl_->run(Kind::self, d_x, d_alpha, d_sigma, n, nullptr, n, d_u, d_grad, same_positions);
}

Timings GpuEvaluator::evaluate_own(const double* d_x, const double* d_alpha, const double* d_sigma, std::size_t n,
                                   double* d_u, double* d_grad, bool same_positions) {
  const Impl& m = *impl_;
  if (m.share_first < 0 || m.share_count < 0 || static_cast<std::size_t>(m.share_first + m.share_count) > n)
    throw std::invalid_argument("fmm: evaluate_own: this rank's sources [" + std::to_string(m.share_first) + ", " +
                                std::to_string(m.share_first + m.share_count) + ") are not within the " +
                                std::to_string(n) + " sources (share_upward)");
  return impl_->run(Kind::own, d_x, d_alpha, d_sigma, n, nullptr, n, d_u, d_grad, same_positions);
}

Timings GpuEvaluator::evaluate_at(const double* d_x, const double* d_alpha, const double* d_sigma, std::size_t n,
                                  const double* d_targets, std::size_t m, double* d_u, double* d_grad,
                                  bool same_positions) {
  return impl_->run(Kind::at, d_x, d_alpha, d_sigma, n, d_targets, m, d_u, d_grad, same_positions);
}

Timings GpuEvaluator::evaluate_at_fixed(const double* d_x, const double* d_alpha, const double* d_sigma, std::size_t n,
                                        double* d_u, double* d_grad, bool same_sources) {
  if (!impl_->fixed_valid) throw std::logic_error("GpuEvaluator::evaluate_at_fixed: fix_targets first");
  return impl_->run(Kind::fixed, d_x, d_alpha, d_sigma, n, nullptr, impl_->fixed_m, d_u, d_grad, same_sources);
}

void GpuEvaluator::fix_targets(const double* d_targets, std::size_t m) {
  Impl& s = *impl_;
  if (!s.prm.periodic)
    throw std::invalid_argument("fmm: fixed targets need periodic mode (in free space the cube depends on the sources)");
  if (m >= (std::size_t(1) << 31)) throw std::invalid_argument("fmm: more than 2^31 - 1 targets");
  ScopedPool use(s.pool.pool);
  s.fixed_valid = false;
  check_inputs_gpu(nullptr, nullptr, nullptr, 0, d_targets, static_cast<int>(m), s.check);
  const double half = 0.5 * kBoxLength;
  s.fixed_tgt.sort(d_targets, nullptr, nullptr, static_cast<int>(m), Vec3{half, half, half}, half, true);
  s.fixed_tree.build(s.fixed_tgt, s.prm.ncrit);
  s.fixed_m = static_cast<int>(m);
  s.fixed_valid = true;
  if (s.kept.kind == Kind::fixed) s.kept.valid = false;  // the lists were for the old targets
}

Timings GpuEvaluator::Impl::run(Kind kind, const double* d_x, const double* d_alpha, const double* d_sigma,
                                std::size_t n_in, const double* d_t, std::size_t m_in, double* d_u, double* d_grad,
                                bool same) {
  Impl& s = *this;
  const Params& prm = s.prm;
  Timings tm;
  const auto t_start = clock_type::now();
  StepTimer st("gpu evaluator");
  if (n_in >= (std::size_t(1) << 31) || m_in >= (std::size_t(1) << 31))
    throw std::invalid_argument("fmm: more than 2^31 - 1 sources or targets");
  const int n = static_cast<int>(n_in), nt = static_cast<int>(m_in);
  const bool own = kind == Kind::own, self = kind == Kind::self || own;
  // This rank's sources and its ghosts only (share_upward's total; source_planes).
  const bool partial = own && s.share && s.share_total > 0;
  ScopedPool use(s.pool.pool);

  // --- inputs: the host API's checks, the cube, the periodic cut-off check ----------------
  const Checked c = check_inputs_gpu(d_x, d_alpha, d_sigma, n, kind == Kind::at ? d_t : nullptr,
                                     kind == Kind::at ? nt : 0, s.check);
  if (own && s.share_count == 0) {  // none of the sources is this rank's: nothing to write
    tm.total = seconds(t_start, clock_type::now());
    return tm;
  }
  if (n == 0 || nt == 0) {
    if (nt > 0) {
      zero_kernel<<<static_cast<int>(std::min(4096LL, (3LL * nt + 255) / 256)), 256>>>(3LL * nt, d_u);
      VH_CHECK_LAUNCH();
      zero_kernel<<<static_cast<int>(std::min(4096LL, (9LL * nt + 255) / 256)), 256>>>(9LL * nt, d_grad);
      VH_CHECK_LAUNCH();
      VH_CHECK_CUDA(cudaDeviceSynchronize());
    }
    tm.total = seconds(t_start, clock_type::now());
    return tm;
  }
  // The largest core over the ranks where this rank sees a part of the sources: the stencils'.
  const double sigma_max = partial ? s.share->comm().max(c.sigma_max) : c.sigma_max;
  Vec3 center;
  double half;
  if (prm.periodic) {
    half = 0.5 * kBoxLength;
    center = {half, half, half};
  } else {
    cube_of_box(c.lo, c.hi, center, half);  // bounding_cube of the sources and targets
  }
  const double rcut_per_sigma = s.mac.rcut_per_sigma;
  if (prm.periodic && s.r0 * kBoxLength < rcut_per_sigma * sigma_max)
    throw std::invalid_argument("fmm: sigma too large for the periodic box at this tolerance");
  const auto t_checked = clock_type::now();
  tm.upload = seconds(t_start, t_checked);
  st.mark("check");

  // --- sorted particles, trees, lists: kept when the positions are those of the last call ---
  int min_level = 0;  // the source tree's forced depth (fmm.m2l fft, below)
  // (evaluate_own: and this rank's sources those of the last call, whose leaves chose the
  // uniform levels' windows.)
  bool reuse = same && s.kept.valid && s.kept.kind == kind && s.kept.n == n && s.kept.m == nt &&
               (!own || (s.own_sel.valid && s.own_sel.first == s.share_first && s.own_sel.count == s.share_count));
  if (partial) reuse = !s.share->comm().any(!reuse);  // the ranks build (and exchange) together
  if (reuse) {
    const long long moved = s.src.first_change(d_x, d_sigma, prm.periodic);
    if (moved >= 0)
      throw std::invalid_argument("fmm: same_positions is set, but source " + std::to_string(moved) +
                                  " (position or core radius) changed since the previous evaluation");
    if (kind == Kind::at) {
      const long long tmoved = s.tgt.first_change(d_t, nullptr, prm.periodic);
      if (tmoved >= 0)
        throw std::invalid_argument("fmm: same_positions is set, but target " + std::to_string(tmoved) +
                                    " changed since the previous evaluation");
    }
    s.src.set_strengths(d_alpha);
  } else {
    s.kept.valid = false;
    s.src.sort(d_x, d_sigma, d_alpha, n, center, half, prm.periodic);
    // fmm.m2l fft: every cell split down to the level where the mean count first falls to
    // ncrit, and no further unless it holds more than uniform_leaf_limit, so that a near-uniform
    // set has all its leaves there (uniform_gpu.h). A part of the sources: the whole set's
    // depth and limit, and the cells the part leaves empty made too (the same cells, in the
    // same order, as the whole set's tree: the ranks' multipoles meet cell for cell).
    int ncrit = prm.ncrit;
    if (prm.m2l == "fft" && self && prm.periodic) {
      const double whole = partial ? static_cast<double>(s.share_total) : n;
      min_level = uniform_depth(whole, prm.ncrit);
      ncrit = uniform_leaf_limit(whole, prm.ncrit);
    }
    s.src_tree.build(s.src, ncrit, min_level, partial);
    if (kind == Kind::at) {
      s.tgt.sort(d_t, nullptr, nullptr, nt, center, half, prm.periodic);
      s.tgt_tree.build(s.tgt, prm.ncrit);
    }
  }
  const SortedSourcesGpu& tp = self ? s.src : kind == Kind::at ? s.tgt : s.fixed_tgt;
  const DeviceTree& tt = self ? s.src_tree : kind == Kind::at ? s.tgt_tree : s.fixed_tree;
  const DeviceTree& stree = s.src_tree;
  const auto t_tree = clock_type::now();
  tm.tree = seconds(t_checked, t_tree);
  st.mark(reuse ? "strengths" : "sort+trees");
  // This rank's sources counted in sorted order (exclusive prefix sum): FarPlan::own when the
  // upward pass is shared, the selection of evaluate_own's work below; kept, with the
  // selection, while the trees and this rank's range are those of the last call.
  const bool own_fresh = !reuse || !s.own_sel.valid || s.own_sel.first != s.share_first ||
                         s.own_sel.count != s.share_count;
  if ((s.share || own) && own_fresh) {
    s.own_sel = Impl::OwnSelection{};
    s.own_flag.reserve(static_cast<std::size_t>(n));
    s.own_prefix.reserve(static_cast<std::size_t>(n) + 1);
    own_flag_kernel<<<(n + 255) / 256, 256>>>(n, s.src.permutation(), s.share_first, s.share_count,
                                              s.own_flag.data());
    VH_CHECK_LAUNCH();
    VH_CHECK_CUDA(cudaMemset(s.own_prefix.data(), 0, sizeof(int)));
    std::size_t bytes = 0;
    VH_CHECK_CUDA(cub::DeviceScan::InclusiveSum(nullptr, bytes, s.own_flag.data(), s.own_prefix.data() + 1, n));
    s.scan_temp.reserve(std::max<std::size_t>(bytes, 1));
    VH_CHECK_CUDA(
        cub::DeviceScan::InclusiveSum(s.scan_temp.data(), bytes, s.own_flag.data(), s.own_prefix.data() + 1, n));
  }
  if (!reuse) {
    // A complete tree (the vortex solver's lattice) by its uniform levels (fmm.m2l fft), when
    // its tables fit; otherwise, and for every other tree, the traversal's lists.
    // (A part of the sources: complete on every rank, or the uniform levels on none.)
    bool complete = UniformFar::complete(stree.cells(), stree.levels(), stree.n_leaves());
    if (partial) complete = !s.share->comm().any(!complete);
    // evaluate_own: the z planes of the leaves that hold this rank's targets, whose ancestors
    // alone take the uniform levels' FFT M2L (a window of each level, uniform_gpu.h).
    int first_plane = 0, planes = 0;
    if (own && complete && prm.m2l == "fft" && prm.periodic) {
      const int L = stree.levels() - 1, nz = 1 << L;
      s.keep.reserve(static_cast<std::size_t>(nz));
      VH_CHECK_CUDA(cudaMemset(s.keep.data(), 0, sizeof(int) * nz));
      own_planes_kernel<<<(stree.n_leaves() + 255) / 256, 256>>>(
          stree.n_leaves(), stree.leaves(), static_cast<const GCell*>(stree.gcells()), s.own_prefix.data(),
          center[2] - half, 2 * half, s.keep.data());
      VH_CHECK_LAUNCH();
      std::vector<int> occupied(nz);
      s.keep.download(occupied.data(), occupied.size());
      occupied_arc(occupied, first_plane, planes);
    }
    s.use_uniform = prm.m2l == "fft" && self && prm.periodic && complete &&
                    s.uniform.build(static_cast<const GCell*>(stree.gcells()), stree.cells(), stree.levels(),
                                    static_cast<const double4_32a*>(s.src.positions_sigma()), prm.p, s.mac, sigma_max,
                                    s.r0, s.shifts, 2 * half, {center[0] - half, center[1] - half, center[2] - half},
                                    first_plane, planes, partial ? &s.share->comm() : nullptr);
    // Ranks that share the upward pass take the same path: a rank's windows, hence the memory
    // its tables need, are its own, and one that could not hold them takes every rank to the
    // lists (the exchange of the multipoles is collective).
    if (s.share && prm.m2l == "fft" && self && prm.periodic && (complete || partial))
      s.use_uniform = !s.share->comm().any(!s.use_uniform);
  }
  if (partial && !s.use_uniform) {  // the lists would need every source: the caller's to give
    s.kept.valid = false;
    tm.total = seconds(t_start, clock_type::now());
    return tm;
  }
  // (The counts of the tree it looked at, before the re-split below.)
  if (profile_enabled() && !reuse && prm.m2l == "fft" && !s.use_uniform)
    std::fprintf(stderr, "fmm: fmm.m2l fft not taken (%s; %d cells, %d levels, %d leaves)\n",
                 !self ? "not a self evaluation" : !prm.periodic ? "free space"
                 : s.uniform.refused().empty() ? "not a complete tree" : s.uniform.refused().c_str(),
                 stree.cells(), stree.levels(), stree.n_leaves());
  if (!reuse && !s.use_uniform && min_level > 0) {
    // Not taken: the tree of fmm.m2l lists, so that the lists give their own results.
    s.src_tree.build(s.src, prm.ncrit);
  }
  if (!reuse && !s.use_uniform) {
    ListTrees in;
    in.S = static_cast<const TCell*>(stree.tcells());
    in.T = static_cast<const TCell*>(tt.tcells());
    in.ncs = stree.cells();
    in.nct = tt.cells();
    in.ns = n;
    in.nt = nt;
    in.rank = stree.rank();
    in.rank_to_cell = stree.rank_to_cell();
    in.leaves = tt.leaves();
    in.leaf_of = tt.leaf_of();
    in.nl = tt.n_leaves();
    in.shifts = s.shifts3.data();
    build_lists_device(in, self, s.shifts, s.mac, true, s.lists);
  }
  if (!reuse) s.kept = Impl::Kept{true, kind, n, nt};
  const auto t_lists = clock_type::now();
  tm.traverse = reuse ? 0.0 : seconds(t_tree, t_lists);
  st.mark(s.use_uniform ? "uniform levels" : "lists");

  // --- the evaluation: far field on s_far, near field on s_near --------------------------
  FarPlan f;
  f.p = prm.p;
  f.nt = nt;
  f.ns = n;
  f.n_scells = stree.cells();
  f.n_tcells = tt.cells();
  f.scells = static_cast<const GCell*>(stree.gcells());
  f.tcells = static_cast<const GCell*>(tt.gcells());
  f.xs = static_cast<const double4_32a*>(s.src.positions_sigma());
  f.xt = static_cast<const double4_32a*>(tp.positions_sigma());
  f.alpha = static_cast<const double4_32a*>(s.src.alpha_double());
  f.perm = tp.permutation();
  f.shifts = s.shifts4.data();
  f.src_leaves = stree.leaves();
  f.n_src_leaves = stree.n_leaves();
  f.first_child = stree.first_child();
  f.nchild = stree.nchild();
  f.parents = stree.parents();
  f.m2m_levels = stree.m2m_levels();
  if (s.share) f.own = s.own_prefix.data();
  f.children = tt.children();
  f.l2l_levels = tt.l2l_levels();
  f.tgt_leaves = tt.leaves();
  f.n_tgt_leaves = tt.n_leaves();
  const UniformFar& U = s.uniform;
  if (s.use_uniform) {
    f.m2l_targets = U.m2l_targets();
    f.m2l_goffset = U.m2l_goffset();
    f.m2l_groups = U.m2l_groups();
    f.m2l_entries = U.m2l_entries();
    f.n_m2l_targets = U.n_m2l_targets();
    f.uniform = &U;
  } else {
    const GpuListsDevice& L = *s.lists.dev;
    f.m2l_targets = L.m2l_targets.data();
    f.m2l_goffset = L.m2l_goffset.data();
    f.m2l_groups = L.m2l_groups.data();
    f.m2l_entries = L.m2l_entries.data();
    f.n_m2l_targets = s.lists.n_m2l_targets;
  }
  if (own && own_fresh) {
    // This rank's targets only: the leaves that hold some for the L2P, the M2L lists' target
    // cells that hold some (the uniform levels' FFTs took their window when built).
    const int* op = s.own_prefix.data();
    s.keep.reserve(static_cast<std::size_t>(std::max({f.n_tgt_leaves, f.n_m2l_targets, 1})));
    if (f.n_tgt_leaves > 0) {
      own_cells_kernel<<<(f.n_tgt_leaves + 255) / 256, 256>>>(f.n_tgt_leaves, f.tgt_leaves, f.tcells, op,
                                                              s.keep.data());
      VH_CHECK_LAUNCH();
      s.own_sel.leaves = select_flagged(f.tgt_leaves, s.keep.data(), f.n_tgt_leaves, s.own_leaves, s.n_selected,
                                        s.scan_temp);
    }
    if (f.n_m2l_targets > 0) {
      own_cells_kernel<<<(f.n_m2l_targets + 255) / 256, 256>>>(f.n_m2l_targets, f.m2l_targets, f.tcells, op,
                                                               s.keep.data());
      VH_CHECK_LAUNCH();
      s.own_sel.rows = select_flagged(thrust::counting_iterator<int>(0), s.keep.data(), f.n_m2l_targets, s.own_rows,
                                      s.n_selected, s.scan_temp);
    }
    // A local expansion reaches this rank's targets only down the cells that hold them; with
    // the upward pass shared, a parent without its sources sums zeros.
    s.own_sel.l2l_levels = s.select_own(f.l2l_levels, f.children, f.tcells, s.own_children);
    if (s.share) s.own_sel.m2m_levels = s.select_own(f.m2m_levels, f.parents, f.scells, s.own_parents);
  }
  if (own) {
    f.n_tgt_leaves = s.own_sel.leaves;
    f.tgt_leaves = s.own_leaves.data();
    f.n_m2l_targets = s.own_sel.rows;
    f.m2l_rows = s.own_rows.data();
    f.children = s.own_children.data();
    f.l2l_levels = s.own_sel.l2l_levels;
    if (s.share) {
      f.parents = s.own_parents.data();
      f.m2m_levels = s.own_sel.m2m_levels;
    }
    f.out_first = s.share_first;  // the window of the output
    f.out_count = s.share_count;
  }
  f.side0 = 2 * half;
  f.table_levels = std::min(stree.levels(), tt.levels());
  f.single_m2l = prm.precision == "single";
  const FarPeriodic per{prm.periodic, s.r0, prm.images};

  const GpuPrecision prec = prm.precision == "double" ? GpuPrecision::fp64 : GpuPrecision::fp32;
  P2PLaunch a;
  a.prec = prec;
  a.tasks = s.use_uniform ? U.p2p_tasks() : s.lists.dev->p2p_tasks.data();
  a.ntask = s.use_uniform ? U.n_p2p_tasks() : s.lists.n_p2p_tasks;
  a.entries = s.use_uniform ? U.p2p_entries() : s.lists.dev->p2p_entries.data();
  if (own && own_fresh) {
    // The P2P tasks that hold some of this rank's targets, and their pairs.
    if (a.ntask > 0) {
      s.keep.reserve(static_cast<std::size_t>(a.ntask));
      own_tasks_kernel<<<(a.ntask + 255) / 256, 256>>>(a.ntask, a.tasks, s.own_prefix.data(), s.keep.data());
      VH_CHECK_LAUNCH();
      s.own_sel.tasks = select_flagged(a.tasks, s.keep.data(), a.ntask, s.own_tasks, s.n_selected, s.scan_temp);
    }
    s.own_pairs.reserve(1);
    s.own_pairs.zero();
    if (s.own_sel.tasks > 0) {
      task_pairs_kernel<<<(s.own_sel.tasks + 255) / 256, 256>>>(s.own_sel.tasks, s.own_tasks.data(), a.entries,
                                                               s.own_pairs.data());
      VH_CHECK_LAUNCH();
    }
    unsigned long long pairs = 0;
    VH_CHECK_CUDA(cudaMemcpy(&pairs, s.own_pairs.data(), sizeof pairs, cudaMemcpyDeviceToHost));
    s.own_sel.pairs = static_cast<long long>(pairs);
    s.own_sel.first = s.share_first;
    s.own_sel.count = s.share_count;
    s.own_sel.valid = true;
  }
  if (own) {
    a.ntask = s.own_sel.tasks;
    a.tasks = s.own_tasks.data();
  }
  if (own && own_fresh) {
    if (s.share && s.use_uniform) {
      s.halo.plan(*s.share, f.scells, stree.levels() - 1, center[2] - half, 2 * half, s.own_prefix.data(),
                  U.source_planes(), 3 * cidx(f.p + 1, 0));
      // Where the ranks exchange the multipoles by cells, M and L keep only the cells of this
      // rank's windows (fmm/expansion_rows.h): the whole-tree arrays do not grow with its share.
      s.uniform.keep_rows(f.scells, s.halo.active() ? s.halo.from_level() : stree.levels());
      s.halo.to_rows(U.rows());
    } else {
      s.halo.clear();
    }
  }
  if (s.use_uniform && U.rows()) {
    f.rows = U.rows();
    f.n_rows = U.n_rows();
    f.whole = U.whole();
  }
  a.shifts = s.shifts4.data();
  a.xt = f.xt;
  a.xs = f.xs;
  a.as = prec == GpuPrecision::fp64 ? s.src.alpha_double() : s.src.alpha_float();
  a.tolerance = prm.tolerance;

  // Every buffer of the evaluation is allocated now, in stream order on the legacy stream,
  // before the two streams start from the event kStart.
  s.far.reserve(f, per);
  s.near_out.reserve(static_cast<std::size_t>(nt) * 12 * (prec == GpuPrecision::fp64 ? sizeof(double) : sizeof(float)));
  s.queue.reserve(1);
  a.out = s.near_out.data();

  // A part of the sources: the mean correction's sums of this rank's, summed over the ranks.
  if (partial && per.on) {
    s.mean.reserve(1);
    mean_terms_device(n, f.xs, f.alpha, s.mean.data(), s.mean_part, 0, s.own_flag.data());
    s.share->sum(reinterpret_cast<double*>(s.mean.data()), sizeof(MeanTerms) / sizeof(double));
    f.mean = s.mean.data();
  }
  const bool split = s.overlap == Overlap::split, serial = s.overlap == Overlap::serial;
  if (split) VH_CHECK_CUDA(cudaMemsetAsync(s.queue.data(), 0, sizeof(int), 0));  // before both streams start
  VH_CHECK_CUDA(cudaEventRecord(s.ev[kStart], 0));
  VH_CHECK_CUDA(cudaStreamWaitEvent(s.s_far, s.ev[kStart], 0));
  VH_CHECK_CUDA(cudaStreamWaitEvent(s.s_near, s.ev[kStart], 0));
  // The near field first: it needs nothing of the far field.  serial: on s_far, before it.
  cudaStream_t near_stream = serial ? s.s_far : s.s_near;
  VH_CHECK_CUDA(cudaEventRecord(s.ev[kNear0], near_stream));
  if (split) {
    p2p_launch_queue(a, s.queue.data(), s.sm_count * std::min(s.split_blocks, p2p_blocks_per_sm(prec)), near_stream);
  } else {
    p2p_launch(a, near_stream);
  }
  VH_CHECK_CUDA(cudaEventRecord(s.ev[kNear1], near_stream));
  // The far field; the join after the L2L: split, the tasks left on the whole GPU; then the
  // near field's end.
  cudaStream_t fs = s.s_far;
  if (serial) VH_CHECK_CUDA(cudaEventRecord(s.ev[kStart], fs));
  s.far.upward(f, fs);
  if (s.share) {
    // The ranks' multipoles summed (the near field goes on meanwhile on its stream).
    VH_CHECK_CUDA(cudaStreamSynchronize(fs));
    const auto t0 = clock_type::now();
    if (own && s.halo.active())
      s.halo.exchange(s.far.multipoles(), fs);  // the cells the windows read
    else
      s.share->sum(reinterpret_cast<double*>(s.far.multipoles()), 2 * FarStages::multipole_count(f));
    tm.exchange += seconds(t0, clock_type::now());
  }
  s.far.downward(
      f, per,
      [&] {
        VH_CHECK_CUDA(cudaEventRecord(s.ev[kDrain0], fs));
        if (split) p2p_launch_queue(a, s.queue.data(), s.sm_count * p2p_blocks_per_sm(prec), fs);
        VH_CHECK_CUDA(cudaEventRecord(s.ev[kDrain1], fs));
        VH_CHECK_CUDA(cudaStreamWaitEvent(fs, s.ev[kNear1], 0));
      },
      s.near_out.data(), prec == GpuPrecision::fp64, d_u, d_grad, fs);
  VH_CHECK_CUDA(cudaEventRecord(s.ev[kEnd], fs));
  VH_CHECK_CUDA(cudaStreamSynchronize(fs));
  VH_CHECK_CUDA(cudaStreamSynchronize(s.s_near));
  st.mark("evaluation");

  auto ms = [&](int a0, int a1) {
    float v = 0;
    VH_CHECK_CUDA(cudaEventElapsedTime(&v, s.ev[a0], s.ev[a1]));
    return 1e-3 * v;
  };
  const FarGpuTimes ft = s.far.times();
  tm.p2m_m2m = 1e-3 * ft.p2m_m2m;
  tm.m2l = 1e-3 * ft.m2l;
  tm.l2l_l2p = 1e-3 * ft.l2l_l2p;
  tm.lattice_leaves = ft.lattice_leaves;
  tm.lattice_levels = ft.lattice_levels;
  tm.p2p = ms(kNear0, kNear1) + (split ? ms(kDrain0, kDrain1) : 0.0);
  tm.gpu_wall = serial ? ms(kNear0, kEnd) : ms(kStart, kEnd);
  tm.n_m2l = s.use_uniform ? U.n_m2l() : s.lists.n_m2l;
  tm.cells = f.n_scells;
  tm.expansion_cells = static_cast<long long>(multipole_rows(f));
  for (const auto& lv : f.l2l_levels) tm.n_l2l += lv.second;
  tm.n_p2p_pairs = own ? s.own_sel.pairs : s.use_uniform ? U.p2p_pairs() : s.lists.p2p_pairs;
  tm.n_p2p_entries = s.use_uniform ? U.p2p_entry_count() : s.lists.n_p2p_entries;
  tm.total = seconds(t_start, clock_type::now());
  return tm;
}

}  // namespace vh::fmm
