#include "base/device_comm.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/cuda_check.h"
#include "base/device_buffer.h"

#ifdef VH_HAVE_NCCL
#include <nccl.h>

/// Throws when an NCCL call fails: vh::DeviceFault where the GPU's context has a sticky error
/// (NCCL answers ncclUnhandledCudaError), else vh::LibraryError.
#define VH_CHECK_NCCL(call)                                                                 \
  do {                                                                                      \
    const ncclResult_t e_ = (call);                                                         \
    if (e_ != ncclSuccess) {                                                                \
      const std::string what_ = std::string("NCCL: ") + ncclGetErrorString(e_) + " in " #call; \
      ::vh::throw_if_device_fault(what_, __FILE__, __LINE__);                               \
      throw ::vh::LibraryError(what_, __FILE__, __LINE__);                                  \
    }                                                                                       \
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
  close_peers();
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
    copy_to_device(recv, hr, nr);
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

void DeviceComm::exchange_on(cudaStream_t stream, const Plan& p) {
  VH_CHECK(transport_ == Transport::nccl || comm_.size() == 1 || !p.to.empty(),
           "DeviceComm::exchange_on needs the NCCL transport or a plan with peer copies");
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
  enqueue(stream, p);
  VH_CHECK_CUDA(cudaEventRecord(t.end, stream));
  pending_.push_back(t);
  for (const Send& x : p.sends)
    if (x.rank != comm_.rank()) stats_.bytes += double(x.bytes);
  ++stats_.exchanges;
}

void DeviceComm::enqueue(cudaStream_t stream, const Plan& p) {
  if (!p.to.empty()) return put(stream, p);
  self_copies(stream, p.sends, p.recvs);
  if (comm_.size() > 1) nccl_group(stream, p.sends, p.recvs);
}

void DeviceComm::exchange(const Plan& p) {
  if (p.to.empty()) return exchange(p.sends, p.recvs);
  wait_for_inputs(stream_);
  const auto t0 = std::chrono::steady_clock::now();
  put(stream_, p);
  VH_CHECK_CUDA(cudaStreamSynchronize(stream_));
  stats_.seconds += seconds_since(t0);
  for (const Send& x : p.sends)
    if (x.rank != comm_.rank()) stats_.bytes += double(x.bytes);
  ++stats_.exchanges;
}

// ---- peer copies ----------------------------------------------------------------------------

namespace {
constexpr unsigned kIpcEvent = cudaEventInterprocess | cudaEventDisableTiming;
}

bool DeviceComm::open_peers() {
  peers_tried_ = true;
  const char* env = std::getenv("VH_PEER_COPIES");
  const bool wanted = !(env && std::string(env) == "0");
  // Every rank decides alike: all on one node, and nobody asked them off.
  if (comm_.any(!wanted || comm_.local_size() != comm_.size())) return false;
  const int R = comm_.size(), me = comm_.rank();
  bool ok = cudaEventCreateWithFlags(&free_, kIpcEvent) == cudaSuccess &&
            cudaEventCreateWithFlags(&sent_, kIpcEvent) == cudaSuccess;
  cudaIpcEventHandle_t mine[2] = {};
  ok = ok && cudaIpcGetEventHandle(&mine[0], free_) == cudaSuccess &&
       cudaIpcGetEventHandle(&mine[1], sent_) == cudaSuccess;
  std::vector<cudaIpcEventHandle_t> all(2 * static_cast<std::size_t>(R));
  comm_.allgather(mine, sizeof mine, all.data());
  peer_free_.assign(std::size_t(R), nullptr);
  peer_sent_.assign(std::size_t(R), nullptr);
  for (int r = 0; r < R && ok; ++r) {
    if (r == me) continue;
    ok = cudaIpcOpenEventHandle(&peer_free_[std::size_t(r)], all[2 * std::size_t(r)]) == cudaSuccess &&
         cudaIpcOpenEventHandle(&peer_sent_[std::size_t(r)], all[2 * std::size_t(r) + 1]) == cudaSuccess;
  }
  ok = ok && cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming) == cudaSuccess &&
       cudaEventCreateWithFlags(&join_, cudaEventDisableTiming) == cudaSuccess &&
       cudaStreamCreateWithFlags(&lane_, cudaStreamNonBlocking) == cudaSuccess;
  if (comm_.any(!ok)) {
    cudaGetLastError();  // a failed IPC call is not sticky: the transport carries on
    close_peers();
    return false;
  }
  return true;
}

