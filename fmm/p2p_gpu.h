// Near-field (P2P) sums of the regularised Biot-Savart kernel on the GPU, over the P2P lists of
// the CPU traversal (fmm/traverse.h) or of the GPU one (fmm/traverse_gpu.h), and the plain
// O(N^2) GPU direct sum.  Host API: no CUDA types; the kernels are in p2p_gpu.cu (built only
// with VH_ENABLE_CUDA, which defines VH_FMM_HAVE_CUDA).  The per-pair math is fmm/p2p_kernel.h,
// the same code as the CPU p2p().
//
// Kernel layout ("multiple walks", Hamada et al. SC09): the target leaves are cut into tasks of
// at most 32 targets (a leaf of n targets gives floor(n/32) tasks of 32 and one of the rest);
// one warp takes one task and walks that leaf's whole P2P list.  Source particles are staged
// through shared memory in tiles of 32 (one per lane, 16-byte loads).  A task of n <= 16
// targets splits the lanes into 32/n' groups (n' = n rounded up to a power of two) that take
// every (32/n')-th source of each tile and are summed by warp shuffles at the end, so small
// leaves do not idle lanes.  Several tasks (warps) share a thread block.
//
// Precision: positions are kept in double on the device and each tile is shifted, in double,
// into coordinates relative to the task's first target before it is rounded to the working
// type, so in single precision |r| carries an error ~1e-7 |r| rather than ~1e-7 x the box size
// (which would be 1e-5 relative to the spacing at 256^3 lattice particles).  Strengths, core
// radii, the kernel and the sums are in the working type (float by default, or double).
//
// Measured on an NVIDIA H200 (bench/RESULTS.md, 2026-11-22): 363 G pair-interactions/s (u and
// grad u) in fp32 on the FMM's lists at 2^24 lattice particles, 249 in fp32_ieee, 87 in fp64;
// relative L2 difference from the CPU P2P 2e-6 (fp32), 3e-15 (fp64).
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "fmm/traverse.h"
#include "fmm/tree.h"
#include "fmm/types.h"

namespace vh::fmm {

class SortedSourcesGpu;
struct GpuLists;

/// Number of CUDA devices visible (0 when there is none or the driver cannot be used).
int gpu_count();
/// Name of the current CUDA device as the driver reports it (nvidia-smi's name), "" if none.
std::string gpu_name();

/// Working precision of the GPU kernels.  fp32: single precision with the hardware's
/// approximate division, reciprocal square root and exp (about 2 ulp each) and erf from that exp
/// (p2p_kernel.h kernel_gF_shared_exp, 1.5e-7); the default; fp32_ieee: single precision with
/// IEEE division and square root and the accurate expf and erff;
/// fp64: double precision throughout.
enum class GpuPrecision { fp32, fp32_ieee, fp64 };

/// rho^2 beyond which the GPU P2P takes a pair with the singular kernel (g = 1, F = 3, no erf
/// or exp) in precision `prec` for an evaluation of relative tolerance `tolerance`.  In double:
/// far_rho2<double>() (p2p_kernel.h), where 1 - g is below the type's round-off, whatever the
/// tolerance.  In single precision, which the tolerance chose (fmm.precision = auto): also where
/// the pair's u and grad u differ from the singular kernel's by less than tolerance / 10
/// relative (1 - g < tolerance / 10 and 1 - F/3 = 1 - g + (2/3) rho^2 ce < tolerance / 10;
/// F's is the larger), a tenth of the error budget, as the far field's cut-off (the acceptance
/// test's rcut, fmm/traverse.h) leaves the regularisation out where 1 - g < tolerance; never
/// beyond far_rho2<float>().  tolerance <= 0: far_rho2 of the precision.
double p2p_singular_rho2(GpuPrecision prec, double tolerance);

/// P2P lists flattened for the GPU.  Particle indices refer to the sorted orders of the target
/// and source trees (Tree::x order); the sums go to sorted target i.
struct P2PLists {
  std::vector<int> leaf_begin, leaf_end;  ///< target leaves: particle ranges [begin, end)
  std::vector<int> offset;                ///< CSR: entries of leaf l are [offset[l], offset[l+1])
  std::vector<int> src_begin, src_end;    ///< per entry: source particle range [begin, end)
  std::vector<int> src_shift;             ///< per entry: index into `shifts`
  std::vector<Vec3> shifts;               ///< periodic shift s: the source is taken at x_q + s
  /// Targets are the sources (same sorted order): the pair with equal index and zero shift
  /// is left out, as in fmm::p2p with skip_same.
  bool self = false;
  /// Particle pairs summed per evaluation (sum over leaves of n_targets x n_sources; counts the
  /// skipped self pairs, as Timings::n_p2p_pairs does).
  long long pairs() const;
};

/// Flattens the P2P lists of every target leaf of `tgt` (lists.p2p, shift indices into shifts).
/// With self, tgt and src are the same tree.  With merge, consecutive entries of a leaf with
/// the same shift and adjacent source ranges (sibling leaves in Morton order) become one entry:
/// the same pairs, fewer partly filled 32-source tiles on the GPU.
P2PLists flatten_p2p_lists(const Tree& tgt, const Tree& src, const Lists& lists, const std::vector<Vec3>& shifts,
                           bool self, bool merge = true);

/// P2PGpu's device arrays on the host (what it uploads; GpuLists::p2p_to_host for the GPU-built
/// ones).  Task: (first target, number of targets <= 32, first entry, end entry), the target
/// leaves cut into chunks of 32 in leaf order; entry: (source begin, source end, shift index,
/// 1 when the pair of equal indices is skipped: self lists at a zero shift).
struct P2PArrays {
  std::vector<std::array<int, 4>> tasks;
  std::vector<std::array<int, 4>> entries;
};
/// The arrays P2PGpu builds from `lists` (throws std::invalid_argument as P2PGpu does).
P2PArrays p2p_arrays(const P2PLists& lists);

/// Lists of the O(N^2) free-space sum: one leaf of n_targets targets with one entry over all
/// n_sources sources, shift zero.  With self (n_targets == n_sources) the pairs i == i are left out.
P2PLists direct_lists(int n_targets, int n_sources, bool self);

/// Resident GPU P2P: lists uploaded at construction, sources and targets set (and re-set)
/// separately, evaluated as often as needed.  Sorted order throughout.  Errors (CUDA calls,
/// launches, sizes) throw std::runtime_error with file:line; not copyable; one CUDA device
/// (the current one).
class P2PGpu {
 public:
  /// Uploads the lists; `prec` is the working precision of every later run(), `tolerance` the
  /// evaluation's (p2p_singular_rho2; 0: the kernel regularised wherever the type can tell).
  explicit P2PGpu(const P2PLists& lists, GpuPrecision prec = GpuPrecision::fp32, double tolerance = 0);
  /// The same with the lists built on the GPU (build_lists_gpu): takes over lists' P2P device
  /// arrays (no copy; lists.dev keeps its M2L part); self and shifts from `lists`.
  explicit P2PGpu(GpuLists& lists, GpuPrecision prec = GpuPrecision::fp32, double tolerance = 0);
  ~P2PGpu();
  P2PGpu(const P2PGpu&) = delete;
  P2PGpu& operator=(const P2PGpu&) = delete;

