// The GPU far field's downward pass: L2L level by level and L2P at the target leaves, which adds
// the near-field sums and the periodic mean correction and writes u and grad u in the targets'
// input order (far_gpu.h for the layout, expansions.h and expansions_kernel.h for the formulas).
#include "base/cuda_check.h"
#include "fmm/far_gpu_device.h"

namespace vh::fmm {

namespace {

// ------------------------------------------------------------------------------------ L2L
// Block per child cell of one level, thread per output (a, j, k): l2l_terms over n = 0 .. p - j
// with R(d) and the parent's expansion staged in the full layout.  L's rows: FarPlan::rows.
__global__ void l2l_kernel(const int* __restrict__ children, const GCell* __restrict__ cells,
                           const int* __restrict__ rows, int p, double2* __restrict__ L) {
  extern __shared__ double2 sh[];
  const int nc = cidx(p + 1, 0), nf = (p + 1) * (p + 1);
  double2* Rf = sh;
  double2* Lf = sh + nf;
  const int c = children[blockIdx.x];
  const GCell C = cells[c];
  const GCell P = cells[C.parent];
  const long long row = row_of(rows, c), prow = row_of(rows, C.parent);
  if (row < 0 || prow < 0) return;  // never for a cell of this rank's targets and its parent
  if (threadIdx.x <= p) regular_column(C.cx - P.cx, C.cy - P.cy, C.cz - P.cz, p, threadIdx.x, Rf);
  stage_full(L + prow * 3 * nc, p, nc, Lf, false, threadIdx.x, blockDim.x);
  __syncthreads();
  const int o = threadIdx.x, a = o / nc;
  if (a >= 3) return;
  int j = 0, k = 0;
  lm_of(o - a * nc, j, k);
  double2 acc = make_double2(0, 0);
  l2l_output(p, j, k, Lf + a * nf, Rf, acc.x, acc.y);
  double2& out = L[row * 3 * nc + o];
  out = make_double2(out.x + acc.x, out.y + acc.y);
}

// ------------------------------------------------------------------------------------ L2P
// Block per target leaf, thread per target: l2p_at (far_gpu_device.h) on the leaf's local
// expansion staged in the full layout, then l2p_store.  Targets outside the output window
// (FarPlan::out_first, out_count) are skipped.
template <class N>
__global__ void l2p_kernel(const int* __restrict__ leaves, const GCell* __restrict__ cells,
                           const double4_32a* __restrict__ x, int p, const int* __restrict__ lrows,
                           const double2* __restrict__ L,
                           const N* __restrict__ near, const int* __restrict__ perm, const MeanTerms* __restrict__ mc,
                           long long out_first, long long out_count, double* __restrict__ u_out,
                           double* __restrict__ grad_out) {
  extern __shared__ double2 sh[];
  const int nc = cidx(p + 1, 0), nf = (p + 1) * (p + 1);
  double2* Lf = sh;  // [3][nf]
  double* rows = reinterpret_cast<double*>(sh + 3 * nf) + threadIdx.x * l2p_rows_stride(p);
  const int cell = leaves[blockIdx.x];
  const GCell C = cells[cell];
  const long long row = row_of(lrows, cell);
  if (row < 0) return;  // never for a leaf of this rank's targets
  stage_full(L + row * 3 * nc, p, nc, Lf, false, threadIdx.x, blockDim.x);
  __syncthreads();
  for (int i = C.begin + threadIdx.x; i < C.end; i += blockDim.x) {
    const long long o = perm[i] - out_first;
    if (o < 0 || o >= out_count) continue;  // another rank's target (FarPlan::out_first)
    const double4_32a xi = x[i];
    double r[12];
    l2p_at(Lf, p, xi.x - C.cx, xi.y - C.cy, xi.z - C.cz, rows, r);
    l2p_store(r, i, o, xi, near, mc, u_out, grad_out);
  }
}

}  // namespace

void far_l2l(const FarPlan& f, FarWork& w, cudaStream_t s, const LatticeLevels* levels) {
  const std::size_t shm = 4 * (f.p + 1) * (f.p + 1) * sizeof(double2);
  for (std::size_t i = 0; i < f.l2l_levels.size(); ++i) {
    if (levels && levels->l2l(f, w, static_cast<int>(i), s)) continue;
    const auto& lv = f.l2l_levels[i];
    if (lv.second == 0) continue;  // none of this rank's (evaluate_own)
    l2l_kernel<<<lv.second, coef_threads(f.p), shm, s>>>(f.children + lv.first, f.tcells, f.rows, f.p,
                                                          w.L.data());
    VH_CHECK_LAUNCH();
  }
}

void far_l2p(const FarPlan& f, const FarWork& w, const void* near, bool near_double, const MeanTerms* mean,
             double* u_out, double* grad_out, cudaStream_t s) {
  if (f.n_tgt_leaves == 0) return;
  constexpr int kThreads = 64;
  const std::size_t shm = l2p_shared_bytes(f.p, kThreads);
  // Above 48 KiB (p >= 13) a kernel must ask for its shared memory; the launch's kernel only.
  const bool dbl = near && near_double;
  if (shm > 48 * 1024) {
    const void* k =
        dbl ? reinterpret_cast<const void*>(&l2p_kernel<double>) : reinterpret_cast<const void*>(&l2p_kernel<float>);
    VH_CHECK_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shm)));
  }
  if (dbl)
    l2p_kernel<double><<<f.n_tgt_leaves, kThreads, shm, s>>>(f.tgt_leaves, f.tcells, f.xt, f.p, f.rows,
                                                             w.L.data(), static_cast<const double*>(near), f.perm, mean,
                                                             f.out_first, f.out_count, u_out, grad_out);
  else
    l2p_kernel<float><<<f.n_tgt_leaves, kThreads, shm, s>>>(f.tgt_leaves, f.tcells, f.xt, f.p, f.rows,
                                                            w.L.data(), static_cast<const float*>(near), f.perm, mean,
                                                            f.out_first, f.out_count, u_out, grad_out);
  VH_CHECK_LAUNCH();
}

}  // namespace vh::fmm