void DeviceComm::close_peers() {
  for (Window& w : windows_)
    for (std::size_t r = 0; r < w.at.size(); ++r)
      if (w.at[r] && w.at[r] != w.base) cudaIpcCloseMemHandle(w.at[r]);
  windows_.clear();
  for (auto* v : {&peer_free_, &peer_sent_})
    for (cudaEvent_t& e : *v)
      if (e) cudaEventDestroy(e), e = nullptr;
  if (lane_) cudaStreamDestroy(lane_), lane_ = nullptr;
  for (cudaEvent_t* e : {&free_, &sent_, &fork_, &join_})
    if (*e) cudaEventDestroy(*e), *e = nullptr;
  peers_on_ = false;
}

bool DeviceComm::share(void* base, std::size_t bytes) {
  if (comm_.size() == 1) return false;
  if (!peers_tried_) peers_on_ = open_peers();
  if (!peers_on_) return false;
  const int R = comm_.size(), me = comm_.rank();
  struct Exported {
    cudaIpcMemHandle_t handle;
    std::size_t bytes;
    bool ok;
  } mine{};
  mine.bytes = bytes;
  mine.ok = base != nullptr && cudaIpcGetMemHandle(&mine.handle, base) == cudaSuccess;
  std::vector<Exported> all(static_cast<std::size_t>(R));
  comm_.allgather(&mine, sizeof mine, all.data());
  Window w{static_cast<char*>(base), bytes, std::vector<char*>(static_cast<std::size_t>(R), nullptr)};
  bool ok = true;
  for (int r = 0; r < R; ++r) {
    ok = ok && all[std::size_t(r)].ok;
    if (!ok) break;
    if (r == me) {
      w.at[std::size_t(r)] = w.base;
      continue;
    }
    void* p = nullptr;
    ok = cudaIpcOpenMemHandle(&p, all[std::size_t(r)].handle, cudaIpcMemLazyEnablePeerAccess) == cudaSuccess;
    w.at[std::size_t(r)] = static_cast<char*>(p);
  }
  windows_.push_back(w);
  if (comm_.any(!ok)) {
    cudaGetLastError();
    close_peers();
  }
  return peers_on_;
}

std::string DeviceComm::describe() const {
  return std::string(name(transport_)) + (peers_on_ ? ", peer copies" : "");
}

DeviceComm::Plan DeviceComm::plan(const std::vector<Send>& sends, const std::vector<Recv>& recvs) {
  Plan p{sends, recvs, {}};
  if (!peers_on_) return p;
  const int R = comm_.size(), me = comm_.rank();
  // Each piece this rank receives from another, as (window, offset, bytes), in the order of
  // the list: sent to the rank that sends it, which matches them to its sends in order.
  std::vector<std::vector<std::uint64_t>> where(static_cast<std::size_t>(R));
  bool inside = true;
  for (const Recv& x : recvs) {
    if (x.rank == me) continue;
    const char* d = static_cast<const char*>(x.data);
    std::size_t w = 0;
    while (w < windows_.size() && !(d >= windows_[w].base && d + x.bytes <= windows_[w].base + windows_[w].bytes)) ++w;
    inside = inside && (w < windows_.size() || x.bytes == 0);
    std::vector<std::uint64_t>& to = where[std::size_t(x.rank)];
    const bool in = w < windows_.size();
    to.insert(to.end(), {in ? w : ~std::uint64_t(0), in ? std::uint64_t(d - windows_[w].base) : 0, x.bytes});
  }
  if (comm_.any(!inside)) return p;  // the transport moves this exchange
  std::vector<std::size_t> sc(static_cast<std::size_t>(R));
  std::vector<std::uint64_t> flat;
  for (int r = 0; r < R; ++r) {
    sc[std::size_t(r)] = where[std::size_t(r)].size();
    flat.insert(flat.end(), where[std::size_t(r)].begin(), where[std::size_t(r)].end());
  }
  const std::vector<std::size_t> rc = comm_.alltoall_counts(sc);
  std::vector<std::uint64_t> got(std::max<std::size_t>(extent(rc, displacements(rc)), 1));
  comm_.alltoallv(flat.data(), sc, displacements(sc), got.data(), rc, displacements(rc), sizeof(std::uint64_t));
  const std::vector<std::size_t> rd = displacements(rc);
  std::vector<std::size_t> next(static_cast<std::size_t>(R), 0);
  p.to.assign(sends.size(), nullptr);
  for (std::size_t i = 0; i < sends.size(); ++i) {
    const Send& x = sends[i];
    if (x.rank == me) continue;
    const std::size_t r = std::size_t(x.rank), k = next[r]++;
    VH_CHECK(3 * k + 2 < rc[r], "DeviceComm::plan: more pieces sent to a rank than it receives");
    const std::uint64_t* d = got.data() + rd[r] + 3 * k;
    VH_CHECK(d[2] == x.bytes, "DeviceComm::plan: a piece's size differs between its sender and receiver");
    if (x.bytes) p.to[i] = windows_[d[0]].at[r] + d[1];
  }
  for (int r = 0; r < R; ++r)
    VH_CHECK(r == me || 3 * next[std::size_t(r)] == rc[std::size_t(r)],
             "DeviceComm::plan: fewer pieces sent to a rank than it receives");
  return p;
}

