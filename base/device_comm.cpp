#include "base/device_comm.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/cuda_check.h"

#ifdef VH_HAVE_NCCL
#include <nccl.h>

/// Throws vh::LibraryError when an NCCL call fails.
#define VH_CHECK_NCCL(call)                                                                          \
  do {                                                                                               \
    const ncclResult_t e_ = (call);                                                                  \
    if (e_ != ncclSuccess)                                                                           \
      throw ::vh::LibraryError(std::string("NCCL: ") + ncclGetErrorString(e_) + " in " #call, __FILE__, \
                               __LINE__);                                                            \
  } while (0)
#endif

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

/// Before a blocking exchange's clock starts: the work it depends on done, so that the seconds
/// are the exchange's own: the stream's, and for a blocking stream (which runs after the legacy
/// default stream's earlier work) the legacy stream's too.
void wait_for_inputs(cudaStream_t stream) {
  VH_CHECK_CUDA(cudaStreamSynchronize(stream));
  unsigned flags = 0;
  VH_CHECK_CUDA(cudaStreamGetFlags(stream, &flags));
  if (flags == cudaStreamDefault) VH_CHECK_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
}

/// The rank of another rank on this rank's GPU, or −1 (every rank's GPU UUID, allgathered).
int rank_sharing_gpu(const Comm& comm) {
  int dev = 0;
  VH_CHECK_CUDA(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  VH_CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
  std::vector<char> all(std::size_t(comm.size()) * sizeof prop.uuid.bytes);
  comm.allgather(prop.uuid.bytes, sizeof prop.uuid.bytes, all.data());
  for (int r = 0; r < comm.size(); ++r)
    if (r != comm.rank() && std::memcmp(all.data() + std::size_t(r) * sizeof prop.uuid.bytes, prop.uuid.bytes,
                                        sizeof prop.uuid.bytes) == 0)
      return r;
  return -1;
}

struct Configured {
  bool set = false;
  DeviceComm::Transport transport = DeviceComm::Transport::mpi_staged;
};
Configured& configured_state() {
  static Configured c;
  return c;
}

}  // namespace

// ---- the run's NCCL communicator ------------------------------------------------------------

#ifdef VH_HAVE_NCCL
struct DeviceComm::Nccl {
  ncclComm_t comm = nullptr;
  int size = 0, rank = 0;
  explicit Nccl(const Comm& c) : size(c.size()), rank(c.rank()) {
    ncclUniqueId id{};
    if (c.root()) VH_CHECK_NCCL(ncclGetUniqueId(&id));
    c.bcast(&id, sizeof id);
    VH_CHECK_NCCL(ncclCommInitRank(&comm, c.size(), id, c.rank()));
  }
  ~Nccl() {
    if (comm) ncclCommDestroy(comm);
  }
  /// The process's communicator for these ranks, made (collectively) when none is alive.
  static std::shared_ptr<Nccl> of(const Comm& c) {
    static std::mutex m;
    static std::weak_ptr<Nccl> current;
    std::lock_guard<std::mutex> lock(m);
    std::shared_ptr<Nccl> p = current.lock();
    if (!p || p->size != c.size() || p->rank != c.rank()) {
      p = std::make_shared<Nccl>(c);
      current = p;
    }
    return p;
  }
};
#else
struct DeviceComm::Nccl {};
#endif

// ---- choice of the transport ----------------------------------------------------------------

const char* DeviceComm::name(Transport t) {
  switch (t) {
    case Transport::nccl: return "nccl";
    case Transport::mpi_cuda: return "mpi-cuda";
    case Transport::mpi_staged: return "mpi-staged";
  }
  return "?";
}

