// Memory a run needs, what the machine offers, and the check between them, made before anything
// is written (`vortexhit run`, and `vortexhit run --dry-run`, which prints the estimate).
//
// The estimate is itemised and counts the arrays each part of the program allocates at the
// peak of a run, from N (domain.n), the solvers and their settings:
//   R = N³ reals (8 B), C = N²(N/2+1) complex coefficients (16 B), P = M²(M/2+1) complex values
//   of the transform grid (M = 3N/2 with the 3/2 rule, else N);
//   spectral solver:  6C state (u₀ and the RK4 accumulator; 9C with explicit viscosity) and 6P
//                     transform buffers (spectral/cpu_solver.cpp, gpu_solver.cu);
//   run driver:       the initial field, the host copy of a solver's velocity, one FFT plan's
//                     arrays and the statistics' work arrays: 8C + 2R (app/run.cpp);
//   field output:     velocity, vorticity and Q of each solver, 7R each, plus 2R + C of work;
//   vortex solver:    per particle (particles, AB2 history, u and ∇u, the grid velocity, the
//                     FMM's tree) and per FMM cell (interaction lists, expansions of
//                     (p + 1)(p + 2)/2 coefficients), the cells following the lattice's octree;
//                     calibrated against the peak RSS of CPU runs (memory_estimate.cpp).
// The device side (back end gpu) counts the spectral solver's device arrays, cuFFT's work area
// taken as large as the largest batch of transforms (an upper bound: cuFFT reports its size
// only once planned), the fused transforms' buffers, the GPU statistics' work arrays, and the
// FMM's device buffers read from fmm/*_gpu.cu, per particle and per cell (not yet measured:
// `scripts/device-check.sh memory` prints the GPU memory in use against the estimate).
// tests/app/test_memory_estimate.cpp checks the counts against the arrays' sizes and the host
// total against the peak RSS of real runs (the log's "memory" line).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "app/config.h"
#include "core/device.h"
#include "fmm/fmm.h"

namespace vh::app {

/// One part of an estimate.
struct MemoryItem {
  std::string what;
  double bytes = 0;
};

struct MemoryEstimate {
  std::vector<MemoryItem> host;    ///< host memory at the peak of the run, by part
  std::vector<MemoryItem> device;  ///< GPU memory (empty on the CPU back end)
  double fields_file = 0;          ///< bytes of one fields_<i>.h5 (0 when no solver writes fields)
  double checkpoint = 0;           ///< bytes of one checkpoint.h5 (0 for solver = initial)
  double host_bytes() const;
  double device_bytes() const;
};

/// The estimate for configuration c on back end b. `fused` says whether the GPU spectral solver
/// will run the fused transforms (spectral_fused_on_gpu(); ignored on the CPU).
MemoryEstimate estimate_memory(const RunConfig& c, Backend b, bool fused);

/// Whether the GPU spectral solver of c takes the fused transforms' path (it decides the same
/// way: spectral/gpu_solver.cu), which needs its own buffers. False on the CPU back end.
bool spectral_fused_on_gpu(const RunConfig& c, Backend b);

/// Memory the run may use: the smallest of the limits found, and all of them for the message.
struct MemoryAvailable {
  double bytes = std::numeric_limits<double>::infinity();
  std::string limited_by;               ///< the name of the smallest limit ("" when none was found)
  std::vector<MemoryItem> limits;       ///< every limit found, by name
};

/// Host memory available to this process now: /proc/meminfo MemAvailable, the cgroup's memory
/// limit less its usage (v2 memory.max − memory.current, v1 memory.limit_in_bytes −
/// memory.usage_in_bytes, every level up to the root), and the resource limits ulimit -v
/// (RLIMIT_AS, less the address space already mapped) and ulimit -d (RLIMIT_DATA, less the data
/// already mapped).
MemoryAvailable host_memory_available();

/// Free memory of the current GPU (cudaMemGetInfo); infinite without a GPU.
MemoryAvailable device_memory_available();

/// What one of `ranks` processes that share a machine's memory may count on: a's shared limits
/// divided among them, each then named "… shared by <ranks> <who>"; the others (the per-process
/// ulimit -v and -d) as they are. Host memory: MemAvailable and the cgroup limits, shared by the
/// ranks of a node (Comm::local_size); GPU memory: its free memory, shared by the ranks on one
/// GPU (parallel.share_gpus). Each rank's estimate is rank 0's, the largest, so that R ranks of
/// a node are admitted only where all of them fit. ranks ≤ 1: a unchanged.
MemoryAvailable shared_by(const MemoryAvailable& a, int ranks, const std::string& who);

/// Host and GPU bytes of the periodic FMM (fmm/) over `particles` sources with parameters f, on
/// the GPU with `gpu`: per source and per cell of its octree (leaves of at most f.ncrit, 8/7 cells
/// per leaf), the host side with the vortex solver's own per-particle arrays (they were calibrated
/// together). The vortex solver's share of estimate_memory; fmm_bench's estimate.
struct FmmMemory {
  double host = 0, device = 0;
};
/// `tree`: the particles of the tree whose leaves the sources' cells are (0: `particles`; on R > 1
/// CPU ranks every rank's tree has the cells of the whole set's, fmm/let.h).
FmmMemory fmm_memory(double particles, const fmm::Params& f, bool gpu, double tree = 0);

/// fmm.m2l = fft asks for the M2L of a complete tree's uniform levels by FFTs, whose tables grow
/// eightfold a level (fmm/uniform_gpu.h; level 7's, past 322³ particles at ncrit 128 and p 10, 37.5
/// GiB while built). A GPU run takes them only where its whole estimate with them fits the GPU's
/// memory `device`; otherwise this sets c.vortex.fmm.m2l = "lists" (the estimate then counts no
/// tables) and says why in one phrase; "" where nothing changed. The evaluator's own rule (the
/// tables where they fit its free memory with a quarter and 1 GiB to spare) would take them while
/// the run's later buffers (the blob sums') do not fit beside them, or refuse them after the check
/// had counted them.
std::string fit_fmm_m2l(RunConfig& c, Backend b, bool fused, const MemoryAvailable& device);
/// Why the estimate e (back end b) does not fit: "needs X of host memory (its three largest
/// parts), Y available (the limit that decides)", the GPU's where that is short; "" when it fits.
std::string memory_shortfall(const MemoryEstimate& e, Backend b, const MemoryAvailable& host,
                             const MemoryAvailable& device);

/// Throws vh::InputError with one line (what N needs, what is available, what to change) when
/// the estimate e of configuration c exceeds `host` or, on the GPU back end, `device`.
void check_memory(const RunConfig& c, Backend b, const MemoryEstimate& e, const MemoryAvailable& host,
                  const MemoryAvailable& device);

/// Two lines for the log and --dry-run: "memory  host …" and "memory  GPU …" (needed, by part,
/// and available, with the limit that decides).
std::vector<std::string> memory_lines(const MemoryEstimate& e, Backend b, const MemoryAvailable& host,
                                      const MemoryAvailable& device);

/// What `vortexhit run --dry-run` prints after the deck was checked: the case, the memory lines,
/// the size of one fields file and of a checkpoint, and what the run folder will hold.
std::string dry_run_report(const RunConfig& c, const std::string& device_name, const MemoryEstimate& e, Backend b,
                           const MemoryAvailable& host, const MemoryAvailable& device);

/// "512 B", "1.5 KiB", "12.3 MiB", "4.00 GiB", "1.20 TiB".
std::string format_bytes(double bytes);

/// Peak resident set size of this process so far (getrusage), bytes.
double peak_rss_bytes();

}  // namespace vh::app
