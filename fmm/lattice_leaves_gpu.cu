// P2M and L2P as matrix products where every leaf holds the same points (LatticeLeaves,
// far_gpu_device.h; the test of a point in fmm/lattice_leaves.h).  Per evaluation: a check of
// the leaves (one block per leaf), the matrices A and R from the first leaf's points, then
// matrix products over all leaves (dgemm_gpu: FP64 tensor cores) and, for the L2P, a pass that
// adds the near-field sums and the mean correction and writes each target in its input order.
//
// Layouts (column-major).  A leaf's expansion is 6 ncoef(p) doubles,
// index e = 2 (a ncoef + c) + (0 re, 1 im) for component a and coefficient c (FarWork's M and L:
// leaf cell l's at 6 ncoef l).  Its strengths are 4 K doubles (double4 a point: a, 0).
//   L2P: out[12 t + q, b] = sum_e A[12 t + q, e] L[e, b]   A: 12 K x 6 ncoef
//   P2M: M[e(a, c), b] = sum_t R[2 c + (re, im), t] alpha_a[t, b] for each component a,
//        R: 2 ncoef x K, R_c(x_t - centre); alpha_a[t, b] the doubles 4 (K b + t) + a.
#include <algorithm>

#include "base/cuda_check.h"
#include "fmm/dgemm_gpu.h"
#include "fmm/far_gpu_device.h"
#include "fmm/lattice_leaves.h"

