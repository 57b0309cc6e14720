#include "base/cuda_check.h"
#include "fmm/sort_gpu.h"

#include <cub/device/device_radix_sort.cuh>

#include <stdexcept>

#include "base/device_buffer.h"

namespace vh::fmm {

namespace {

__global__ void iota_kernel(int n, int* v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = i;
}

}  // namespace

void sort_keys_on_device(const std::uint64_t* key_in, std::uint64_t* key_out, int* perm_out, int n, int begin_bit,
                         int end_bit) {
  if (n == 0) return;
  DeviceArray<int> idx(n);
  DeviceBytes tmp;
  iota_kernel<<<(n + 255) / 256, 256>>>(n, idx.data());
  VH_CHECK_LAUNCH();
  std::size_t tmp_bytes = 0;
  VH_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, tmp_bytes, key_in, key_out, idx.data(), perm_out, n,
                                                begin_bit, end_bit));
  tmp.resize(tmp_bytes);
  VH_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(tmp.data(), tmp_bytes, key_in, key_out, idx.data(), perm_out, n,
                                                begin_bit, end_bit));
  VH_CHECK_CUDA(cudaDeviceSynchronize());
}

void sort_keys_gpu(const std::vector<std::uint64_t>& key, int begin_bit, int end_bit, std::vector<int>& perm,
                   std::vector<std::uint64_t>& sorted) {
  const std::size_t n = key.size();
  if (n > static_cast<std::size_t>(1) << 31) throw std::invalid_argument("sort_keys_gpu: more than 2^31 keys");
  perm.resize(n);
  sorted.resize(n);
  if (n == 0) return;
  DeviceArray<std::uint64_t> k_in(key), k_out(n);
  DeviceArray<int> v_out(n);
  sort_keys_on_device(k_in.data(), k_out.data(), v_out.data(), static_cast<int>(n), begin_bit, end_bit);
  v_out.download(perm.data(), n);
  k_out.download(sorted.data(), n);
}

}  // namespace vh::fmm
