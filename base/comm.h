// The ranks a run is spread over: a thin layer over MPI (Open MPI on Debian 12) that every
// module calls instead of MPI itself, so that one rank needs neither mpirun nor MPI_Init, and
// a build without MPI (-DVH_ENABLE_MPI=OFF) still runs on one rank. Host memory only; device
// buffers travel through base/device_comm.h.
//
// A Comm is a value (it does not own the MPI communicator). Comm() is the one-rank world:
// every collective below is then a local copy or the identity. Comm::world() is
// MPI_COMM_WORLD when MpiSession initialised MPI, else Comm().
//
// Errors of MPI calls throw vh::LibraryError (the communicator returns errors instead of
// aborting). An error seen on one rank only must not leave the others waiting in a
// collective: code that does I/O on rank 0 while the others take part in collectives
// collects the error with RootErrors and rethrows it on every rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/error.h"

namespace vh {

/// What the exchanges of one object cost so far.
struct ExchangeStats {
  double seconds = 0;  ///< wall time in the exchanges (staging copies and transport)
  double bytes = 0;    ///< bytes this rank sent to other ranks (its own part not counted)
  long exchanges = 0;  ///< exchange calls
};

/// Where each of consecutive blocks of `counts` elements starts (the displacements of
/// Comm::alltoallv and the v-collectives): 0, c0, c0 + c1, …
std::vector<std::size_t> displacements(const std::vector<std::size_t>& counts);

class Comm {
 public:
  Comm() = default;  ///< one rank, no MPI
  /// MPI_COMM_WORLD when MPI is initialised (MpiSession), else the one-rank Comm().
  static Comm world();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }
  /// True when backed by an MPI communicator (even of one rank).
  bool mpi() const { return handle_ != 0; }

  double sum(double v) const;
  /// Element-wise sum over the ranks, in place (every rank gets the result).
  void sum(std::vector<double>& v) const;
  double max(double v) const;
  /// True on every rank when `v` is true on any.
  bool any(bool v) const;
  /// Collective: one error line for every rank from each rank's own (`mine`; empty: none).
  /// Empty when no rank has one; else the first such rank's line, on every rank, prefixed
  /// "rank F: " when that rank F is not rank 0 (which prints it).
  std::string first_error(const std::string& mine) const;

  /// All-to-all exchange of elements of `elem_bytes` bytes each: counts and displacements
  /// (one per rank) are in elements. `send` and `recv` may be device pointers when the MPI
  /// library is CUDA-aware (cuda_aware()). One rank: a copy.
  void alltoallv(const void* send, const std::vector<std::size_t>& send_counts,
                 const std::vector<std::size_t>& send_displs, void* recv,
                 const std::vector<std::size_t>& recv_counts, const std::vector<std::size_t>& recv_displs,
                 std::size_t elem_bytes) const;
  /// Rank `root` receives each rank's `count` elements (per-rank counts in `counts`, in
  /// elements) one after the other in rank order into `recv`; the others pass recv = nullptr.
  void gatherv(const void* send, std::size_t count, void* recv, const std::vector<std::size_t>& counts,
               std::size_t elem_bytes) const;
  /// The inverse of gatherv(): rank 0 sends each rank its part of `send`.
  void scatterv(const void* send, const std::vector<std::size_t>& counts, void* recv, std::size_t count,
                std::size_t elem_bytes) const;
  /// Every rank receives every rank's `bytes` bytes one after the other in rank order
  /// (size() · bytes in all). One rank: a copy.
  void allgather(const void* send, std::size_t bytes, void* recv) const;
  /// Every rank receives each rank's `count` elements (per-rank counts in `counts`, in
  /// elements; every rank passes the same counts) one after the other in rank order.
  void allgatherv(const void* send, std::size_t count, void* recv, const std::vector<std::size_t>& counts,
                  std::size_t elem_bytes) const;
  /// Every rank's count (allgather of one std::size_t): the counts allgatherv() wants.
  std::vector<std::size_t> counts(std::size_t count) const;
  /// The counts of an alltoallv() from the senders' side: `send` holds how many elements this
  /// rank sends to each rank; returns how many each rank sends to this one.
  std::vector<std::size_t> alltoall_counts(const std::vector<std::size_t>& send) const;