namespace vh::fmm {

namespace {

// The L2P's results one matrix product writes at once: at most 2^23 doubles (64 MiB), a run of leaves.
constexpr std::size_t kOutDoubles = std::size_t(1) << 23;

// found[0 .. 4]: alike (1, cleared by any leaf that differs), K, the first leaf's cell, its
// first point, its row in M and L (FarPlan::rows: the leaves' rows must follow one another too).
// Block per leaf b, its threads over the leaf's points.
__global__ void alike_kernel(const int* __restrict__ leaves, int n, const GCell* __restrict__ cells,
                             const double4_32a* __restrict__ x, const int* __restrict__ rows, double tol,
                             int* __restrict__ found) {
  const int b = blockIdx.x;
  const GCell c0 = cells[leaves[0]], c = cells[leaves[b]];
  const int k = c0.end - c0.begin;
  if (b == 0 && threadIdx.x == 0) {
    found[1] = k;
    found[2] = leaves[0];
    found[3] = c0.begin;
    found[4] = static_cast<int>(row_of(rows, leaves[0]));
  }
  const long long row0 = row_of(rows, leaves[0]);
  if (leaves[b] != leaves[0] + b || c.begin != c0.begin + b * k || c.end - c.begin != k || row0 < 0 ||
      row_of(rows, leaves[b]) != row0 + b) {
    if (threadIdx.x == 0) atomicAnd(found, 0);
    return;
  }
  for (int t = threadIdx.x; t < k; t += blockDim.x) {
    const double4_32a p = x[c.begin + t], q = x[c0.begin + t];
    if (!same_leaf_offset(p.x - c.cx, p.y - c.cy, p.z - c.cz, q.x - c0.cx, q.y - c0.cy, q.z - c0.cz, tol))
      atomicAnd(found, 0);
  }
}

// Column e of A: block per e, l2p_at on the unit expansion e at each of the first leaf's k points.
__global__ void l2p_matrix_kernel(const GCell* __restrict__ cells, int leaf0, const double4_32a* __restrict__ x, int k,
                                  int p, double* __restrict__ A) {
  extern __shared__ double2 sh[];
  const int nc = cidx(p + 1, 0), nf = (p + 1) * (p + 1), e = blockIdx.x;
  double2* Lf = sh;  // [3][nf]
  double* rows = reinterpret_cast<double*>(sh + 3 * nf) + threadIdx.x * l2p_rows_stride(p);
  double2* unit = sh + 3 * nf + (blockDim.x * l2p_rows_stride(p) + 1) / 2;  // [3][nc]
  for (int i = threadIdx.x; i < 3 * nc; i += blockDim.x)
    unit[i] = i == e / 2 ? make_double2(e % 2 ? 0.0 : 1.0, e % 2 ? 1.0 : 0.0) : make_double2(0, 0);
  __syncthreads();
  stage_full(unit, p, nc, Lf, false, threadIdx.x, blockDim.x);
  __syncthreads();
  const GCell c = cells[leaf0];
  for (int t = threadIdx.x; t < k; t += blockDim.x) {
    const double4_32a xt = x[c.begin + t];
    double r[12];
    l2p_at(Lf, p, xt.x - c.cx, xt.y - c.cy, xt.z - c.cz, rows, r);
    for (int q = 0; q < 12; ++q) A[12 * t + q + static_cast<long long>(e) * 12 * k] = r[q];
  }
}

// R: block per point t of the first leaf, thread per order m, its column of R.
__global__ void p2m_matrix_kernel(const GCell* __restrict__ cells, int leaf0, const double4_32a* __restrict__ x, int p,
                                  double* __restrict__ R) {
  const int nc = cidx(p + 1, 0), t = blockIdx.x, m = threadIdx.x;
  if (m > p) return;
  const GCell c = cells[leaf0];
  const double4_32a xt = x[c.begin + t];
  double* col = R + static_cast<long long>(t) * 2 * nc;
  harmonic_column<false>(xt.x - c.cx, xt.y - c.cy, xt.z - c.cz, p, m, [&](int l, double re, double im) {
    col[2 * cidx(l, m)] = re;
    col[2 * cidx(l, m) + 1] = im;
  });
}

// The L2P's last step for the targets [first, first + count) of the sorted order: out holds
// their 12 values each.
template <class N>
__global__ void l2p_store_kernel(long long first, long long count, const double* __restrict__ out,
                                 const double4_32a* __restrict__ x, const N* __restrict__ near,
                                 const int* __restrict__ perm, const MeanTerms* __restrict__ mc, long long out_first,
                                 long long out_count, double* __restrict__ u_out, double* __restrict__ grad_out) {
  const long long j = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (j >= count) return;
  const long long i = first + j, o = perm[i] - out_first;
  if (o < 0 || o >= out_count) return;  // another rank's target (FarPlan::out_first)
  double r[12];
  for (int q = 0; q < 12; ++q) r[q] = out[12 * j + q];
  l2p_store(r, i, o, x[i], near, mc, u_out, grad_out);
}

}  // namespace

void LatticeLeaves::prepare(const FarPlan& f) {
  t_ = s_ = Side{};
  if (!enabled_) return;
  const bool same =
      f.tgt_leaves == f.src_leaves && f.tcells == f.scells && f.xt == f.xs && f.n_tgt_leaves == f.n_src_leaves;
  const bool look_s = !f.own && f.n_src_leaves > 0, look_t = f.n_tgt_leaves > 0 && !(same && look_s);
  if (!look_s && !look_t) return;
  found_.reserve(10);  // targets', sources' (alike_kernel)
  const int ones[10] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0};
  VH_CHECK_CUDA(cudaMemcpy(found_.data(), ones, sizeof ones, cudaMemcpyHostToDevice));
  const double tol = kLatticeLeafTolerance * f.side0;
  if (look_s) {
    alike_kernel<<<f.n_src_leaves, 64>>>(f.src_leaves, f.n_src_leaves, f.scells, f.xs, f.rows, tol,
                                                 found_.data() + 5);
    VH_CHECK_LAUNCH();
  }
  if (look_t) {
    alike_kernel<<<f.n_tgt_leaves, 64>>>(f.tgt_leaves, f.n_tgt_leaves, f.tcells, f.xt, f.rows, tol,
                                                 found_.data());
    VH_CHECK_LAUNCH();
  }
  int h[10];
  VH_CHECK_CUDA(cudaMemcpy(h, found_.data(), sizeof h, cudaMemcpyDeviceToHost));
  if (same && look_s) std::copy(h + 5, h + 10, h);  // the sources' leaves are the targets'
  const int nc = cidx(f.p + 1, 0);
  if (h[5] && look_s) s_ = Side{h[6], h[7], h[8], f.n_src_leaves, h[9]};
  if (h[0] && f.n_tgt_leaves > 0 && (look_t || same)) t_ = Side{h[1], h[2], h[3], f.n_tgt_leaves, h[4]};
  // A leaf's L2P results must fit the run one product writes.
  if (t_.k > 0 && 12 * static_cast<std::size_t>(t_.k) > kOutDoubles) t_ = Side{};
  if (t_.k > 0) {
    a_.reserve(static_cast<std::size_t>(12) * t_.k * 6 * nc);
    out_.reserve(std::min(kOutDoubles, static_cast<std::size_t>(12) * t_.k * t_.leaves));
  }
  if (s_.k > 0) p_.reserve(static_cast<std::size_t>(2) * nc * s_.k);
}

