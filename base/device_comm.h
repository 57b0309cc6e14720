// Collectives of device buffers between the ranks of a Comm (CUDA builds): what the GPU
// solvers exchange. The host side of every call is plain C++ (no CUDA syntax); buffers are
// device pointers. The caller's work on `stream` that writes a send buffer must be enqueued on
// that stream before the call; every call returns when the received data are in place (the
// stream synchronised), so the caller may read them from any stream or the host.
//
// Transports (DeviceComm::Transport; the banner and run.h5 /meta name the one a run used):
//   nccl        NCCL (grouped ncclSend/ncclRecv, ncclAllReduce) over NVLink, PCIe or the
//               network between the GPUs, one communicator per run bootstrapped over MPI
//               (ncclGetUniqueId on rank 0, broadcast). Needs a build with NCCL (VH_HAVE_NCCL)
//               and one GPU per rank.
//   mpi-cuda    device pointers straight to a CUDA-aware MPI (asked at run time:
//               Comm::cuda_aware(); VH_MPI_CUDA_AWARE=0|1 overrides).
//   mpi-staged  device → pinned host → MPI → pinned host → device: any MPI library (Debian
//               12's Open MPI is not CUDA-aware), at the speed of the host copies.
// choose() picks one from a request: "auto" (NCCL where it can run, else MPI), "mpi" (CUDA-aware
// MPI if the library is, else staged) or "nccl"; the environment variable VH_COMM=auto|mpi|nccl
// overrides the request. configure() makes the choice for the process (the run driver calls it
// once, collectively, after selecting the GPU); a DeviceComm made before that uses "auto".
// One rank needs no MPI: every call is a device copy or nothing.
//
// Peer copies (beside any transport): where all ranks run on one node, a buffer that share()
// made a window of every rank (CUDA IPC) receives the pieces of a planned exchange (plan())
// straight from the senders' copy engines, the receivers in turn. The copy engines take
// no SMs, so an exchange overlaps the kernels beside it at full speed, which NCCL's kernels do
// not. Each exchange orders itself on the GPUs through two interprocess events a rank and two
// barriers of the hosts: a rank's windows are free as of its stream when the others write into
// them, and its stream goes on once every piece it receives is in. VH_PEER_COPIES=0 turns them
// off; they are off where ranks span nodes or a GPU cannot open another's memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/comm.h"

namespace vh {

class DeviceComm {
 public:
  enum class Transport { mpi_staged, mpi_cuda, nccl };

  /// "nccl", "mpi-cuda" or "mpi-staged".
  static const char* name(Transport t);
  /// Whether this build has NCCL (and its version as "2.28.9", or "none").
  static bool nccl_built();
  static std::string nccl_version();
  /// Collective: the transport that `request` ("auto", "mpi", "nccl"; VH_COMM overrides) gives
  /// on these ranks, whose GPUs must already be selected. Throws InputError when the request
  /// cannot be met (no NCCL in the build, two ranks on one GPU for nccl) or is not one of the
  /// three, naming what is allowed.
  static Transport choose(const Comm& comm, const std::string& request);
  /// choose(), kept as the transport of every DeviceComm made afterwards in this process.
  static void configure(const Comm& comm, const std::string& request);
  /// The configured transport (choose(comm, "auto") until configure() is called).
  static Transport configured(const Comm& comm);

  /// Collectives on `stream` over the configured transport (NCCL: the run's communicator,
  /// made by the first DeviceComm of the process; collective then).
  DeviceComm(const Comm& comm, cudaStream_t stream);
  ~DeviceComm();
  DeviceComm(const DeviceComm&) = delete;
  DeviceComm& operator=(const DeviceComm&) = delete;

  const Comm& comm() const { return comm_; }
  Transport transport() const { return transport_; }
  /// The costs so far of the calls below (bytes to other ranks, wall seconds, calls). Each call
  /// first waits for the stream's earlier work, so the seconds are the exchange's own.
  const ExchangeStats& stats() const;

