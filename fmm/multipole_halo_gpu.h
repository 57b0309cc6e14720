// The multipoles that the ranks of evaluate_own exchange when the uniform levels take windows
// (issue 25; fmm/uniform_gpu.h, fmm/evaluator.h share_upward).  Each rank forms the multipoles
// of its own sources only; before the M2L the ranks summed all of them by one all-reduce
// (n_cells x 3 ncoef(p) complex values, 1.5 GB at 256^3 and p = 13, whatever R).  Where a
// rank's FFTs take windows, it reads of a windowed level only the cells of the planes its
// window's sources lie in, so:
//   - the levels below the first one that every rank takes by windows (0, 1 and the coarse
//     levels the windows cover whole, a few hundred cells): one all-reduce, as before;
//   - the other levels: each rank sends every other rank the multipoles of its cells that hold
//     some of its sources and lie in that rank's source planes (a rank's slab and the stencil's
//     reach: its neighbours), with the cells' indices, and adds what it receives to its own, in
//     the senders' rank order (the same sums on every run).
// The cells of the other planes keep this rank's part only; no M2L of this rank reads them (and
// where M keeps only the windows' cells, fmm/expansion_rows.h, they have no place at all).
// CUDA sources only.
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "base/device_buffer.h"
#include "base/device_comm.h"
#include "fmm/expansion_rows.h"
#include "fmm/far_gpu_device.h"

namespace vh::fmm {

class MultipoleHalo {
 public:
  /// Collective over comm's ranks.  cells: the device cells of a complete tree whose levels
  /// 0 .. L are one contiguous range each (fmm/tree_gpu.h), cube [lo_z, lo_z + side0) in z;
  /// own: the exclusive prefix counts of this rank's sources in sorted order (n + 1 entries);
  /// planes: this rank's source planes of each level 0 .. L (L + 1 entries; levels it takes
  /// whole: all planes); coefficients: the complex values of a cell's multipole.
  void plan(DeviceComm& comm, const GCell* cells, int L, double lo_z, double side0, const int* own,
            const std::vector<PlaneWindow>& planes, int coefficients);
  /// Whether the last plan() exchanges less than every cell (some level in windows on every rank).
  bool active() const { return active_; }
  /// No plan: the caller sums every multipole.
  void clear() { active_ = false; }
  /// The first level exchanged by cells (the last plan()); the levels below are all-reduced.
  int from_level() const { return from_; }
  /// After plan(): M's rows are `rows` (cell -> row, FarPlan::rows; the levels below
  /// from_level() at their cells' index), no longer the cells' indices.  Throws
  /// std::logic_error where a cell sent or received has no row.
  void to_rows(const int* rows);
  /// Sums the ranks' parts of M (device, cells x coefficients double2) where this rank needs
  /// them (the header's two steps); stream: the one M was written on (packing and adding run on
  /// it; returns with the sums issued on it).
  void exchange(double2* M, cudaStream_t stream);
  /// Cells of the all-reduce, and the cells this rank sends and receives (last plan()).
  long long reduced_cells() const { return prefix_; }
  long long sent_cells() const { return static_cast<long long>(n_send_); }
  long long received_cells() const { return static_cast<long long>(n_recv_); }

 private:
  DeviceComm* comm_ = nullptr;
  bool active_ = false;
  int coefficients_ = 0;
  long long prefix_ = 0;  // cells of the all-reduce: levels 0 .. first windowed - 1
  int from_ = 0;          // that first windowed level
  std::size_t n_send_ = 0, n_recv_ = 0;
  std::vector<std::size_t> sc_, sd_, rc_, rd_;
  DeviceArray<int> send_ids_, recv_ids_, flags_, picked_, windows_, n_selected_;
  DeviceArray<double2> send_, recv_;
  DeviceBytes temp_;
};

}  // namespace vh::fmm
