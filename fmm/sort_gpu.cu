#include "base/cuda_check.h"
#include "fmm/sort_gpu.h"

#include <cub/device/device_radix_sort.cuh>

#include <stdexcept>

#include "fmm/cuda_util.h"

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
  DevBuf idx, tmp;
  idx.resize(static_cast<std::size_t>(n) * sizeof(int));
  iota_kernel<<<(n + 255) / 256, 256>>>(n, idx.as<int>());
  VH_CHECK_CUDA(cudaGetLastError());
  std::size_t tmp_bytes = 0;
  VH_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, tmp_bytes, key_in, key_out, idx.as<int>(), perm_out, n,
                                              begin_bit, end_bit));
  tmp.resize(tmp_bytes);
  VH_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(tmp.p, tmp_bytes, key_in, key_out, idx.as<int>(), perm_out, n,
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
  DevBuf k_in, k_out, v_out;
  k_in.upload(key);
  k_out.resize(n * sizeof(std::uint64_t));
  v_out.resize(n * sizeof(int));
  sort_keys_on_device(k_in.as<std::uint64_t>(), k_out.as<std::uint64_t>(), v_out.as<int>(), static_cast<int>(n),
                      begin_bit, end_bit);
  VH_CHECK_CUDA(cudaMemcpy(perm.data(), v_out.p, n * sizeof(int), cudaMemcpyDeviceToHost));
  VH_CHECK_CUDA(cudaMemcpy(sorted.data(), k_out.p, n * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
}

}  // namespace vh::fmm
