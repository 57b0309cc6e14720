// The device side of the GPU traversal (fmm/traverse_gpu.h), CUDA sources only: the arrays of a
// GpuLists, for the sources that build them (traverse_gpu.cu) and take them over (far_gpu.cu,
// p2p_gpu.cu, evaluator.cu); the cell record the traversal reads; the traversal over trees
// already on the device (build_lists_device: GpuEvaluator's trees, tree_gpu.h); and the small
// tools of the device builds (tree_gpu.cu, traverse_gpu.cu, evaluator.cu).
#pragma once

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "base/device_buffer.h"
#include "fmm/traverse.h"
#include "fmm/traverse_gpu.h"

namespace vh::fmm {

struct GpuListsDevice {
  // M2L, FarGpu's layout (M2LArrays).
  DeviceArray<int> m2l_targets, m2l_goffset, m2l_groups;
  DeviceArray<int2> m2l_entries;
  // P2P, P2PGpu's layout (P2PArrays).
  DeviceArray<int4> p2p_tasks, p2p_entries;
  bool m2l_taken = false, p2p_taken = false;
};

/// What the traversal reads of a cell (fmm::Cell).
struct TCell {
  double c[3];          // centre
  double r;             // radius
  double lo[3], hi[3];  // tight box
  double smax;          // sigma_max
  int begin, end, child, nchild;
};

/// Two trees on the device as the traversal reads them (the same with self).
struct ListTrees {
  const TCell* T = nullptr;          ///< target cells, tree order
  const TCell* S = nullptr;          ///< source cells
  int nct = 0, ncs = 0;              ///< cell counts
  int nt = 0, ns = 0;                ///< point counts
  const int* rank = nullptr;         ///< source cell -> depth-first pre-order rank (children in index order)
  const int* rank_to_cell = nullptr; ///< its inverse
  const int* leaves = nullptr;       ///< target leaves holding points, in cell order
  const int* leaf_of = nullptr;      ///< target cell -> its index in `leaves`, or -1
  int nl = 0;
  const double* shifts = nullptr;    ///< 3 per shift, shifts[0] = 0
};

/// build_lists_gpu on trees already on the device: the lists into out (out.dev created when
/// null, its buffers grown as needed and reused); `shifts` as on the device.  Synchronous.
void build_lists_device(const ListTrees& in, bool self, const std::vector<Vec3>& shifts, const Acceptance& mac,
                        bool merge_p2p, GpuLists& out);

/// CUB's temporary storage, grown as needed and reused.
struct CubScratch {
  DeviceBytes buf;
  /// At least `bytes` (never null: a null pointer asks CUB for the size only).
  void* get(std::size_t bytes) {
    buf.reserve(std::max<std::size_t>(bytes, 16));
    return buf.data();
  }
};

/// Grows b to at least `need` elements, keeping its first `used`; doubles to amortise.
template <class T>
void grow_keep(DeviceArray<T>& b, std::size_t used, std::size_t need) {
  if (need <= b.size()) return;
  DeviceArray<T> nb(std::max(need, 2 * b.size()));
  if (used) VH_CHECK_CUDA(cudaMemcpy(nb.data(), b.data(), used * sizeof(T), cudaMemcpyDeviceToDevice));
  b.swap(nb);
}

/// The value at device address d.
template <class T>
T download_one(const T* d) {
  T v;
  VH_CHECK_CUDA(cudaMemcpy(&v, d, sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

/// An order-preserving integer image of a double (a < b <=> ordered(a) < ordered(b), -0 < +0),
/// so that exact minima and maxima are integer atomics whatever the order; from_ordered
/// inverts it.
__device__ inline unsigned long long ordered(double v) {
  const unsigned long long u = static_cast<unsigned long long>(__double_as_longlong(v));
  return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
}
__host__ __device__ inline double from_ordered(unsigned long long k) {
  const unsigned long long u = (k >> 63) ? (k & 0x7fffffffffffffffull) : ~k;
#ifdef __CUDA_ARCH__
  return __longlong_as_double(static_cast<long long>(u));
#else
  double v;
  std::memcpy(&v, &u, sizeof v);
  return v;
#endif
}

}  // namespace vh::fmm
