// The entries of a device sequence whose flags are set, in order, into a device array: CUB's
// DeviceSelect::Flagged with its scratch, and the count brought to the host. CUDA sources only.
#pragma once

#include <cub/device/device_select.cuh>

#include <algorithm>
#include <cstddef>

#include "base/cuda_check.h"
#include "base/device_buffer.h"

namespace vh {

/// The n entries of `in` whose flag is nonzero, in order, into out[0 ..), which has room for n
/// (a whole array or a part of one); returns their count (one small download). `count` and
/// `temp`: the device count and CUB's scratch, kept by the caller across calls.
template <class It, class Flag, class T>
int select_flagged(It in, const Flag* flags, int n, T* out, DeviceArray<int>& count, DeviceBytes& temp) {
  count.reserve(1);
  std::size_t bytes = 0;
  VH_CHECK_CUDA(cub::DeviceSelect::Flagged(nullptr, bytes, in, flags, out, count.data(), n));
  temp.reserve(std::max<std::size_t>(bytes, 1));
  VH_CHECK_CUDA(cub::DeviceSelect::Flagged(temp.data(), bytes, in, flags, out, count.data(), n));
  int k = 0;
  VH_CHECK_CUDA(cudaMemcpy(&k, count.data(), sizeof(int), cudaMemcpyDeviceToHost));
  return k;
}

/// The same into `out`, grown to n entries as needed.
template <class It, class Flag, class T>
int select_flagged(It in, const Flag* flags, int n, DeviceArray<T>& out, DeviceArray<int>& count, DeviceBytes& temp) {
  out.reserve(static_cast<std::size_t>(std::max(n, 1)));
  return select_flagged(in, flags, n, out.data(), count, temp);
}

}  // namespace vh
