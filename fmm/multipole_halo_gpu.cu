// The multipoles exchanged by the ranks of evaluate_own under windows: see multipole_halo_gpu.h.
#include "fmm/multipole_halo_gpu.h"

#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/cuda_check.h"
#include "base/launch.h"
#include "base/select_flagged.h"
#include "fmm/level_stencil.h"

namespace vh::fmm {

namespace {

// flags[i] = 1 where cell first + i holds some of this rank's sources and lies in rank dest's
// source planes of its level (windows: per rank, per level 0 .. L, first and count).
__global__ void send_flags_kernel(long long first, long long n, const GCell* __restrict__ cells,
                                  const int* __restrict__ own, double lo_z, double side0, int L,
                                  const int* __restrict__ windows, int dest, int* __restrict__ flags) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const GCell C = cells[first + i];
  int keep = 0;
  if (own[C.end] > own[C.begin]) {
    const int planes = 1 << C.level, z = z_plane(C, lo_z, side0);
    const int* w = windows + 2 * (dest * (L + 1) + C.level);
    keep = ((z - w[0]) % planes + planes) % planes < w[1] ? 1 : 0;
  }
  flags[i] = keep;
}

// out[k] = M[ids[k]], k < n, each of k coefficients.
__global__ void pack_kernel(long long n, int k, const int* __restrict__ ids, const double2* __restrict__ M,
                            double2* __restrict__ out) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n * k) return;
  const long long row = i / k;
  out[i] = M[static_cast<long long>(ids[row]) * k + i % k];
}

// M[ids[r]] += in[r], r < n (distinct ids: one sender's rows).
__global__ void add_kernel(long long n, int k, const int* __restrict__ ids, const double2* __restrict__ in,
                           double2* __restrict__ M) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n * k) return;
  const long long row = i / k;
  double2& m = M[static_cast<long long>(ids[row]) * k + i % k];
  m.x += in[i].x;
  m.y += in[i].y;
}

// ids[i] = rows[ids[i]], i < n; bad set where one has none.
__global__ void to_rows_kernel(long long n, const int* __restrict__ rows, int* __restrict__ ids,
                               int* __restrict__ bad) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const int r = rows[ids[i]];
  if (r < 0) *bad = 1;
  ids[i] = r;
}

}  // namespace

void MultipoleHalo::plan(DeviceComm& comm, const GCell* cells, int L, double lo_z, double side0, const int* own,
                         const std::vector<PlaneWindow>& planes, int coefficients) {
  const Comm& c = comm.comm();
  const int R = c.size(), me = c.rank();
  if (static_cast<int>(planes.size()) != L + 1)
    throw std::invalid_argument("MultipoleHalo: " + std::to_string(planes.size()) + " levels of planes for " +
                                std::to_string(L + 1));
  comm_ = &comm;
  coefficients_ = coefficients;
  // The first level from which this rank takes every level by windows; the least over the ranks.
  int first = L + 1;
  while (first > 2 && planes[first - 1].count < (1 << (first - 1))) --first;
  first = static_cast<int>(-c.max(-static_cast<double>(first)));
  active_ = R > 1 && first <= L;
  from_ = first;
  prefix_ = level_offset(first);
  if (!active_) return;

  // Every rank's planes of every level.
  std::vector<int> mine(2 * (L + 1)), all(static_cast<std::size_t>(2 * (L + 1) * R));
  for (int l = 0; l <= L; ++l) {
    mine[2 * l] = planes[l].first;
    mine[2 * l + 1] = planes[l].count;
  }
  c.allgather(mine.data(), mine.size() * sizeof(int), all.data());
  windows_.upload(all);

  // The cells for each other rank, in rank order (plan time only: through the host).
  const long long n = level_offset(L + 1) - prefix_;
  flags_.reserve(static_cast<std::size_t>(std::max(n, 1LL)));
  const thrust::counting_iterator<int> in(static_cast<int>(prefix_));
  std::vector<int> ids;
  sc_.assign(R, 0);
  sd_.assign(R, 0);
  for (int r = 0; r < R; ++r) {
    sd_[r] = ids.size();
    if (r == me) continue;
    send_flags_kernel<<<blocks_for(n, 256), 256>>>(prefix_, n, cells, own, lo_z, side0, L, windows_.data(), r,
                                                   flags_.data());
    VH_CHECK_LAUNCH();
    const int k = select_flagged(in, flags_.data(), static_cast<int>(n), picked_, n_selected_, temp_);
    ids.resize(ids.size() + k);
    picked_.download(ids.data() + sd_[r], static_cast<std::size_t>(k));
    sc_[r] = static_cast<std::size_t>(k);
  }
  const std::size_t total = ids.size();
  send_ids_.upload(ids);
  n_send_ = total;
  rc_ = c.alltoall_counts(sc_);
  rd_.assign(R, 0);
  std::size_t received = 0;
  for (int r = 0; r < R; ++r) {
    rd_[r] = received;
    received += rc_[r];
  }
  n_recv_ = received;
  recv_ids_.reserve(std::max<std::size_t>(received, 1));
  comm.alltoallv(send_ids_.data(), sc_, sd_, recv_ids_.data(), rc_, rd_, sizeof(int));
  send_.reserve(std::max<std::size_t>(total, 1) * coefficients);
  recv_.reserve(std::max<std::size_t>(received, 1) * coefficients);
}

void MultipoleHalo::to_rows(const int* rows) {
  if (!active_ || !rows) return;
  DeviceArray<int> bad(1);
  bad.zero();
  for (auto [ids, n] : {std::pair<int*, std::size_t>{send_ids_.data(), n_send_}, {recv_ids_.data(), n_recv_}}) {
    if (n == 0) continue;
    to_rows_kernel<<<blocks_for(static_cast<long long>(n), 256), 256>>>(static_cast<long long>(n), rows, ids,
                                                                         bad.data());
    VH_CHECK_LAUNCH();
  }
  int b = 0;
  bad.download(&b, 1);
  if (b) throw std::logic_error("MultipoleHalo: a cell exchanged outside the cells M keeps");
}

void MultipoleHalo::exchange(double2* M, cudaStream_t stream) {
  if (!active_) throw std::logic_error("MultipoleHalo::exchange without an active plan");
  const int k = coefficients_;
  VH_CHECK_CUDA(cudaStreamSynchronize(stream));
  comm_->sum(reinterpret_cast<double*>(M), 2 * static_cast<std::size_t>(prefix_) * k);
  if (n_send_ > 0) {
    pack_kernel<<<blocks_for(static_cast<long long>(n_send_) * k, 256), 256, 0, stream>>>(
        static_cast<long long>(n_send_), k, send_ids_.data(), M, send_.data());
    VH_CHECK_LAUNCH();
    VH_CHECK_CUDA(cudaStreamSynchronize(stream));
  }
  comm_->alltoallv(send_.data(), sc_, sd_, recv_.data(), rc_, rd_, sizeof(double2) * k);
  for (std::size_t r = 0; r < rc_.size(); ++r) {  // in rank order: the same sums on every run
    if (rc_[r] == 0) continue;
    add_kernel<<<blocks_for(static_cast<long long>(rc_[r]) * k, 256), 256, 0, stream>>>(
        static_cast<long long>(rc_[r]), k, recv_ids_.data() + rd_[r], recv_.data() + rd_[r] * k, M);
    VH_CHECK_LAUNCH();
  }
}

}  // namespace vh::fmm
