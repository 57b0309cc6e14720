// Ghost particles between the GPUs of the vortex solver: see halo_gpu.h.
#include "vortex/halo_gpu.h"

#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <string>

#include "base/comm.h"
#include "base/cuda_check.h"
#include "base/device_comm.h"
#include "base/error.h"
#include "base/launch.h"
#include "base/planes_gpu.h"
#include "base/select_flagged.h"

namespace vh::vortex {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(long long n) { return vh::blocks_for(n, kThreads, 65535); }

// flag[i] = whether particle i's plane lies in the window w widened by its reach (base/planes.h).
__global__ void window_flags_kernel(long long n, const double* __restrict__ x, GhostWindow w, char* __restrict__ flag) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += stride)
    flag[i] = near_window(plane_of(x[3 * i + 2], w.side, w.planes), w.first, w.count, w.planes, min(w.reach, w.planes))
                  ? 1
                  : 0;
}

// to[j] = from[index[j]], k doubles a particle.
__global__ void pick_kernel(long long count, int k, const int* __restrict__ index, const double* __restrict__ from,
                            double* __restrict__ to) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long j = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; j < count; j += stride)
    for (int d = 0; d < k; ++d) to[k * j + d] = from[static_cast<long long>(k) * index[j] + d];
}

}  // namespace

void DeviceHalo::plan(DeviceComm& comm, const double* x, long long n, const GhostWindow& mine) {
  comm_ = &comm;
  const Comm& c = comm.comm();
  const int R = c.size(), me = c.rank();
  std::vector<GhostWindow> all(static_cast<std::size_t>(R));
  c.allgather(&mine, sizeof mine, all.data());
  for (const GhostWindow& w : all)
    VH_CHECK(w.planes == mine.planes && w.side == mine.side,
             "DeviceHalo::plan: the ranks' windows are on different grids");
  // The destinations whose widened windows hold a plane of this rank's particles (on a slab
  // decomposition its neighbours: the others get nothing and cost nothing) ...
  const PlaneCounts occupied(occupied_planes(x, n, mine.side, mine.planes, planes_));
  std::vector<int> to;
  for (int q = 0; q < R; ++q) {
    const GhostWindow& w = all[static_cast<std::size_t>(q)];
    if (n > 0 && occupied.near(w.first, w.count, std::min(w.reach, w.planes))) to.push_back(q);
  }
  // ... and, per destination, the particles its window takes, in index order, one selection
  // each (room for n a destination).
  const int ni = static_cast<int>(n);
  flags_.reserve(static_cast<std::size_t>(std::max<long long>(n, 1)));
  char* flags = flags_.as<char>();
  index_.reserve(std::max<std::size_t>(to.size() * static_cast<std::size_t>(n), 1));
  sc_.assign(static_cast<std::size_t>(R), 0);
  std::size_t at = 0;  // the destinations in rank order, each after the one before
  for (const int q : to) {
    window_flags_kernel<<<blocks_for(n), kThreads>>>(n, x, all[static_cast<std::size_t>(q)], flags);
    VH_CHECK_LAUNCH();
    at += sc_[static_cast<std::size_t>(q)] = static_cast<std::size_t>(
        select_flagged(thrust::counting_iterator<int>(0), flags, ni, index_.data() + at, count_, temp_));
  }
  sd_ = displacements(sc_);
  rc_ = c.alltoall_counts(sc_);
  rd_ = displacements(rc_);
  received_ = static_cast<long long>(rd_.back() + rc_.back());
  own_first_ = static_cast<long long>(rd_[static_cast<std::size_t>(me)]);
  own_count_ = static_cast<long long>(rc_[static_cast<std::size_t>(me)]);
  sent_out_ = 0;
  for (int q = 0; q < R; ++q)
    if (q != me) sent_out_ += static_cast<long long>(sc_[static_cast<std::size_t>(q)]);
}

void DeviceHalo::exchange(const double* v, int k, double* out) {
  VH_CHECK(comm_ != nullptr, "DeviceHalo::exchange: plan first");
  const std::size_t nsend = sd_.empty() ? 0 : sd_.back() + sc_.back();
  send_.reserve(std::max<std::size_t>(k * nsend, 1));
  if (nsend > 0) {
    pick_kernel<<<blocks_for(static_cast<long long>(nsend)), kThreads>>>(static_cast<long long>(nsend), k,
                                                                         index_.data(), v, send_.data());
    VH_CHECK_LAUNCH();
  }
  comm_->alltoallv(send_.data(), sc_, sd_, out, rc_, rd_, k * sizeof(double));
}

void DeviceHalo::exchange(const double* v, int k, DeviceArray<double>& all) {
  all.reserve(static_cast<std::size_t>(std::max<long long>(k * received_, 1)));
  exchange(v, k, all.data());
}

}  // namespace vh::vortex
