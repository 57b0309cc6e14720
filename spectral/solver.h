// The Rogallo pseudo-spectral Navier–Stokes solver: the interface both back ends implement.
//
// Spectral Galerkin in primitive variables on [0, 2π)³ (Rogallo 1981, NASA TM 81315):
//   ∂û/∂t = P(k) FFT[u × ω] − ν|k|² û,   P = I − k kᵀ/|k|²,
// the nonlinear term in rotational form evaluated pseudo-spectrally (6 inverse and 3 forward
// real transforms per evaluation), dealiased by 3/2 zero padding (default), 2/3 truncation
// or not at all; classical RK4 with the viscous term through the exact integrating factor
// e^{−ν|k|²Δt} or explicitly (rk4.h, rhs_kernel.h). Coefficients use the normalisation of
// core/grid.h (u = Σ c e^{ik·x}). The Nyquist modes and k = 0 stay zero / constant.
//
// Back ends: CPU (FFTW with threads, double, OpenMP) and GPU (cuFFT, everything in the time
// loop on the device; fp64, or fp32 with `single_precision`).
//
// Ranks: a solver works on the slab (core/slab.h) it is made for. On one rank the state is
// the whole field and the transforms are 3-D (or the GPU's fused passes); on R > 1 ranks
// each holds the kz columns of its kept ky block and one evaluation is the pass structure
// of slab_kernel.h with two all-to-all transposes (every call below is then collective).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/grid.h"
#include "core/options.h"
#include "core/slab.h"

namespace vh::spectral {

/// Dealiasing of the nonlinear term: 3/2-rule zero padding, 2/3-rule truncation, none.
enum class Dealias { three_halves, two_thirds, none };
/// Viscous term: exact integrating factor, or explicit inside RK4.
enum class Viscosity { integrating_factor, explicit_rk4 };
/// GPU transforms: cuFFT 3-D plans, the fused pruned passes of fused.h (cuFFTDx line FFTs),
/// or whichever measured faster for the case (Params::transforms).
enum class Transforms { automatic, cufft, fused };

struct Params {
  Dealias dealias = Dealias::three_halves;
  Viscosity viscosity = Viscosity::integrating_factor;
  bool single_precision = false;  ///< GPU only: fp32 state and transforms
  /// GPU only, experimental: 3-D transforms as a (z, y) C2C pass over the kx columns that
  /// can be non-zero plus an x pass, instead of cuFFT's 3-D plans. Same results; on the
  /// H200 with cuFFT 12 it is 1.4–2.7× slower (bench/RESULTS.md), hence off. Ignored on
  /// the CPU.
  bool pruned_transforms = false;
  /// GPU only: fold the per-point passes into the transforms with cuFFT LTO callbacks
  /// (fft_callbacks.h): same results, less memory traffic. Falls back to separate passes
  /// (one line on stderr) when cuFFT cannot build the callback plans. Ignored on the CPU
  /// and with pruned_transforms. Off by default: on the H200 (fp64, one session, 2c0925f)
  /// it is faster at 512³ 2/3 (82.7 against 86.0 ms/step) but slower at 256³ 3/2, the
  /// SC09 case (50.1 against 47.5 ms; bench/spectral/spectral_bench --callbacks).
  bool fft_callbacks = false;
  /// GPU only: how one evaluation transforms. `fused`: five passes of cuFFTDx line FFTs
  /// over the retained modes only, with the per-mode work folded in (fused.h); falls back to
  /// cuFFT, with one line on stderr, where unsupported (a build without cuFFTDx, a transform
  /// size without kernels such as M = 768, a GPU other than sm_90). `automatic` (default)
  /// takes the fused passes where they were measured faster on the H200 (bench/RESULTS.md,
  /// 2026-11-22 "fused transforms"): everywhere they run — fp64 256³
  /// 3/2 32.8 against 47.4 ms/step with cuFFT, 256³ 2/3 8.2 against 10.7, 512³ 2/3 64.0
  /// against 86.0; fp32 256³ 3/2 17.9 against 25.6 — so automatic means fused wherever
  /// supported with the 3/2 and 2/3 rules, and cuFFT for 512³ 3/2 (M = 768, no cuFFTDx kernel
  /// without a workspace) and without dealiasing (`none`: fused 1.85 and 14.9 ms at 128³ and
  /// 256³ against 1.64 and 11.8 with cuFFT).
  /// pruned_transforms and fft_callbacks apply to the cuFFT path only.
  /// On R > 1 ranks the GPU runs the fused passes per slab where they are supported and
  /// cuFFT line transforms in the same pass structure (slab_kernel.h) otherwise, `cufft`
  /// asking for the latter. On the CPU `fused` takes the slab passes with FFTW line
  /// transforms on one rank too (what R > 1 ranks always run; for tests and benchmarks).
  Transforms transforms = Transforms::automatic;
  /// GPU, R > 1 ranks, fused passes, a stream-ordered exchange (NCCL or peer copies): the
  /// rank's planes in chunks, each chunk's exchanges on their own stream beside the passes of
  /// another (gpu_slab.cuh); off: each exchange waits for all planes. The same results either
  /// way. On by default: 512³ 2/3 on 4 H200s 21.87 against 27.10 ms a step, on 2 39.23 against
  /// 46.64 (bench/RESULTS.md, 2026-11-28 "peer copies").
  bool overlap_exchange = true;
  /// The chunks of planes of the overlapped exchanges: 0 chooses by size (pieces of at least
  /// 32 MB a rank, at most 4 chunks); 1 overlaps nothing. Tests ask for several at small sizes.
  int exchange_chunks = 0;
  double nu = 0;                  ///< kinematic viscosity [length²/time]
};

/// Deck rows spectral.dealias (3/2|2/3|none), spectral.viscosity
/// (integrating-factor|explicit), spectral.precision (double|single).
std::vector<vh::OptionSpec> option_specs();
/// Reads the keys of option_specs(); throws vh::InputError naming the key on a bad value.
Params params_from(const vh::Options& o, double nu);
/// "3/2", "2/3", "none".
const char* to_string(Dealias d);

/// Largest |k_i| the dealiasing `d` keeps on an N grid (rhs_kernel.h retained()): N/2 − 1,
/// or (N − 1)/3 for the 2/3 rule. Orders the ky of a slab (Slab::make).
int kept_kmax(Dealias d, int n);
/// The solver's k_max, the wavenumber of k_max η that the run reports (docs/design.md, "Files a
/// run writes"): the largest |k_i| it keeps, kept_kmax(p.dealias, n) — N/2 − 1 with the 3/2
/// rule or none, (N − 1)/3 with the 2/3 rule. Its truncation is a cube, so shells up to
/// √3 k_max hold modes too, but only those up to k_max hold all of theirs.
double resolved_kmax(const Params& p, int n);

/// Time and volume of the all-to-all exchanges a solver made (R > 1; zero on one rank).
using vh::ExchangeStats;  // base/comm.h

/// Energy and enstrophy of a state: K = Σ_k ½|û|², enstrophy = ½⟨ω·ω⟩ = Σ_k |k|² ½|û|²
/// (full-spectrum sums, core/grid.h mode_weight), so ε = 2ν · enstrophy.
struct Energies {
  double K = 0;
  double enstrophy = 0;
};

class Solver {
 public:
  virtual ~Solver() = default;
  /// Sets the state from this rank's host coefficients (the solver's slab, same N) at time t.
  /// Modes outside the retained set (Nyquist planes; beyond N/3 for the 2/3 rule) are zeroed.
  virtual void set_velocity(const vh::SpectralSlab& u, double t) = 0;
  /// One rank: the same from the whole field (grid.h layout).
  void set_velocity(const vh::SpectralVector& u, double t);
  /// One classical RK4 step of length dt; time() advances by dt.
  virtual void step(double dt) = 0;
  /// max over the N³ grid points and components of |u_i| (for dt = cfl·h/max_velocity).
  /// Costs three inverse N³ transforms; cached until the state changes.
  virtual double max_velocity() = 0;
  /// Copies this rank's current coefficients to the host (resized to the slab if needed).
  virtual void velocity(vh::SpectralSlab& u) = 0;
  /// One rank: the whole field.
  void velocity(vh::SpectralVector& u);
  virtual double time() const = 0;

