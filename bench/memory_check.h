// The memory check of the benchmarks that allocate big arrays (spectral_bench, vortex_step_bench,
// blobs_bench, fmm_bench), made before a case allocates anything: its estimate against what this
// machine offers (src/app/memory_estimate.h: MemAvailable, the cgroup, ulimit -v and -d, the GPU's
// free memory). A case too large is refused with one line naming the largest size that fits
// (vh::InputError; the benches exit 2) instead of ending in "CUDA: out of memory" or std::bad_alloc
// after minutes of work.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "app/memory_estimate.h"
#include "base/comm.h"
#include "base/error.h"

namespace vh::bench {

/// Throws vh::InputError "`what` needs X of host memory (…), Y available (…); allowed here:
/// `option` <= S" when estimate(size) does not fit on back end b, S the first of `smaller` (in
/// descending order) whose estimate fits (a size whose estimate throws vh::InputError is not a
/// valid one and is skipped). On R ranks of `comm` every rank checks its own memory, its part of
/// its node's (app::shared_by) and of its GPU's, which `gpu_ranks` share (select_gpus), and all
/// throw the first short rank's line.
inline void require_memory(const std::string& what, const std::string& option, int size, const std::vector<int>& smaller,
                           const std::function<app::MemoryEstimate(int)>& estimate, Backend b,
                           const Comm& comm = Comm(), int gpu_ranks = 1) {
  const app::MemoryAvailable host =
      app::shared_by(app::host_memory_available(), comm.local_size(), "ranks of this node");
  const app::MemoryAvailable device =
      b == Backend::gpu ? app::shared_by(app::device_memory_available(), gpu_ranks, "ranks on this GPU")
                        : app::MemoryAvailable{};
  auto shortfall = [&](int s) { return app::memory_shortfall(estimate(s), b, host, device); };
  std::string why = shortfall(size);
  if (!why.empty()) {
    std::string fits = "no " + option;
    for (int s : smaller) {
      try {
        if (shortfall(s).empty()) {
          fits = option + " <= " + std::to_string(s);
          break;
        }
      } catch (const InputError&) {
      }
    }
    why = what + " " + why + "; allowed here: " + fits + ", or a machine with more memory";
  }
  why = comm.first_error(why);
  if (!why.empty()) throw InputError(why);
}

/// The multiples of `step` below `n`, descending, down to `least`: require_memory's `smaller`.
inline std::vector<int> sizes_below(int n, int step, int least) {
  std::vector<int> v;
  for (int s = (n - 1) / step * step; s >= least; s -= step) v.push_back(s);
  return v;
}

}  // namespace vh::bench
