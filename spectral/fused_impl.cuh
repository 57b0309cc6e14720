// GPU kernels of the fused passes (fused.h, fused_kernel.h), templated on the precision and
// the transform size M; instantiated per size in fused_m*.cu (cuFFTDx compiles slowly).
//
// Column passes (ZI, YI, YF, ZFP): one block per kTile consecutive kx columns and one
// (jy or z) index; one cuFFTDx block FFT per column (threadIdx.y = column), element i of
// thread x at line index x + i·stride (cuFFTDx's register layout). Lines go through a shared
// [line][kTile + 1] staging tile so global loads and stores are rows of kTile complex values
// (the +1 avoids bank conflicts); the staging tile also serves as the FFT's scratch.
// Row pass (XC): kRows (y, z) rows per block, rows loaded and stored whole (kx fastest).
#pragma once

#include <cuda_runtime.h>

#include <cufftdx.hpp>

#include <cstdlib>

#include "base/cuda_check.h"
#include "core/error.h"
#include "spectral/fused.h"

namespace vh::spectral::fused::detail {

using kernel::Cx;
using kernel::FusedLayout;
using kernel::kTile;
using kernel::StageArrays;

constexpr int kPad = kTile + 1;  ///< staging row length (complex values)
constexpr int kRows = 4;         ///< (y, z) rows per block of the x pass

/// Elements per thread of the size-M block FFTs (sizes cuFFTDx 1.x supports without a
/// workspace on sm_90, chosen for 32–64 threads per line at the sizes that matter).
/// (fp32 has no 6-element kernel for 48: one thread per line there, tests only.)
template <class T, int M>
constexpr unsigned ept() {
  return M == 512 ? 8 : M == 384 ? 12 : M == 256 ? 8 : M == 192 ? 6 : M == 128 ? 4 : M == 96 ? 6
       : M == 64  ? 8 : M == 48  ? (sizeof(T) == 4 ? 48 : 6) : M == 32  ? 4 : 0;
}

/// Elements per thread of the x pass's line FFTs: fewer where that halves the registers of
/// its three lines in flight (ptxas: 144 → under 100 at M = 512, fp64), for occupancy.
template <class T, int M>
constexpr unsigned row_ept() {
  return M == 512 ? 4 : M == 384 ? 6 : M == 256 ? 4 : ept<T, M>();
}

template <class T, int M, cufftdx::fft_direction D, int FPB, unsigned E = ept<T, M>()>
using BlockFft = decltype(cufftdx::Size<M>() + cufftdx::Precision<T>() + cufftdx::Type<cufftdx::fft_type::c2c>() +
                          cufftdx::Direction<D>() + cufftdx::SM<900>() + cufftdx::Block() +
                          cufftdx::FFTsPerBlock<FPB>() + cufftdx::ElementsPerThread<E>());

template <class T, int M>
struct Ffts {
  using ColInv = BlockFft<T, M, cufftdx::fft_direction::inverse, kTile>;
  using ColFwd = BlockFft<T, M, cufftdx::fft_direction::forward, kTile>;
  using RowInv = BlockFft<T, M, cufftdx::fft_direction::inverse, kRows, row_ept<T, M>()>;
  using RowFwd = BlockFft<T, M, cufftdx::fft_direction::forward, kRows, row_ept<T, M>()>;
  static_assert(!ColInv::requires_workspace && !ColFwd::requires_workspace && !RowInv::requires_workspace &&
                    !RowFwd::requires_workspace,
                "fused transforms: sizes needing a cuFFTDx workspace are not supported");
  static constexpr unsigned kEpt = ColInv::elements_per_thread;
  static constexpr unsigned kStride = ColInv::stride;  ///< threads per line
  static constexpr unsigned kColThreads = kStride * kTile;
  static constexpr unsigned kRowStride = RowInv::stride;  ///< threads per line of the x pass
  static constexpr unsigned kRowThreads = kRowStride * kRows;
  static constexpr std::size_t max2(std::size_t a, std::size_t b) { return a > b ? a : b; }
  /// Bytes of the staging tile / FFT scratch of a column pass.
  static constexpr std::size_t kColScratch =
      max2(max2(ColInv::shared_memory_size, ColFwd::shared_memory_size), std::size_t(M) * kPad * sizeof(Cx<T>));
  static constexpr std::size_t kRowScratch = max2(RowInv::shared_memory_size, RowFwd::shared_memory_size);
};

__device__ inline unsigned flat_tid() { return threadIdx.y * blockDim.x + threadIdx.x; }
__device__ inline unsigned block_threads() { return blockDim.x * blockDim.y; }

/// The kTile line FFTs F of the column tile S in place (line threadIdx.y, element j at
/// S[j * kPad + line]); S is also F's workspace.  Every thread of the block takes part.
template <class F, class T>
__device__ inline void tile_fft(Cx<T>* S) {
  const unsigned t = threadIdx.y;
  typename F::value_type v[F::storage_size];
  #pragma unroll
  for (unsigned i = 0; i < F::elements_per_thread; ++i) {
    const Cx<T> x = S[(threadIdx.x + i * F::stride) * kPad + t];
    v[i].x = x.re;
    v[i].y = x.im;
  }
  __syncthreads();
  F().execute(v, S);
  __syncthreads();
  #pragma unroll
  for (unsigned i = 0; i < F::elements_per_thread; ++i)
    S[(threadIdx.x + i * F::stride) * kPad + t] = Cx<T>{v[i].x, v[i].y};
  __syncthreads();
}

/// Bytes of the [3][nk][kPad] mode tile of ZI/ZFP, rounded to 16.
template <class T>
__host__ __device__ inline std::size_t a_bytes(const FusedLayout& l) {
  return (std::size_t(3) * l.nk * kPad * sizeof(Cx<T>) + 15) / 16 * 16;
}

/// The 6 inverse z transforms of column (kx0 + threadIdx.y, jy) from the stage input in the
/// mode tile A[c][jz][t] (zero for kx ≥ nx), written to zb fields 0–5 at row j = jy − jy0.
template <class T, int M>
__device__ void z_inverse_from_tile(const FusedLayout& l, int kx0, int jy, const Cx<T>* A, Cx<T>* S, Cx<T>* zb) {
  const int jl = jy - l.jy0;
  using F = typename Ffts<T, M>::ColInv;
  using V = typename F::value_type;
  const int K = l.k, t = threadIdx.y, nk = l.nk;
  const T fkx = T(kx0 + t), fky = T(jy - K);
#pragma unroll
  for (int f = 0; f < 6; ++f) {
    V v[F::storage_size];
    #pragma unroll
    for (unsigned i = 0; i < F::elements_per_thread; ++i) {
      const int j = int(threadIdx.x + i * F::stride);
      const int kz = kernel::signed_k(j, M);
      Cx<T> r{T(0), T(0)};
      if (kz >= -K && kz <= K) {
        const int jz = kz + K;
        const Cx<T> a[3] = {A[(0 * nk + jz) * kPad + t], A[(1 * nk + jz) * kPad + t], A[(2 * nk + jz) * kPad + t]};
        r = kernel::z_field(f, fkx, fky, T(kz), a);
      }
      v[i].x = r.re;
      v[i].y = r.im;
    }
    F().execute(v, S);
    __syncthreads();
    #pragma unroll
    for (unsigned i = 0; i < F::elements_per_thread; ++i) {
      const unsigned j = threadIdx.x + i * F::stride;
      S[j * kPad + t] = Cx<T>{v[i].x, v[i].y};
    }
    __syncthreads();
    for (unsigned idx = flat_tid(); idx < unsigned(M) * kTile; idx += block_threads()) {
      const unsigned z = idx / kTile, tt = idx % kTile;
      zb[l.zb(f, int(z), jl, kx0 + int(tt))] = S[z * kPad + tt];
    }
    __syncthreads();
  }
}

/// ZI: the inverse z pass from the state û (N layout). Grid (nxp/kTile, njy).
template <class T, int M>
__global__ void __launch_bounds__(Ffts<T, M>::kColThreads) zi_kernel(FusedLayout l, StageArrays<T> arr, Cx<T>* zb) {
  extern __shared__ __align__(16) unsigned char smem[];
  Cx<T>* A = reinterpret_cast<Cx<T>*>(smem);
  Cx<T>* S = reinterpret_cast<Cx<T>*>(smem + a_bytes<T>(l));
  const int kx0 = int(blockIdx.x) * kTile, jy = l.jy0 + int(blockIdx.y), K = l.k, nk = l.nk;
  for (unsigned idx = flat_tid(); idx < 3u * nk * kTile; idx += block_threads()) {
    const int t = int(idx % kTile), r = int(idx / kTile), jz = r % nk, c = r / nk, kx = kx0 + t;
    A[(c * nk + jz) * kPad + t] = kx < l.nx ? arr.u0[c][l.state(kx, jy - K, jz - K)] : Cx<T>{T(0), T(0)};
  }
  __syncthreads();
  z_inverse_from_tile<T, M>(l, kx0, jy, A, S, zb);
}

/// ZFP: forward z of zb fields 0–2 keeping |kz| ≤ K, post_values() per mode, then ZI of the
/// next stage input (not for kRhsOnly). Grid (nxp/kTile, njy).
template <class T, int M>
__global__ void __launch_bounds__(Ffts<T, M>::kColThreads)
    zfp_kernel(FusedLayout l, int s, bool expl, T nu, T dt, StageArrays<T> arr, Cx<T>* zb) {
  using F = typename Ffts<T, M>::ColFwd;
  using V = typename F::value_type;
  extern __shared__ __align__(16) unsigned char smem[];
  Cx<T>* A = reinterpret_cast<Cx<T>*>(smem);
  Cx<T>* S = reinterpret_cast<Cx<T>*>(smem + a_bytes<T>(l));
  const int kx0 = int(blockIdx.x) * kTile, jy = l.jy0 + int(blockIdx.y), K = l.k, nk = l.nk, t = threadIdx.y;
  for (int c = 0; c < 3; ++c) {
    for (unsigned idx = flat_tid(); idx < unsigned(M) * kTile; idx += block_threads()) {
      const unsigned z = idx / kTile, tt = idx % kTile;
      S[z * kPad + tt] = zb[l.zb(c, int(z), int(blockIdx.y), kx0 + int(tt))];
    }
    __syncthreads();
    V v[F::storage_size];
    #pragma unroll
    for (unsigned i = 0; i < F::elements_per_thread; ++i) {
      const Cx<T> x = S[(threadIdx.x + i * F::stride) * kPad + t];
      v[i].x = x.re;
      v[i].y = x.im;
    }
    __syncthreads();
    F().execute(v, S);
    #pragma unroll
    for (unsigned i = 0; i < F::elements_per_thread; ++i) {
      const int kz = kernel::signed_k(int(threadIdx.x + i * F::stride), M);
      if (kz >= -K && kz <= K) A[(c * nk + kz + K) * kPad + t] = Cx<T>{v[i].x, v[i].y};
    }
    __syncthreads();
  }
  for (unsigned idx = flat_tid(); idx < unsigned(nk) * kTile; idx += block_threads()) {
    const int tt = int(idx % kTile), jz = int(idx / kTile), kx = kx0 + tt;
    Cx<T> nh[3];
    for (int c = 0; c < 3; ++c) nh[c] = A[(c * nk + jz) * kPad + tt];
    if (kx < l.nx) {
      const long long nm = (long long)l.state(kx, jy - K, jz - K);
      if (!kernel::post_values(l.g, s, expl, nu, dt, kx, jy - K, jz - K, nm, nh, arr)) continue;
    } else {
      nh[0] = nh[1] = nh[2] = Cx<T>{T(0), T(0)};
    }
    for (int c = 0; c < 3; ++c) A[(c * nk + jz) * kPad + tt] = nh[c];
  }
  if (s == kernel::kRhsOnly) return;  // uniform over the block
  __syncthreads();
  z_inverse_from_tile<T, M>(l, kx0, jy, A, S, zb);
}

/// YI: inverse y of zt fields f0 … f1 − 1 of 0–5 (|ky| ≤ K rows, zero elsewhere) into yb. Grid
/// (nxp/kTile, planes): z = z0 + blockIdx.y is the rank's plane index (zt is zb on one rank).
template <class T, int M>
__global__ void __launch_bounds__(Ffts<T, M>::kColThreads)
    yi_kernel(FusedLayout l, int f0, int f1, int z0, const Cx<T>* zt, Cx<T>* yb) {
  using F = typename Ffts<T, M>::ColInv;
  extern __shared__ __align__(16) unsigned char smem[];
  Cx<T>* S = reinterpret_cast<Cx<T>*>(smem);
  const int kx0 = int(blockIdx.x) * kTile, z = z0 + int(blockIdx.y), K = l.k;
  for (int f = f0; f < f1; ++f) {
    for (unsigned idx = flat_tid(); idx < unsigned(M) * kTile; idx += block_threads()) {
      const unsigned j = idx / kTile, tt = idx % kTile;
      const int ky = kernel::signed_k(int(j), M);
      S[j * kPad + tt] = (ky >= -K && ky <= K) ? zt[l.zt(f, z, ky + K, kx0 + int(tt))] : Cx<T>{T(0), T(0)};
    }
    __syncthreads();
    tile_fft<F>(S);
    for (unsigned idx = flat_tid(); idx < unsigned(M) * kTile; idx += block_threads()) {
      const unsigned y = idx / kTile, tt = idx % kTile;
      yb[l.yb(f, z, int(y), kx0 + int(tt))] = S[y * kPad + tt];
    }
    __syncthreads();
  }
}

/// YF: forward y of yb fields f0 … f1 − 1 of 0–2 keeping |ky| ≤ K, into zt fields 0–2. Grid
/// (nxp/kTile, planes), z = z0 + blockIdx.y.
template <class T, int M>
__global__ void __launch_bounds__(Ffts<T, M>::kColThreads)
    yf_kernel(FusedLayout l, int f0, int f1, int z0, const Cx<T>* yb, Cx<T>* zt) {
  using F = typename Ffts<T, M>::ColFwd;
  extern __shared__ __align__(16) unsigned char smem[];
  Cx<T>* S = reinterpret_cast<Cx<T>*>(smem);
  const int kx0 = int(blockIdx.x) * kTile, z = z0 + int(blockIdx.y), K = l.k;
  for (int c = f0; c < f1; ++c) {
    for (unsigned idx = flat_tid(); idx < unsigned(M) * kTile; idx += block_threads()) {
      const unsigned y = idx / kTile, tt = idx % kTile;
      S[y * kPad + tt] = yb[l.yb(c, z, int(y), kx0 + int(tt))];
    }
    __syncthreads();
    tile_fft<F>(S);
    for (unsigned idx = flat_tid(); idx < unsigned(l.nk) * kTile; idx += block_threads()) {
      const int jy = int(idx / kTile), tt = int(idx % kTile);
      zt[l.zt(c, z, jy, kx0 + tt)] = S[kernel::axis_index(jy - K, M) * kPad + tt];
    }
    __syncthreads();
  }
}

/// Bytes of the x pass's row tile: max of In[6][kRows][nxp] and Q[kRows][M] + Out[3][kRows][nxp].
template <class T>
__host__ __device__ inline std::size_t row_tile_bytes(const FusedLayout& l) {
  const std::size_t in = std::size_t(6) * kRows * l.nxp, qo = std::size_t(kRows) * l.g.m + 3 * kRows * l.nxp;
  return ((in > qo ? in : qo) * sizeof(Cx<T>) + 15) / 16 * 16;
}

/// XC: per (y, z) row, c2r of the 6 fields, u × ω, r2c of the products kept to kx ≤ K, into
/// yb fields 0–2 (in place). Grid planes·M/kRows from plane z0 (z the rank's plane index).
template <class T, int M, unsigned E_, int MinBlocks>
__global__ void __launch_bounds__(BlockFft<T, M, cufftdx::fft_direction::inverse, kRows, E_>::stride * kRows, MinBlocks)
    xc_kernel(FusedLayout l, int z0, Cx<T>* yb) {
  using FI = BlockFft<T, M, cufftdx::fft_direction::inverse, kRows, E_>;
  using FF = BlockFft<T, M, cufftdx::fft_direction::forward, kRows, E_>;
  using V = typename FI::value_type;
  constexpr unsigned E = FI::elements_per_thread, St = FI::stride;
  extern __shared__ __align__(16) unsigned char smem[];
  Cx<T>* In = reinterpret_cast<Cx<T>*>(smem);
  void* scratch = smem + row_tile_bytes<T>(l);
  const int nxp = l.nxp, nx = l.nx, r = threadIdx.y;
  const unsigned row0 = unsigned(z0) * M + blockIdx.x * kRows;
  for (unsigned idx = flat_tid(); idx < 6u * kRows * nxp; idx += block_threads()) {
    const unsigned kx = idx % nxp, rr = (idx / nxp) % kRows, f = idx / (nxp * kRows), row = row0 + rr;
    In[(f * kRows + rr) * nxp + kx] = yb[l.yb(int(f), int(row / M), int(row % M), int(kx))];
  }
  __syncthreads();
  V v[3][FI::storage_size];
#pragma unroll
  for (int c = 0; c < 3; ++c) {
    const Cx<T>* u = In + (c * kRows + r) * nxp;
    const Cx<T>* w = In + ((3 + c) * kRows + r) * nxp;
    #pragma unroll
    for (unsigned i = 0; i < E; ++i) {
      const Cx<T> z = kernel::x_pack(int(threadIdx.x + i * St), M, nx, u, w);
      v[c][i].x = z.re;
      v[c][i].y = z.im;
    }
  }
#pragma unroll
  for (int c = 0; c < 3; ++c) {
    FI().execute(v[c], scratch);
    __syncthreads();
  }
  #pragma unroll
  for (unsigned i = 0; i < E; ++i) {
    T u0 = v[0][i].x, u1 = v[1][i].x, u2 = v[2][i].x;
    kernel::cross_in_place(u0, u1, u2, v[0][i].y, v[1][i].y, v[2][i].y);
    v[0][i].x = u0;
    v[0][i].y = u1;
    v[1][i].x = u2;
    v[1][i].y = T(0);
  }
  FF().execute(v[0], scratch);
  __syncthreads();
  FF().execute(v[1], scratch);
  Cx<T>* Q = In;                        // [kRows][M]
  Cx<T>* Out = In + kRows * M;          // [3][kRows][nxp]
  #pragma unroll
  for (unsigned i = 0; i < E; ++i) {
    const unsigned j = threadIdx.x + i * St;
    Q[r * M + j] = Cx<T>{v[0][i].x, v[0][i].y};
    if (j < unsigned(nx)) Out[(2 * kRows + r) * nxp + j] = Cx<T>{v[1][i].x, v[1][i].y};
  }
  __syncthreads();
  for (unsigned idx = flat_tid(); idx < unsigned(kRows) * nxp; idx += block_threads()) {
    const unsigned kx = idx % nxp, rr = idx / nxp;
    Cx<T> px{T(0), T(0)}, py{T(0), T(0)};
    if (kx < unsigned(nx)) {
      kernel::x_unpack(Q[rr * M + kx], Q[rr * M + (M - kx) % M], px, py);
    } else {
      Out[(2 * kRows + rr) * nxp + kx] = Cx<T>{T(0), T(0)};
    }
    Out[(0 * kRows + rr) * nxp + kx] = px;
    Out[(1 * kRows + rr) * nxp + kx] = py;
  }
  __syncthreads();
  for (unsigned idx = flat_tid(); idx < 3u * kRows * nxp; idx += block_threads()) {
    const unsigned kx = idx % nxp, rr = (idx / nxp) % kRows, c = idx / (nxp * kRows), row = row0 + rr;
    yb[l.yb(int(c), int(row / M), int(row % M), int(kx))] = Out[(c * kRows + rr) * nxp + kx];
  }
}

template <class K>
void set_smem(K* k, std::size_t bytes) {
  VH_CHECK_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

/// Variant of the x pass per size, the fastest on the H200 in fp64 (bench/RESULTS.md, 2026-11-22
/// fused transforms; measured with all three built, selected then by VH_FUSED_XC): 2 at M = 512
/// (63.95 against 77.8 ms/step for 0) and 384 (32.8 against 40.5), 0 at 256 (8.16 against
/// 9.05); 0 elsewhere (not measured).  Variant 1 (ept() threads, 1 block per SM) was never the
/// fastest.
template <int M>
constexpr int kXcDefault = (M == 512 || M == 384) ? 2 : 0;

/// Launches an x-pass kernel whose line FFTs are FI/FF (FFTsPerBlock kRows) types.
template <auto Kernel, class FI, class FF>
void xc_launch(const FusedLayout& l, int z0, int z1, Cx<typename FI::value_type::value_type>* yb, cudaStream_t st) {
  using T = typename FI::value_type::value_type;
  const std::size_t scratch = FI::shared_memory_size > FF::shared_memory_size ? FI::shared_memory_size : FF::shared_memory_size;
  const std::size_t sm = row_tile_bytes<T>(l) + scratch;
  set_smem(Kernel, sm);
  if (z1 > z0) Kernel<<<unsigned(std::size_t(z1 - z0) * l.g.m / kRows), dim3(FI::stride, kRows), sm, st>>>(l, z0, yb);
}

/// The host side of one size: launches pass p.
template <class T, int M>
struct Passes {
  /// zt: the y passes' input and output (zb itself on one rank; FusedLayout).
  static void run(Pass p, const FusedLayout& l, int s, bool expl, T nu, T dt, const StageArrays<T>& arr,
                  Cx<T>* zb, Cx<T>* zt, Cx<T>* yb, cudaStream_t st, Part part) {
    using Fs = Ffts<T, M>;
    const dim3 col(Fs::kStride, kTile);
    const int z0 = part.z0, z1 = part.z1 < 0 ? l.nzl : part.z1, f0 = part.f0;
    VH_CHECK(z0 >= 0 && z1 <= l.nzl && (l.g.m % kRows == 0 || (z0 == 0 && z1 == l.nzl)),
             "fused passes: planes outside the rank's, or a part of them where M is not a multiple of kRows");
    switch (p) {
      case Pass::z_inverse: {
        if (l.njy == 0) return;  // a rank without kept ky (R > 2K + 1)
        const std::size_t sm = a_bytes<T>(l) + Fs::kColScratch;
        set_smem(zi_kernel<T, M>, sm);
        zi_kernel<T, M><<<dim3(l.nxp / kTile, l.njy), col, sm, st>>>(l, arr, zb);
        break;
      }
      case Pass::z_forward_post: {
        if (l.njy == 0) return;
        const std::size_t sm = a_bytes<T>(l) + Fs::kColScratch;
        set_smem(zfp_kernel<T, M>, sm);
        zfp_kernel<T, M><<<dim3(l.nxp / kTile, l.njy), col, sm, st>>>(l, s, expl, nu, dt, arr, zb);
        break;
      }
      case Pass::y_inverse:
        set_smem(yi_kernel<T, M>, Fs::kColScratch);
        if (z1 > z0)
          yi_kernel<T, M><<<dim3(l.nxp / kTile, z1 - z0), col, Fs::kColScratch, st>>>(l, f0, part.f1 < 0 ? 6 : part.f1,
                                                                                      z0, zt, yb);
        break;
      case Pass::y_forward:
        set_smem(yf_kernel<T, M>, Fs::kColScratch);
        if (z1 > z0)
          yf_kernel<T, M><<<dim3(l.nxp / kTile, z1 - z0), col, Fs::kColScratch, st>>>(l, f0, part.f1 < 0 ? 3 : part.f1,
                                                                                      z0, yb, zt);
        break;
      case Pass::x_cross:
        // The variant measured fastest for this size (kXcDefault): 2 = ept() threads per line
        // capped at 2 blocks per SM, 0 = row_ept() threads per line.  Only that one is
        // instantiated: each variant of each size adds megabytes of device code to every
        // program that links the solver.
        if constexpr (kXcDefault<M> == 2)
          xc_launch<xc_kernel<T, M, ept<T, M>(), 2>, BlockFft<T, M, cufftdx::fft_direction::inverse, kRows>,
                    BlockFft<T, M, cufftdx::fft_direction::forward, kRows>>(l, z0, z1, yb, st);
        else
          xc_launch<xc_kernel<T, M, row_ept<T, M>(), 1>, typename Fs::RowInv, typename Fs::RowFwd>(l, z0, z1, yb, st);
        break;
    }
    VH_CHECK_LAUNCH();
  }
  /// Dynamic shared memory the largest kernel of this size needs for layout l.
  static std::size_t max_smem(const FusedLayout& l) {
    using Fs = Ffts<T, M>;
    const std::size_t a = a_bytes<T>(l) + Fs::kColScratch, x = row_tile_bytes<T>(l) + Fs::kColScratch;
    return a > x ? a : x;
  }
};

}  // namespace vh::spectral::fused::detail