  void send(const void* data, std::size_t bytes, int dest, int tag) const;
  void recv(void* data, std::size_t bytes, int source, int tag) const;

  /// A pending non-blocking send or receive; wait() or wait_all() completes it. A Request that
  /// is destroyed unfinished is waited for (its buffer must outlive it).
  class Request {
   public:
    Request() = default;
    ~Request();
    Request(Request&& o) noexcept : h_(o.h_) { o.h_ = 0; }
    Request& operator=(Request&& o) noexcept;
    Request(const Request&) = delete;
    Request& operator=(const Request&) = delete;
    bool pending() const { return h_ != 0; }

   private:
    friend class Comm;
    std::intptr_t h_ = 0;  // MPI_Request, 0 when done or none
  };
  /// Starts sending `bytes` bytes to rank `dest` (MPI_Isend); the buffer must stay untouched
  /// until the request completes.
  Request isend(const void* data, std::size_t bytes, int dest, int tag) const;
  /// Starts receiving `bytes` bytes from rank `source` (MPI_Irecv).
  Request irecv(void* data, std::size_t bytes, int source, int tag) const;
  static void wait(Request& r);
  static void wait_all(std::vector<Request>& rs);
  void bcast(void* data, std::size_t bytes, int root = 0) const;
  void bcast(std::string& s, int root = 0) const;
  void barrier() const;

  /// This rank's index among the ranks on its node (for the choice of GPU).
  int local_rank() const { return local_rank_; }
  /// How many ranks of this Comm share this rank's node.
  int local_size() const { return local_size_; }
  /// Whether the MPI library accepts device pointers, asked at run time (Open MPI's
  /// MPIX_Query_cuda_support, MPICH's MPIX_GPU_query_support); the environment variable
  /// VH_MPI_CUDA_AWARE=0|1 overrides. False without MPI.
  static bool cuda_aware();
  /// "Open MPI v4.1.4, ..." (MPI_Get_library_version, first line), or "none".
  static std::string library();

  /// Ends every rank with `status` (MPI_Abort): for errors seen by one rank only.
  [[noreturn]] void abort(int status) const;

 private:
  std::intptr_t handle_ = 0;  // MPI_Comm (an integer or a pointer, depending on the library)
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
};

/// Initialises MPI (MPI_THREAD_FUNNELED: only the main thread calls MPI) when the program
/// was started by an MPI launcher — mpirun/mpiexec or srun set OMPI_COMM_WORLD_SIZE,
/// PMI_SIZE or PMIX_RANK — so that a plain `vortexhit run` needs no MPI at all; finalises
/// on destruction. VH_MPI=1 forces MPI_Init (a singleton), VH_MPI=0 forbids it.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  bool active() const { return active_; }

 private:
  bool active_ = false;
};

/// An error every rank of a Comm throws together (RootErrors::rethrow): the program ends
/// with status 1 on every rank, without MPI_Abort.
class SharedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Errors of work done on rank 0 only (file output) while every rank takes part in the
/// collectives around it: run() catches an exception on rank 0 (the loop of collectives
/// goes on without the I/O), and rethrow() passes it to every rank, keeping its kind
/// (InputError, RunStopped, WriteError; anything else becomes a SharedError) and message.
/// A DeviceFault is not caught: the GPU is lost, so no collective can wait for rank 0; it goes
/// on to the run driver, which ends the job (exit 3, naming the last good checkpoint).
class RootErrors {
 public:
  /// Runs f() on rank 0 unless an error was caught before; no-op elsewhere.
  template <class F>
  void run(const Comm& comm, F&& f) {
    if (!comm.root() || failed()) return;
    try {
      f();
    } catch (const DeviceFault&) {
      throw;
    } catch (...) {
      if (!error_) error_ = std::current_exception();  // the first error is the one to report
    }
  }
  bool failed() const { return bool(error_); }
  /// Collective: throws the caught error on every rank (nothing when there was none).
  void rethrow(const Comm& comm);

 private:
  std::exception_ptr error_;
};

}  // namespace vh