void DeviceComm::put(cudaStream_t stream, const Plan& p) {
  const int R = comm_.size(), me = comm_.rank();
  self_copies(stream, p.sends, p.recvs);
  // My windows are free as of this point of my stream; once every rank has said so (the
  // barrier orders the events' records before the waits on them), the copy stream waits for
  // each receiver's, writes its pieces, and joins my stream again.
  VH_CHECK_CUDA(cudaEventRecord(free_, stream));
  VH_CHECK_CUDA(cudaEventRecord(fork_, stream));
  comm_.barrier();
  std::vector<bool> to(static_cast<std::size_t>(R), false), from(static_cast<std::size_t>(R), false);
  for (std::size_t i = 0; i < p.sends.size(); ++i)
    if (p.sends[i].rank != me && p.sends[i].bytes) to[std::size_t(p.sends[i].rank)] = true;
  for (const Recv& x : p.recvs)
    if (x.rank != me && x.bytes) from[std::size_t(x.rank)] = true;
  // One copy stream, the other ranks in turn from the next one up: at every moment each rank
  // writes to a different one. (A stream per receiver, all at once, moved 185 GB/s a GPU on 4
  // H200s against 316 GB/s this way: bench/RESULTS.md, 2026-11-28 "peer copies".)
  VH_CHECK_CUDA(cudaStreamWaitEvent(lane_, fork_, 0));
  for (int i = 1; i < R; ++i) {
    const int r = (me + i) % R;
    if (!to[std::size_t(r)]) continue;
    VH_CHECK_CUDA(cudaStreamWaitEvent(lane_, peer_free_[std::size_t(r)], 0));
    for (std::size_t k = 0; k < p.sends.size(); ++k)
      if (p.sends[k].rank == r && p.sends[k].bytes)
        VH_CHECK_CUDA(cudaMemcpyAsync(p.to[k], p.sends[k].data, p.sends[k].bytes, cudaMemcpyDeviceToDevice, lane_));
  }
  VH_CHECK_CUDA(cudaEventRecord(join_, lane_));
  VH_CHECK_CUDA(cudaStreamWaitEvent(stream, join_, 0));
  // My pieces are sent as of this point; once every rank has said so, my stream waits for the
  // pieces of those that send to me.
  VH_CHECK_CUDA(cudaEventRecord(sent_, stream));
  comm_.barrier();
  for (int r = 0; r < R; ++r)
    if (from[std::size_t(r)]) VH_CHECK_CUDA(cudaStreamWaitEvent(stream, peer_sent_[std::size_t(r)], 0));
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
      copy_to_device(x->data, h, x->bytes);
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
    copy_to_device(recv, hr, total * elem_bytes);
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
    copy_to_device(data, h.data(), n * sizeof(double));
  }
  stats_.seconds += seconds_since(t0);
  stats_.bytes += double(n * sizeof(double));
  ++stats_.exchanges;
}

}  // namespace vh
