// Collectives of device buffers between the ranks of a Comm (CUDA builds): what the GPU
// solvers exchange. The host side of every call is plain C++ (no CUDA syntax); buffers are
// device pointers, and the work of the caller on `stream` that writes them must be enqueued
// before the call, which returns when the received data are in place.
//
// Transports (transport()):
//   mpi-staged  device → pinned host → MPI → pinned host → device: any MPI library (Debian
//               12's Open MPI is not CUDA-aware), at the speed of the host copies.
//   mpi-cuda    device pointers straight to a CUDA-aware MPI (asked at run time:
//               Comm::cuda_aware(), VH_MPI_CUDA_AWARE=0|1 overrides).
// One rank needs no MPI: alltoallv is a device copy.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "base/comm.h"

namespace vh {

class DeviceComm {
 public:
  enum class Transport { mpi_staged, mpi_cuda };

  /// The transport for `comm`: mpi-cuda when the MPI library is CUDA-aware, else mpi-staged.
  DeviceComm(const Comm& comm, cudaStream_t stream);
  ~DeviceComm();
  DeviceComm(const DeviceComm&) = delete;
  DeviceComm& operator=(const DeviceComm&) = delete;

  const Comm& comm() const { return comm_; }
  Transport transport() const { return transport_; }
  /// "mpi-staged" or "mpi-cuda" (banner, run.h5 /meta).
  static const char* name(Transport t);
  /// The costs so far of the calls below (bytes to other ranks, wall seconds, calls).
  const ExchangeStats& stats() const { return stats_; }

  /// All-to-all of elements of `elem_bytes` bytes: to rank r goes send[sd[r] …) of sc[r]
  /// elements, from rank r comes recv[rd[r] …) of rc[r] (counts and displacements in
  /// elements, one per rank, as Comm::alltoallv). send and recv must not overlap.
  void alltoallv(const void* send, const std::vector<std::size_t>& sc, const std::vector<std::size_t>& sd,
                 void* recv, const std::vector<std::size_t>& rc, const std::vector<std::size_t>& rd,
                 std::size_t elem_bytes);
  /// Every rank receives each rank's count elements one after the other in rank order
  /// (counts: every rank's, as Comm::counts()).
  void allgatherv(const void* send, std::size_t count, void* recv, const std::vector<std::size_t>& counts,
                  std::size_t elem_bytes);
  /// Element-wise sum of n doubles over the ranks, in place.
  void sum(double* data, std::size_t n);

 private:
  void* host(int which, std::size_t bytes);  // pinned staging buffer 0 or 1, grown as needed
  Comm comm_;
  cudaStream_t stream_;
  Transport transport_;
  void* host_[2] = {nullptr, nullptr};
  std::size_t host_bytes_[2] = {0, 0};
  ExchangeStats stats_;
};

}  // namespace vh