  /// Uploads source positions, strengths and core radii (N entries each, sorted source order).
  void set_sources(const std::vector<Vec3>& x, const std::vector<Vec3>& alpha, const std::vector<double>& sigma);
  /// Reads the sources where a SortedSourcesGpu keeps them (no upload); `s` must outlive the
  /// evaluations.
  void set_sources(const SortedSourcesGpu& s);
  /// Uploads target positions (sorted target order).  With lists.self, set_sources sets them too.
  void set_targets(const std::vector<Vec3>& x);
  /// Evaluates u and grad at every target (overwrites the device results); blocks until done
  /// and returns the kernel time in milliseconds (CUDA events around the launch).
  double run();
  /// run() in two halves, so that the host can work while the kernel runs (the FMM does its
  /// far field meanwhile): launch() returns at once, wait() blocks until the kernel is done and
  /// returns its time in ms.  run() = launch(); wait().
  void launch();
  double wait();
  /// Copies the results of the last run() to the host (u, grad resized to the number of targets).
  void get(std::vector<Vec3>& u, std::vector<Mat3>& grad) const;

  int n_targets() const;
  long long pairs() const;  ///< pairs per run(), as P2PLists::pairs()
  /// Device address of the results of the last run (FarGpu adds them at L2P): 12 values per
  /// target (u, then grad row-major), double when the precision is fp64, float otherwise.
  const void* device_result() const;
  bool device_result_is_double() const;
  /// Device addresses of the sorted positions as set_sources / set_targets uploaded them:
  /// double4 (x, y, z, sigma) per source and (x, y, z, -) per target (the sources' with self).
  const void* device_sources() const;
  const void* device_targets() const;
  /// Makes work issued later on the default stream wait for the last launch() (the kernel runs
  /// on a stream of its own, so uploads for other work overlap it).
  void make_default_stream_wait() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// One-shot GPU P2P: uploads, evaluates, downloads.  xt is ignored when lists.self.
void p2p_gpu(const P2PLists& lists, const std::vector<Vec3>& xt, const std::vector<Vec3>& xs,
             const std::vector<Vec3>& alpha, const std::vector<double>& sigma, std::vector<Vec3>& u,
             std::vector<Mat3>& grad, GpuPrecision prec = GpuPrecision::fp32);

/// O(N^2) free-space direct sum on the GPU at the sources themselves (pairs i == i left out),
/// the GPU counterpart of fmm::direct_sum(..., self = true).  Returns the kernel time in ms.
double direct_sum_gpu(const std::vector<Vec3>& x, const std::vector<Vec3>& alpha, const std::vector<double>& sigma,
                      std::vector<Vec3>& u, std::vector<Mat3>& grad, GpuPrecision prec = GpuPrecision::fp32);

}  // namespace vh::fmm
