// The tree's key sort on the GPU (CUB's stable LSD radix sort): the counterpart of the CPU
// radix sort in tree.cpp, with the same result (ties keep their input order), so a tree built
// either way is the same tree.  CUDA builds only (VH_FMM_HAVE_CUDA); fmm::build_tree calls it
// with TreeBuild::gpu_sort.
#pragma once

#include <cstdint>
#include <vector>

namespace vh::fmm {

/// perm[i] = input index of the i-th key in stable sorted order, sorted[i] = key[perm[i]].
/// Only bits [begin_bit, end_bit) are compared: the keys must agree on all others.
void sort_keys_gpu(const std::vector<std::uint64_t>& key, int begin_bit, int end_bit, std::vector<int>& perm,
                   std::vector<std::uint64_t>& sorted);

/// The same on device arrays of n entries: (key_in, 0, 1, ..., n - 1) sorted stably by key into
/// (key_out, perm_out).  Synchronous.
void sort_keys_on_device(const std::uint64_t* key_in, std::uint64_t* key_out, int* perm_out, int n, int begin_bit,
                         int end_bit);

}  // namespace vh::fmm