  /// K and ½⟨ω·ω⟩ of the current state, summed where the state lives (no host copy).
  virtual Energies energies() = 0;
  /// n̂ = P FFT[u × ω] of the current state (dealiased as configured; no viscous term).
  virtual void nonlinear_term(vh::SpectralSlab& out) = 0;
  void nonlinear_term(vh::SpectralVector& out);  ///< one rank
  /// Times the bare FFTs one step performs (4 × (6 inverse + 3 forward) at the transform
  /// size), on this solver's buffers and plans: the floor of step(). Returns seconds for one
  /// step's worth, median of `reps`. Leaves the state unchanged.
  virtual double time_transforms(int reps) = 0;
  /// Waits for outstanding device work (no-op on the CPU); for timing.
  virtual void synchronize() {}
  /// Device pointer to component c's coefficients (the slab's layout, core/slab.h: one rank's
  /// is core/grid.h's; complex double) when the state lives on the GPU in fp64, else nullptr:
  /// lets the diagnostics run where the state is (core/diagnostics.h statistics_device). Valid
  /// until the next step.
  virtual const void* device_velocity(int /*c*/) { return nullptr; }
  /// Transform size per direction (3N/2 with the 3/2 rule, else N).
  virtual int transform_size() const = 0;
  /// True when the evaluation runs through cuFFT LTO callbacks (Params::fft_callbacks and
  /// cuFFT built the callback plans); false on the CPU and on the fallback path.
  virtual bool uses_fft_callbacks() const { return false; }
  /// True when the evaluation runs through the fused cuFFTDx passes (Params::transforms).
  virtual bool uses_fused_transforms() const { return false; }
  /// The all-to-all exchanges so far (R > 1).
  virtual ExchangeStats exchange_stats() const { return {}; }
  /// "3-D FFTW", "slab passes (FFTW lines)", "fused cuFFTDx passes", …: what one evaluation
  /// runs, for banners and benchmark rows.
  virtual std::string path() const = 0;
};

/// Builds a solver for grid g (N even, ≥ 8; N divisible by 4 for the 3/2 rule) on back end
/// b. Backend::gpu needs a CUDA build and a GPU (throws vh::InputError otherwise);
/// single_precision needs Backend::gpu.
std::unique_ptr<Solver> make_solver(const Params& p, const vh::Grid& g, vh::Backend b);
/// The same on this rank's slab (Slab::make(g, kept_kmax(p.dealias, N), comm)); collective.
std::unique_ptr<Solver> make_solver(const Params& p, const vh::Slab& s, vh::Backend b);

}  // namespace vh::spectral