  /// All-to-all of elements of `elem_bytes` bytes: to rank r goes send[sd[r] …) of sc[r]
  /// elements, from rank r comes recv[rd[r] …) of rc[r] (counts and displacements in
  /// elements, one per rank, as Comm::alltoallv). send and recv must not overlap.
  void alltoallv(const void* send, const std::vector<std::size_t>& sc, const std::vector<std::size_t>& sd,
                 void* recv, const std::vector<std::size_t>& rc, const std::vector<std::size_t>& rd,
                 std::size_t elem_bytes);
  /// A contiguous piece of device memory that goes to (Send) or comes from (Recv) `rank`.
  struct Send {
    int rank;
    const void* data;
    std::size_t bytes;
  };
  struct Recv {
    int rank;
    void* data;
    std::size_t bytes;
  };
  /// Whether exchange_on() runs in stream order, without waiting for the GPU (the NCCL
  /// transport, or peer copies).
  bool stream_ordered() const { return transport_ == Transport::nccl || comm_.size() == 1 || peers_on_; }

  /// Collective: makes the device allocation [base, base + bytes) (cudaMalloc's, from its
  /// start) a window that the other ranks' peer copies write into, where peer copies are on.
  /// Share every window before planning. Returns peer_copies().
  bool share(void* base, std::size_t bytes);
  /// Whether pieces received into windows come by peer copies (see the header comment).
  bool peer_copies() const { return peers_on_; }
  /// "nccl", "nccl, peer copies", "mpi-staged, peer copies", …
  std::string describe() const;
  /// Point-to-point pieces, all at once: rank r's sends to this rank match this rank's receives
  /// from r in the order both lists give them (sizes equal), so that buffers are sent from and
  /// received into where they lie, with no packing. Pieces to this rank itself are device
  /// copies, matched in the same way. Planned once for repeated calls (collective, the same
  /// order on every rank): with peer copies and every piece from another rank received into a
  /// window, `to` says where each send lands in its rank's window; else the transport moves them.
  struct Plan {
    std::vector<Send> sends;
    std::vector<Recv> recvs;
    std::vector<void*> to;
  };
  Plan plan(const std::vector<Send>& sends, const std::vector<Recv>& recvs);
  /// The plan's pieces moved; returns when the received data are in place.
  void exchange(const Plan& p);
  /// exchange() enqueued on `stream` (stream_ordered() only): returns at once, and the received
  /// data are in place once the stream's work so far is done; the send buffers must not change
  /// before then. Lets a caller overlap an exchange with work on another stream.
  void exchange_on(cudaStream_t stream, const Plan& p);
  /// Every rank receives each rank's count elements one after the other in rank order
  /// (counts: every rank's, as Comm::counts()).
  void allgatherv(const void* send, std::size_t count, void* recv, const std::vector<std::size_t>& counts,
                  std::size_t elem_bytes);
  /// Element-wise sum of n doubles over the ranks, in place.
  void sum(double* data, std::size_t n);

  struct Nccl;  // the run's NCCL communicator (device_comm.cpp)

 private:
  void* host(int which, std::size_t bytes);  // pinned staging buffer 0 or 1, grown as needed
  void self_copies(cudaStream_t stream, const std::vector<Send>& sends, const std::vector<Recv>& recvs);
  void nccl_group(cudaStream_t stream, const std::vector<Send>& sends, const std::vector<Recv>& recvs);
  void settle(bool wait) const;  // books the stream time of finished exchange_on() calls
  void exchange(const std::vector<Send>& sends, const std::vector<Recv>& recvs);  // by the transport
  void enqueue(cudaStream_t stream, const Plan& p);  // the pieces' moves on `stream`
  void put(cudaStream_t stream, const Plan& p);      // … by peer copies
  bool open_peers();                                 // share()'s first call: the events, or off
  void close_peers();
  Comm comm_;
  cudaStream_t stream_;
  Transport transport_;
  std::shared_ptr<Nccl> nccl_;
  void* host_[2] = {nullptr, nullptr};
  std::size_t host_bytes_[2] = {0, 0};
  mutable ExchangeStats stats_;
  struct Timed {
    cudaEvent_t begin, end;
  };
  mutable std::vector<Timed> pending_, spare_;  // exchange_on()'s events: not yet booked, reusable
  // Peer copies: every rank's windows as opened here (at[r]; at[me] the own), this rank's
  // exported events (its windows free; its pieces sent) and the other ranks' (opened), the copy
  // stream with the events that fork it from and join it to the caller's.
  struct Window {
    char* base;
    std::size_t bytes;
    std::vector<char*> at;
  };
  bool peers_tried_ = false, peers_on_ = false;
  std::vector<Window> windows_;
  cudaEvent_t free_ = nullptr, sent_ = nullptr, fork_ = nullptr, join_ = nullptr;
  std::vector<cudaEvent_t> peer_free_, peer_sent_;
  cudaStream_t lane_ = nullptr;
};

}  // namespace vh
