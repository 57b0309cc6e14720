// dgemm_gpu (fmm/dgemm_gpu.h): block tiles of 64 x 64 outputs, four warps of 32 x 32 (four by four
// WMMA accumulators of 8 x 8), the inner dimension in slices of 32 staged in shared memory with
// zeros past the edges (each thread reads its share of the next slice into registers while the
// tensor cores work on this one); the results go through shared memory to C with bounds checks (C's
// columns need not be 32-byte aligned, as WMMA's stores want).  A one-dimensional grid, the
// blocks of one column tile consecutive, so that B's slices are read from L2 by all but the first.
#include "fmm/dgemm_gpu.h"

#include <mma.h>

#include "base/cuda_check.h"

namespace vh::fmm {

namespace {

constexpr int kBM = 64, kBN = 64, kBK = 32, kThreads = 128;
constexpr int kLdA = kBM + 4, kLdB = kBK + 4, kLdC = kBM + 4;  // padded (32-byte aligned 8 x 4 tiles)

struct Stage {
  double a[kBK * kLdA];  // A's slice, column-major: (r, kk) at r + kk kLdA
  double b[kBN * kLdB];  // B's slice, column-major: (kk, c) at kk + c kLdB
};
union Shared {
  Stage s;
  double c[kBN * kLdC];  // the block's outputs, column-major
};

// Each thread's share of one inner slice of A (kBM x kBK) and of B (kBK x kBN).
constexpr int kPer = kBM * kBK / kThreads;
constexpr int kAStep = kThreads / kBM, kBStep = kThreads / kBK;  // inner indices, columns between j and j + 1
static_assert(kBK * kBN / kThreads == kPer && kThreads % kBM == 0 && kThreads % kBK == 0, "the fetch's map");

__global__ void __launch_bounds__(kThreads)
    dgemm_kernel(int m, int n, int k, const double* __restrict__ A, int lda, const double* __restrict__ B, int incb,
                 int ldb, double* __restrict__ C, int ldc, bool add) {
  __shared__ __align__(32) Shared sh;
  const int rt = (m + kBM - 1) / kBM;  // row tiles
  const int r0 = static_cast<int>(blockIdx.x % rt) * kBM, c0 = static_cast<int>(blockIdx.x / rt) * kBN;
  const int t = threadIdx.x, warp = t / 32;
  const int wr = (warp % 2) * 32, wc = (warp / 2) * 32;  // the warp's 32 x 32 within the tile
  // The next slice is read into registers while the tensor cores work on this one.  Thread t
  // reads A's row t % kBM at inner indices t / kBM + kAStep j, and B's inner index t % kBK in
  // columns t / kBK + kBStep j (j < kPer): whole columns of A and B a warp.
  const int ar = t % kBM, ak = t / kBM, bk = t % kBK, bc = t / kBK;
  const bool arow = r0 + ar < m;
  const double* pa = A + (r0 + ar) + static_cast<long long>(ak) * lda;
  const double* pb = B + static_cast<long long>(bk) * incb + static_cast<long long>(c0 + bc) * ldb;
  const long long sa = static_cast<long long>(kAStep) * lda, sb = static_cast<long long>(kBStep) * ldb;
  double ra[kPer], rb[kPer];
  auto fetch = [&](int k0) {
    const double* qa = pa + static_cast<long long>(k0) * lda;
    const double* qb = pb + static_cast<long long>(k0) * incb;
    for (int j = 0; j < kPer; ++j) {
      ra[j] = arow && k0 + ak + kAStep * j < k ? qa[j * sa] : 0.0;
      rb[j] = c0 + bc + kBStep * j < n && k0 + bk < k ? qb[j * sb] : 0.0;
    }
  };
#if __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  wmma::fragment<wmma::accumulator, 8, 8, 4, double> acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[i][j], 0.0);
#else
  double acc[32];  // this thread's outputs: column (t / 2), rows (t % 2) 32 .. + 31
  for (double& v : acc) v = 0;
#endif
  if (k > 0) fetch(0);
  for (int k0 = 0; k0 < k; k0 += kBK) {
    for (int j = 0; j < kPer; ++j) {
      sh.s.a[ar + (ak + kAStep * j) * kLdA] = ra[j];
      sh.s.b[bk + (bc + kBStep * j) * kLdB] = rb[j];
    }
    __syncthreads();
    if (k0 + kBK < k) fetch(k0 + kBK);
#if __CUDA_ARCH__ >= 800
    for (int kk = 0; kk < kBK; kk += 4) {
      wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::col_major> fa[4];
      wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> fb[4];
      for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(fa[i], sh.s.a + (wr + 8 * i) + kk * kLdA, kLdA);
      for (int j = 0; j < 4; ++j) wmma::load_matrix_sync(fb[j], sh.s.b + kk + (wc + 8 * j) * kLdB, kLdB);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
#else
    for (int kk = 0; kk < kBK; ++kk) {
      const double bv = sh.s.b[kk + (t / 2) * kLdB];
      for (int i = 0; i < 32; ++i) acc[i] += sh.s.a[(t % 2) * 32 + i + kk * kLdA] * bv;
    }
#endif
    __syncthreads();
  }
#if __CUDA_ARCH__ >= 800
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      wmma::store_matrix_sync(sh.c + (wr + 8 * i) + (wc + 8 * j) * kLdC, acc[i][j], kLdC, wmma::mem_col_major);
#else
  for (int i = 0; i < 32; ++i) sh.c[(t % 2) * 32 + i + (t / 2) * kLdC] = acc[i];
#endif
  __syncthreads();
  for (int e = t; e < kBM * kBN; e += kThreads) {
    const int r = e % kBM, c = e / kBM;
    if (r0 + r < m && c0 + c < n) {
      double& out = C[(r0 + r) + static_cast<long long>(c0 + c) * ldc];
      out = add ? out + sh.c[r + c * kLdC] : sh.c[r + c * kLdC];
    }
  }
}

}  // namespace

void dgemm_gpu(int m, int n, int k, const double* A, int lda, const double* B, int incb, int ldb, double* C, int ldc,
               cudaStream_t s, bool add) {
  if (m <= 0 || n <= 0) return;
  const long long blocks = static_cast<long long>((m + kBM - 1) / kBM) * ((n + kBN - 1) / kBN);
  dgemm_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(m, n, k, A, lda, B, incb, ldb, C, ldc, add);
  VH_CHECK_LAUNCH();
}

}  // namespace vh::fmm
