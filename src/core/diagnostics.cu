// GPU counterparts of energy_spectrum(), gradient_norm2() and statistics() (diagnostics.cpp) on
// device coefficients: the CPU's per-mode and per-point terms (diagnostics_kernel.h), added in an
// order that the launch alone fixes, so that a GPU diagnostic has the same bits on every run
// (the CPU adds in another order: the two agree to round-off). Each of the kBlocks blocks writes
// its sums to its own row of a [block][column] array, and column_sums_kernel adds the rows in
// block order.
// On R ranks (a slab's modes, core/slab.h) each rank adds its own modes and planes the same way
// and the ranks' column sums are summed over the ranks (SlabModes gives a storage index its
// (kx, ky, kz); one rank's loops are the whole grid's, index for index).
//   Shell sums (E_n): a warp takes whole (ky, kz) rows of the half layout, 32 modes at a time.
//   Along a row |k| grows with kx, so the lanes' shells are sorted and the lanes of one shell are
//   neighbours: a segmented sum over the lanes (shuffles, a fixed tree) leaves each shell's sum in
//   its last lane, which adds it to the warp's own bins in shared memory; the block then adds its
//   warps' bins in warp order.
//   The other sums: every thread adds its grid-stride terms, the block its threads' in a fixed
//   tree (block_sum).
#include <cuda_runtime.h>
#include <cufft.h>

#include <climits>
#include <cmath>
#include <memory>

#include "base/cuda_check.h"
#include "base/device_comm.h"
#include "base/device_buffer.h"
#include "core/diagnostics.h"
#include "core/diagnostics_kernel.h"
#include "core/error.h"
#include "core/fft_gpu.h"

