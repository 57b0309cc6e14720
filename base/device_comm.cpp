#include "base/device_comm.h"

#include <algorithm>
#include <chrono>

#include "base/cuda_check.h"

namespace vh {

namespace {

/// One past the last element that counts c at offsets o touch.
std::size_t extent(const std::vector<std::size_t>& c, const std::vector<std::size_t>& o) {
  std::size_t e = 0;
  for (std::size_t r = 0; r < c.size(); ++r)
    if (c[r]) e = std::max(e, o[r] + c[r]);
  return e;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

DeviceComm::DeviceComm(const Comm& comm, cudaStream_t stream)
    : comm_(comm), stream_(stream), transport_(Comm::cuda_aware() ? Transport::mpi_cuda : Transport::mpi_staged) {}

DeviceComm::~DeviceComm() {
  for (void* h : host_)
    if (h) cudaFreeHost(h);
}

const char* DeviceComm::name(Transport t) {
  switch (t) {
    case Transport::mpi_staged: return "mpi-staged";
    case Transport::mpi_cuda: return "mpi-cuda";
  }
  return "?";
}

void* DeviceComm::host(int which, std::size_t bytes) {
  if (bytes > host_bytes_[which]) {
    if (host_[which]) VH_CHECK_CUDA(cudaFreeHost(host_[which]));
    host_[which] = nullptr;
    host_bytes_[which] = 0;
    VH_CHECK_CUDA(cudaMallocHost(&host_[which], bytes));
    host_bytes_[which] = bytes;
  }
  return host_[which];
}

void DeviceComm::alltoallv(const void* send, const std::vector<std::size_t>& sc, const std::vector<std::size_t>& sd,
                           void* recv, const std::vector<std::size_t>& rc, const std::vector<std::size_t>& rd,
                           std::size_t elem_bytes) {
  VH_CHECK_CUDA(cudaStreamSynchronize(stream_));
  const auto t0 = std::chrono::steady_clock::now();
  if (comm_.size() == 1) {
    if (sc[0])
      VH_CHECK_CUDA(cudaMemcpyAsync(static_cast<char*>(recv) + rd[0] * elem_bytes,
                                    static_cast<const char*>(send) + sd[0] * elem_bytes, sc[0] * elem_bytes,
                                    cudaMemcpyDeviceToDevice, stream_));
    VH_CHECK_CUDA(cudaStreamSynchronize(stream_));
  } else if (transport_ == Transport::mpi_cuda) {
    comm_.alltoallv(send, sc, sd, recv, rc, rd, elem_bytes);
  } else {
    const std::size_t ns = extent(sc, sd) * elem_bytes, nr = extent(rc, rd) * elem_bytes;
    void* hs = host(0, std::max<std::size_t>(ns, 1));
    void* hr = host(1, std::max<std::size_t>(nr, 1));
    if (ns) VH_CHECK_CUDA(cudaMemcpy(hs, send, ns, cudaMemcpyDeviceToHost));
    comm_.alltoallv(hs, sc, sd, hr, rc, rd, elem_bytes);
    if (nr) VH_CHECK_CUDA(cudaMemcpy(recv, hr, nr, cudaMemcpyHostToDevice));
  }
  stats_.seconds += seconds_since(t0);
  for (std::size_t r = 0; r < sc.size(); ++r)
    if (int(r) != comm_.rank()) stats_.bytes += double(sc[r] * elem_bytes);
  ++stats_.exchanges;
}

void DeviceComm::allgatherv(const void* send, std::size_t count, void* recv, const std::vector<std::size_t>& counts,
                            std::size_t elem_bytes) {
  VH_CHECK_CUDA(cudaStreamSynchronize(stream_));
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  if (comm_.size() == 1) {
    if (count)
      VH_CHECK_CUDA(cudaMemcpyAsync(recv, send, count * elem_bytes, cudaMemcpyDeviceToDevice, stream_));
    VH_CHECK_CUDA(cudaStreamSynchronize(stream_));
  } else if (transport_ == Transport::mpi_cuda) {
    comm_.allgatherv(send, count, recv, counts, elem_bytes);
  } else {
    void* hs = host(0, std::max<std::size_t>(count * elem_bytes, 1));
    void* hr = host(1, std::max<std::size_t>(total * elem_bytes, 1));
    if (count) VH_CHECK_CUDA(cudaMemcpy(hs, send, count * elem_bytes, cudaMemcpyDeviceToHost));
    comm_.allgatherv(hs, count, hr, counts, elem_bytes);
    if (total) VH_CHECK_CUDA(cudaMemcpy(recv, hr, total * elem_bytes, cudaMemcpyHostToDevice));
  }
  stats_.seconds += seconds_since(t0);
  stats_.bytes += double(count * elem_bytes) * double(comm_.size() - 1);
  ++stats_.exchanges;
}

void DeviceComm::sum(double* data, std::size_t n) {
  VH_CHECK_CUDA(cudaStreamSynchronize(stream_));
  if (comm_.size() == 1 || n == 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  // A few values (reductions of diagnostics): through the host whatever the transport.
  std::vector<double> h(n);
  VH_CHECK_CUDA(cudaMemcpy(h.data(), data, n * sizeof(double), cudaMemcpyDeviceToHost));
  comm_.sum(h);
  VH_CHECK_CUDA(cudaMemcpy(data, h.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  stats_.seconds += seconds_since(t0);
  stats_.bytes += double(n * sizeof(double));
  ++stats_.exchanges;
}

}  // namespace vh