bool DeviceComm::nccl_built() {
#ifdef VH_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

std::string DeviceComm::nccl_version() {
#ifdef VH_HAVE_NCCL
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  // NCCL_VERSION(X, Y, Z) = X·10000 + Y·100 + Z since 2.9.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
#else
  return "none";
#endif
}

DeviceComm::Transport DeviceComm::choose(const Comm& comm, const std::string& request) {
  // VH_COMM overrides the deck; set but empty, it is unset (as a shell's VH_COMM= means).
  const char* env = std::getenv("VH_COMM");
  const bool from_env = env != nullptr && *env != '\0';
  const std::string req = from_env ? std::string(env) : request;
  if (req != "auto" && req != "mpi" && req != "nccl")
    throw InputError("comm = '" + req + "' (from " + (from_env ? "VH_COMM" : "the deck") +
                     "): allowed: auto, mpi, nccl");
  const Transport mpi = Comm::cuda_aware() ? Transport::mpi_cuda : Transport::mpi_staged;
  if (req == "mpi") return mpi;
  if (req == "nccl" && !nccl_built())
    throw InputError("comm = nccl, but this build has no NCCL (build with -DVH_NCCL_DIR=<NCCL prefix>; allowed: auto, mpi)");
  if (!nccl_built() || comm.size() == 1) return mpi;
  const int other = rank_sharing_gpu(comm);
  const bool shared = comm.any(other >= 0);
  if (shared && req == "nccl")
    throw InputError("comm = nccl needs one GPU per rank, but rank " + std::to_string(comm.rank()) + " shares its GPU" +
                     (other >= 0 ? " with rank " + std::to_string(other) : std::string(" (another rank's)")) +
                     " (allowed: auto, mpi)");
  return shared ? mpi : Transport::nccl;
}

void DeviceComm::configure(const Comm& comm, const std::string& request) {
  const Transport t = choose(comm, request);
  configured_state() = {true, t};
}

DeviceComm::Transport DeviceComm::configured(const Comm& comm) {
  const Configured& c = configured_state();
  return c.set ? c.transport : choose(comm, "auto");
}

// ---- the collectives ------------------------------------------------------------------------

DeviceComm::DeviceComm(const Comm& comm, cudaStream_t stream)
    : comm_(comm), stream_(stream), transport_(comm.size() == 1 ? Transport::mpi_staged : configured(comm)) {
#ifdef VH_HAVE_NCCL
  if (transport_ == Transport::nccl) nccl_ = Nccl::of(comm_);
#endif
}

DeviceComm::~DeviceComm() {
  for (void* h : host_)
    if (h) cudaFreeHost(h);
  for (const auto* v : {&pending_, &spare_})
    for (const Timed& t : *v) cudaEventDestroy(t.begin), cudaEventDestroy(t.end);
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
  wait_for_inputs(stream_);
  const auto t0 = std::chrono::steady_clock::now();
  const char* s = static_cast<const char*>(send);
  char* d = static_cast<char*>(recv);
  const int me = comm_.rank();
  if (comm_.size() == 1 || transport_ == Transport::nccl) {
    // The rank's own part as a device copy, in order on the stream.
    if (sc[me])
      VH_CHECK_CUDA(cudaMemcpyAsync(d + rd[me] * elem_bytes, s + sd[me] * elem_bytes, sc[me] * elem_bytes,
                                    cudaMemcpyDeviceToDevice, stream_));
#ifdef VH_HAVE_NCCL
    if (transport_ == Transport::nccl) {
      // Grouped point-to-point: NCCL runs the pairs concurrently over the links it has.
      VH_CHECK_NCCL(ncclGroupStart());
      for (int r = 0; r < comm_.size(); ++r) {
        if (r == me) continue;
        if (sc[r]) VH_CHECK_NCCL(ncclSend(s + sd[r] * elem_bytes, sc[r] * elem_bytes, ncclChar, r, nccl_->comm, stream_));
        if (rc[r]) VH_CHECK_NCCL(ncclRecv(d + rd[r] * elem_bytes, rc[r] * elem_bytes, ncclChar, r, nccl_->comm, stream_));
      }
      VH_CHECK_NCCL(ncclGroupEnd());
    }
#endif
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
    if (int(r) != me) stats_.bytes += double(sc[r] * elem_bytes);
  ++stats_.exchanges;
}

void DeviceComm::self_copies(cudaStream_t stream, const std::vector<Send>& sends, const std::vector<Recv>& recvs) {
  // This rank's own pieces: the i-th send to itself lands in the i-th receive from itself.
  const int me = comm_.rank();
  std::vector<const Send*> self_send;
  std::vector<const Recv*> self_recv;
  for (const Send& x : sends)
    if (x.rank == me) self_send.push_back(&x);
  for (const Recv& x : recvs)
    if (x.rank == me) self_recv.push_back(&x);
  VH_CHECK(self_send.size() == self_recv.size(), "DeviceComm::exchange: a rank's pieces to itself do not match");
  for (std::size_t i = 0; i < self_send.size(); ++i) {
    VH_CHECK(self_send[i]->bytes == self_recv[i]->bytes, "DeviceComm::exchange: a piece to itself changes size");
    if (self_send[i]->bytes)
      VH_CHECK_CUDA(cudaMemcpyAsync(self_recv[i]->data, self_send[i]->data, self_send[i]->bytes,
                                    cudaMemcpyDeviceToDevice, stream));
  }
}

void DeviceComm::nccl_group(cudaStream_t stream, const std::vector<Send>& sends, const std::vector<Recv>& recvs) {
#ifdef VH_HAVE_NCCL
  const int me = comm_.rank();
  VH_CHECK_NCCL(ncclGroupStart());
  for (const Send& x : sends)
    if (x.rank != me && x.bytes) VH_CHECK_NCCL(ncclSend(x.data, x.bytes, ncclChar, x.rank, nccl_->comm, stream));
  for (const Recv& x : recvs)
    if (x.rank != me && x.bytes) VH_CHECK_NCCL(ncclRecv(x.data, x.bytes, ncclChar, x.rank, nccl_->comm, stream));
  VH_CHECK_NCCL(ncclGroupEnd());
#else
  (void)stream, (void)sends, (void)recvs;
#endif
}

void DeviceComm::exchange_on(cudaStream_t stream, const std::vector<Send>& sends, const std::vector<Recv>& recvs) {
  VH_CHECK(stream_ordered(), "DeviceComm::exchange_on needs the NCCL transport");
  settle(false);
  Timed t{};
  if (!spare_.empty()) {
    t = spare_.back();
    spare_.pop_back();
  } else {
    VH_CHECK_CUDA(cudaEventCreate(&t.begin));
    VH_CHECK_CUDA(cudaEventCreate(&t.end));
  }
  VH_CHECK_CUDA(cudaEventRecord(t.begin, stream));
  self_copies(stream, sends, recvs);
  if (comm_.size() > 1) nccl_group(stream, sends, recvs);
  VH_CHECK_CUDA(cudaEventRecord(t.end, stream));
  pending_.push_back(t);
  for (const Send& x : sends)
    if (x.rank != comm_.rank()) stats_.bytes += double(x.bytes);
  ++stats_.exchanges;
}

void DeviceComm::settle(bool wait) const {
  std::size_t done = 0;
  for (; done < pending_.size(); ++done) {
    const Timed& t = pending_[done];
    if (wait) VH_CHECK_CUDA(cudaEventSynchronize(t.end));
    else if (cudaEventQuery(t.end) != cudaSuccess) break;
    float ms = 0;
    VH_CHECK_CUDA(cudaEventElapsedTime(&ms, t.begin, t.end));
    stats_.seconds += 1e-3 * ms;
    spare_.push_back(t);
  }
  pending_.erase(pending_.begin(), pending_.begin() + std::ptrdiff_t(done));
  cudaGetLastError();  // cudaEventQuery's cudaErrorNotReady is not an error
}

const ExchangeStats& DeviceComm::stats() const {
  settle(true);
  return stats_;
}

void DeviceComm::exchange(const std::vector<Send>& sends, const std::vector<Recv>& recvs) {
  wait_for_inputs(stream_);
  const auto t0 = std::chrono::steady_clock::now();
  const int me = comm_.rank();
  self_copies(stream_, sends, recvs);
  double sent = 0;
  for (const Send& x : sends)
    if (x.rank != me) sent += double(x.bytes);
  if (transport_ == Transport::nccl) {
    nccl_group(stream_, sends, recvs);
    VH_CHECK_CUDA(cudaStreamSynchronize(stream_));
  } else {
    VH_CHECK_CUDA(cudaStreamSynchronize(stream_));
    // MPI: one message per piece, tagged by its place among the pieces of its pair (MPI keeps
    // the order of equal tags too, but distinct tags say what matches what). CUDA-aware: the
    // device pointers; staged: through pinned host memory, one buffer for all sends and one for
    // all receives.
    const bool staged = transport_ == Transport::mpi_staged;
    std::size_t send_total = 0, recv_total = 0;
    for (const Send& x : sends)
      if (x.rank != me) send_total += x.bytes;
    for (const Recv& x : recvs)
      if (x.rank != me) recv_total += x.bytes;
    char* hs = staged ? static_cast<char*>(host(0, std::max<std::size_t>(send_total, 1))) : nullptr;
    char* hr = staged ? static_cast<char*>(host(1, std::max<std::size_t>(recv_total, 1))) : nullptr;
    std::vector<Comm::Request> reqs;
    std::vector<int> tag(std::size_t(comm_.size()), 0);
    std::size_t off = 0;
    for (const Send& x : sends) {
      if (x.rank == me) continue;
      const void* from = x.data;
      if (staged) {
        if (x.bytes) VH_CHECK_CUDA(cudaMemcpy(hs + off, x.data, x.bytes, cudaMemcpyDeviceToHost));
        from = hs + off;
        off += x.bytes;
      }
      reqs.push_back(comm_.isend(from, x.bytes, x.rank, tag[std::size_t(x.rank)]++));
    }
    std::fill(tag.begin(), tag.end(), 0);
    std::vector<std::pair<const Recv*, char*>> staged_recvs;
    off = 0;
    for (const Recv& x : recvs) {
      if (x.rank == me) continue;
      void* into = x.data;
      if (staged) {
        into = hr + off;
        staged_recvs.emplace_back(&x, hr + off);
        off += x.bytes;
      }
      reqs.push_back(comm_.irecv(into, x.bytes, x.rank, tag[std::size_t(x.rank)]++));
    }
    Comm::wait_all(reqs);
    for (const auto& [x, h] : staged_recvs)
      if (x->bytes) VH_CHECK_CUDA(cudaMemcpy(x->data, h, x->bytes, cudaMemcpyHostToDevice));
  }
  stats_.seconds += seconds_since(t0);
  stats_.bytes += sent;
  ++stats_.exchanges;
}

void DeviceComm::allgatherv(const void* send, std::size_t count, void* recv, const std::vector<std::size_t>& counts,
                            std::size_t elem_bytes) {
  wait_for_inputs(stream_);
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  if (comm_.size() == 1 || transport_ == Transport::nccl) {
    std::vector<std::size_t> off(counts.size(), 0);
    for (std::size_t r = 1; r < counts.size(); ++r) off[r] = off[r - 1] + counts[r - 1];
    char* d = static_cast<char*>(recv);
    const int me = comm_.rank();
    if (count)
      VH_CHECK_CUDA(cudaMemcpyAsync(d + off[me] * elem_bytes, send, count * elem_bytes, cudaMemcpyDeviceToDevice,
                                    stream_));
#ifdef VH_HAVE_NCCL
    if (transport_ == Transport::nccl) {
      VH_CHECK_NCCL(ncclGroupStart());
      for (int r = 0; r < comm_.size(); ++r) {
        if (r == me) continue;
        if (count) VH_CHECK_NCCL(ncclSend(send, count * elem_bytes, ncclChar, r, nccl_->comm, stream_));
        if (counts[r])
          VH_CHECK_NCCL(ncclRecv(d + off[r] * elem_bytes, counts[r] * elem_bytes, ncclChar, r, nccl_->comm, stream_));
      }
      VH_CHECK_NCCL(ncclGroupEnd());
    }
#endif
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
  wait_for_inputs(stream_);
  if (comm_.size() == 1 || n == 0) return;
  const auto t0 = std::chrono::steady_clock::now();
#ifdef VH_HAVE_NCCL
  if (transport_ == Transport::nccl) {
    VH_CHECK_NCCL(ncclAllReduce(data, data, n, ncclDouble, ncclSum, nccl_->comm, stream_));
    VH_CHECK_CUDA(cudaStreamSynchronize(stream_));
  } else
#endif
  {
    // MPI: through the host whatever the library (a few values of diagnostics; the FMM's
    // multipoles on ranks without NCCL).
    std::vector<double> h(n);
    VH_CHECK_CUDA(cudaMemcpy(h.data(), data, n * sizeof(double), cudaMemcpyDeviceToHost));
    comm_.sum(h);
    VH_CHECK_CUDA(cudaMemcpy(data, h.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  }
  stats_.seconds += seconds_since(t0);
  stats_.bytes += double(n * sizeof(double));
  ++stats_.exchanges;
}

}  // namespace vh
