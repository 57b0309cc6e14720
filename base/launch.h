// Launch sizes of CUDA kernels: how many blocks cover n items. One spelling for every module.
#pragma once

#include <algorithm>

namespace vh {

/// Blocks of `threads` threads that cover n items, one thread each; at least one block (the
/// kernels test i < n).
inline unsigned blocks_for(long long n, int threads) {
  return static_cast<unsigned>(std::max<long long>(1, (n + threads - 1) / threads));
}

/// The same for a grid-stride loop: at most `cap` blocks (a fixed count where reductions must add
/// in one order whatever n, vortex/solver_gpu.cu).
inline unsigned blocks_for(long long n, int threads, long long cap) {
  return static_cast<unsigned>(std::min<long long>(blocks_for(n, threads), cap));
}

}  // namespace vh