void LatticeLeaves::p2m(const FarPlan& f, FarWork& w, cudaStream_t s) {
  const int nc = cidx(f.p + 1, 0), ld = 6 * nc;
  p2m_matrix_kernel<<<s_.k, f.p + 1, 0, s>>>(f.scells, s_.leaf0, f.xs, f.p, p_.data());
  VH_CHECK_LAUNCH();
  const double* alpha = reinterpret_cast<const double*>(f.alpha + s_.begin0);
  double* M = reinterpret_cast<double*>(w.M.data()) + static_cast<long long>(s_.row0) * ld;
  for (int a = 0; a < 3; ++a)
    dgemm_gpu(2 * nc, s_.leaves, s_.k, p_.data(), 2 * nc, alpha + a, 4, 4 * s_.k, M + 2 * a * nc, ld, s);
}

void LatticeLeaves::l2p(const FarPlan& f, const FarWork& w, const void* near, bool near_double, const MeanTerms* mean,
                        double* u_out, double* grad_out, cudaStream_t s) {
  const int nc = cidx(f.p + 1, 0), ld = 6 * nc, rows = 12 * t_.k;
  constexpr int kThreads = 32;  // the matrix's blocks: above 48 KiB (p >= 17) they must ask for it
  const std::size_t shm = l2p_shared_bytes(f.p, kThreads) + 8 + 3 * nc * sizeof(double2);
  if (shm > 48 * 1024)
    VH_CHECK_CUDA(
        cudaFuncSetAttribute(&l2p_matrix_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shm)));
  l2p_matrix_kernel<<<ld, kThreads, shm, s>>>(f.tcells, t_.leaf0, f.xt, t_.k, f.p, a_.data());
  VH_CHECK_LAUNCH();
  const double* L = reinterpret_cast<const double*>(w.L.data()) + static_cast<long long>(t_.row0) * ld;
  const int run = static_cast<int>(kOutDoubles / rows);  // leaves a product
  const bool dbl = near && near_double;
  for (int b = 0; b < t_.leaves; b += run) {
    const int nb = std::min(run, t_.leaves - b);
    dgemm_gpu(rows, nb, ld, a_.data(), rows, L + static_cast<long long>(b) * ld, 1, ld, out_.data(), rows, s);
    const long long first = t_.begin0 + static_cast<long long>(b) * t_.k, count = static_cast<long long>(nb) * t_.k;
    const int blocks = static_cast<int>((count + 255) / 256);
    if (dbl)
      l2p_store_kernel<double><<<blocks, 256, 0, s>>>(first, count, out_.data(), f.xt, static_cast<const double*>(near),
                                                      f.perm, mean, f.out_first, f.out_count, u_out, grad_out);
    else
      l2p_store_kernel<float><<<blocks, 256, 0, s>>>(first, count, out_.data(), f.xt, static_cast<const float*>(near),
                                                     f.perm, mean, f.out_first, f.out_count, u_out, grad_out);
    VH_CHECK_LAUNCH();
  }
}

}  // namespace vh::fmm