namespace vh {
namespace {

using diag::C;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kBlocks = 264;  // fixed, whatever the size: the order of every sum depends on it

/// The three components of a field's device coefficients (half layout, grid.h).
struct Field {
  const C* c[3];
};

Field field(const void* const d_u[3]) {
  return {{static_cast<const C*>(d_u[0]), static_cast<const C*>(d_u[1]), static_cast<const C*>(d_u[2])}};
}

__device__ inline long long thread_index() { return blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; }
__device__ inline long long thread_stride() { return static_cast<long long>(gridDim.x) * blockDim.x; }

/// The block's sums of v[0 … K−1] over its threads, added in a fixed tree in `red` (K kThreads
/// doubles of shared memory) and written to row[0 … K−1].
template <int K>
__device__ void block_sum(const double (&v)[K], double* red, double* row) {
  for (int k = 0; k < K; ++k) red[k * kThreads + threadIdx.x] = v[k];
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w)
      for (int k = 0; k < K; ++k) red[k * kThreads + threadIdx.x] += red[k * kThreads + threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    for (int k = 0; k < K; ++k) row[k] = red[k * kThreads];
}

/// Row blockIdx.x of `partial` (nshell + 1 columns): the block's shell sums of ½w|û|², then its
/// Σ w|k|²|û|². Dynamic shared memory: kWarps · nshell bins, then kThreads doubles.
__global__ void __launch_bounds__(kThreads) spectrum_kernel(SlabModes L, int nshell, Field u, double* partial) {
  extern __shared__ double smem[];
  const int n = L.n, warp = threadIdx.x / 32, lane = threadIdx.x % 32, nxh = n / 2 + 1;
  double* bins = smem + warp * nshell;
  for (int i = threadIdx.x; i < kWarps * nshell; i += kThreads) smem[i] = 0.0;
  __syncthreads();
  const long long rows = static_cast<long long>(L.slots) * n, warps = static_cast<long long>(gridDim.x) * kWarps;
  double grad2 = 0.0;
  for (long long r = static_cast<long long>(blockIdx.x) * kWarps + warp; r < rows; r += warps) {
    // Row r = (kz, slot) of the rank's [kz][slot][kx] arrays (one rank: slot = ky index).
    const int slot = static_cast<int>(r % L.slots), iz = static_cast<int>(r / L.slots), iy = L.ky_index(slot);
    for (int ix0 = 0; ix0 < nxh; ix0 += 32) {  // the same trip count on every lane
      const int ix = ix0 + lane;
      int shell = INT_MAX;  // lanes past the row's end: after every shell
      double e = 0.0;
      if (ix < nxh) {
        const std::size_t m = static_cast<std::size_t>(r) * nxh + ix;
        const C v[3] = {u.c[0][m], u.c[1][m], u.c[2][m]};
        const diag::SpectrumTerms t = diag::spectrum_terms(n, ix, iy, iz, v);
        shell = t.shell;
        e = t.energy;
        grad2 += t.grad2;
      }
      // Segmented inclusive sum over the lanes of equal shell (Hillis–Steele).
      for (int o = 1; o < 32; o *= 2) {
        const double eo = __shfl_up_sync(~0u, e, o);
        const int so = __shfl_up_sync(~0u, shell, o);
        if (lane >= o && so == shell) e += eo;
      }
      const int next = __shfl_down_sync(~0u, shell, 1);
      if (ix < nxh && (lane == 31 || next != shell)) bins[shell] += e;
    }
  }
  __syncthreads();
  double* row = partial + static_cast<long long>(blockIdx.x) * (nshell + 1);
  for (int s = threadIdx.x; s < nshell; s += kThreads) {
    double t = smem[s];
    for (int w = 1; w < kWarps; ++w) t += smem[w * nshell + s];
    row[s] = t;
  }
  const double g[1] = {grad2};
  block_sum(g, smem + kWarps * nshell, row + nshell);
}

/// Columns 0 and 1 of row blockIdx.x of `partial` (`cols` columns): the block's Σ w|k·û|² and
/// Σ w Re(û*·ω̂).
__global__ void __launch_bounds__(kThreads) divergence_helicity_kernel(SlabModes L, Field u, int cols,
                                                                       double* partial) {
  __shared__ double red[2 * kThreads];
  const int n = L.n;
  const long long nm = L.count();
  double sum[2] = {0.0, 0.0};
  for (long long m = thread_index(); m < nm; m += thread_stride()) {
    int ix, iy, iz;
    L.mode(m, ix, iy, iz);
    const C v[3] = {u.c[0][m], u.c[1][m], u.c[2][m]};
    const diag::DivergenceHelicityTerms t = diag::divergence_helicity_terms(n, ix, iy, iz, v);
    sum[0] += t.div2;
    sum[1] += t.helicity;
  }
  block_sum(sum, red, partial + static_cast<long long>(blockIdx.x) * cols);
}

/// out = the coefficients of ∂u_c/∂x_c from uc = û_c.
__global__ void longitudinal_derivative_kernel(SlabModes L, int c, const C* uc, C* out) {
  const int n = L.n;
  const long long nm = L.count();
  for (long long m = thread_index(); m < nm; m += thread_stride()) {
    int ix, iy, iz;
    L.mode(m, ix, iy, iz);
    out[m] = diag::derivative_term(n, c, ix, iy, iz, uc[m]);
  }
}

/// Two columns of row blockIdx.x of `partial` (`cols` columns, from `part`): the block's Σv² and
/// Σv³ over the np values v.
__global__ void __launch_bounds__(kThreads) moments_kernel(long long np, const double* v, int cols, double* part) {
  __shared__ double red[2 * kThreads];
  double sum[2] = {0.0, 0.0};
  for (long long i = thread_index(); i < np; i += thread_stride()) diag::add_moments(v[i], sum);
  block_sum(sum, red, part + static_cast<long long>(blockIdx.x) * cols);
}

/// out[j] = Σ_r partial[r][j] over the rows in order.
__global__ void column_sums_kernel(int rows, int cols, const double* partial, double* out) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  double s = partial[j];
  for (int r = 1; r < rows; ++r) s += partial[static_cast<long long>(r) * cols + j];
  out[j] = s;
}

/// The column sums of the kBlocks rows of `partial` (cols columns), on the host.
std::vector<double> column_sums(const DeviceArray<double>& partial, int cols) {
  DeviceArray<double> out(cols);
  column_sums_kernel<<<(cols + kThreads - 1) / kThreads, kThreads>>>(kBlocks, cols, partial.data(), out.data());
  VH_CHECK_LAUNCH();
  return out.download();
}

/// A cuFFT plan, destroyed with it.
struct Plan {
  cufftHandle h = 0;
  Plan(int n, cufftType type) { VH_CHECK_CUFFT(cufftPlan3d(&h, n, n, n, type)); }
  ~Plan() { cufftDestroy(h); }
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
};

}  // namespace

namespace {

/// energy_spectrum_device on the rank's modes of slab s, the ranks' sums summed.
double spectrum_of_slab(const void* const d_u[3], const Slab& s, std::vector<double>& E) {
  const int nshell = s.grid.max_shell() + 1, cols = nshell + 1;
  DeviceArray<double> partial(std::size_t(kBlocks) * cols);
  const std::size_t smem = (std::size_t(kWarps) * nshell + kThreads) * sizeof(double);
  if (smem > 48 * 1024)
    VH_CHECK_CUDA(cudaFuncSetAttribute(spectrum_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  spectrum_kernel<<<kBlocks, kThreads, smem>>>(s.modes(), nshell, field(d_u), partial.data());
  VH_CHECK_LAUNCH();
  std::vector<double> out = column_sums(partial, cols);
  if (!s.whole()) s.comm.sum(out);
  E.assign(out.begin(), out.begin() + nshell);
  return out[nshell];
}

}  // namespace

Statistics statistics_device(const void* const d_u[3], const Grid& g, double nu, std::vector<double>& E) {
  return statistics_device(d_u, Slab::whole_grid(g), nullptr, nu, E);
}

Statistics statistics_device(const void* const d_u[3], const Slab& sl, GpuSlabFft* fft, double nu,
                             std::vector<double>& E) {
  VH_CHECK(sl.whole() || fft != nullptr, "statistics_device on several ranks needs their slab transforms");
  const Grid& g = sl.grid;
  const double D = spectrum_of_slab(d_u, sl, E);
  Statistics s = spectral_statistics(E, D, nu);
  const Field u = field(d_u);
  const SlabModes L = sl.modes();
  // Columns: Σ w|k·û|², Σ w Re(û*·ω̂), then Σv² and Σv³ of v = ∂u_c/∂x_c for c = 0, 1, 2.
  constexpr int cols = 8;
  DeviceArray<double> partial(std::size_t(kBlocks) * cols);
  DeviceArray<C> dhat(sl.local_modes());
  DeviceArray<double> dreal(sl.local_points());
  divergence_helicity_kernel<<<kBlocks, kThreads>>>(L, u, cols, partial.data());
  VH_CHECK_LAUNCH();
  // S₃: the three longitudinal derivatives on the grid (one rank: cuFFT C2R, unnormalised as in
  // fft.h; R ranks: the slab transforms), at the rank's planes.
  std::unique_ptr<Plan> plan;
  if (sl.whole()) plan = std::make_unique<Plan>(g.n, CUFFT_Z2D);
  for (int c = 0; c < 3; ++c) {
    longitudinal_derivative_kernel<<<kBlocks, kThreads>>>(L, c, u.c[c], dhat.data());
    VH_CHECK_LAUNCH();
    if (plan)
      VH_CHECK_CUFFT(cufftExecZ2D(plan->h, dhat.as<cufftDoubleComplex>(), dreal.data()));
    else
      fft->inverse(dhat.as<Complex>(), dreal.data());
    moments_kernel<<<kBlocks, kThreads>>>(static_cast<long long>(sl.local_points()), dreal.data(), cols,
                                          partial.data() + 2 + 2 * c);
    VH_CHECK_LAUNCH();
  }
  std::vector<double> sums = column_sums(partial, cols);
  if (!sl.whole()) sl.comm.sum(sums);
  s.divergence_rel = diag::divergence_rel(sums[0], D);
  s.helicity = sums[1];
  double s3 = 0.0;
  for (int c = 0; c < 3; ++c) s3 += diag::skewness(sums[2 + 2 * c], sums[3 + 2 * c], double(g.points()));
  s.S3 = s3 / 3.0;
  return s;
}

double energy_spectrum_device(const void* const d_u[3], const Grid& g, std::vector<double>& E) {
  return spectrum_of_slab(d_u, Slab::whole_grid(g), E);
}


struct DeviceStatistics::Impl {
  Slab slab;
  cudaStream_t stream = nullptr;
  std::unique_ptr<DeviceComm> comm;
  std::unique_ptr<GpuSlabFft> fft;
};

DeviceStatistics::DeviceStatistics(const Slab& s) : impl_(std::make_unique<Impl>()) { impl_->slab = s; }

DeviceStatistics::~DeviceStatistics() {
  impl_->fft.reset();
  impl_->comm.reset();
  if (impl_->stream) cudaStreamDestroy(impl_->stream);
}

Statistics DeviceStatistics::operator()(const void* const d_u[3], double nu, std::vector<double>& E) {
  Impl& m = *impl_;
  if (m.slab.whole()) return statistics_device(d_u, m.slab.grid, nu, E);
  if (!m.fft) {  // S₃'s transforms on the ranks' slabs, made at the first output
    VH_CHECK_CUDA(cudaStreamCreate(&m.stream));
    m.comm = std::make_unique<DeviceComm>(m.slab.comm, m.stream);
    m.fft = std::make_unique<GpuSlabFft>(m.slab, m.comm.get());
  }
  return statistics_device(d_u, m.slab, m.fft.get(), nu, E);
}

}  // namespace vh
