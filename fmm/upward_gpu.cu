// The GPU far field's upward pass: P2M at the source leaves, M2M level by level (far_gpu.h for
// the layout, expansions.h for the formulas, expansions_kernel.h for the recurrences).  One
// thread block per cell, every output coefficient one owner, fixed summation order.
#include <algorithm>

#include "base/cuda_check.h"
#include "fmm/far_gpu_device.h"

namespace vh::fmm {

namespace {

// ------------------------------------------------------------------------------------ P2M
// Block per source leaf; chunks of `chunk` particles: the block's threads compute the columns
// (particle i, order m) of R of the chunk's particles into shared memory (m >= 0 storage; each
// column p steps of the recurrence, harmonic_column), then thread o = (a, c) sums q_a R_c.  A
// thread per particle running the whole triangle (harmonic_row_up, the same values) left the
// other warps waiting: on an H200 at 2^21 turbulent blobs 4.6 ms (p 10) and 14.0 ms (p 12),
// latency-bound at 11-17 % of the SM's throughput (bench/RESULTS.md, 2026-11-29 "the P2M by
// columns").  The columns' recurrence multiplies by the reciprocals' table (Reciprocal) where
// the host divides: at 2^24 24.6 -> 7.0 ms (2026-12-02 "the regular harmonics without
// divisions").  With `own` (the upward pass shared over ranks, FarPlan::own) only this rank's
// particles count: a leaf without any is skipped (its M stays zero), the others' strengths in
// a mixed leaf are taken as zero.  M's rows: FarPlan::rows.
__global__ void p2m_kernel(const int* __restrict__ leaves, const GCell* __restrict__ cells,
                           const double4_32a* __restrict__ x, const double4_32a* __restrict__ alpha,
                           const int* __restrict__ own, const int* __restrict__ rows, int p, int chunk,
                           double2* __restrict__ M) {
  extern __shared__ double2 sh[];
  const int nc = cidx(p + 1, 0);
  double2* R = sh;                                            // [chunk][nc]
  double* q = reinterpret_cast<double*>(R + chunk * nc);     // [chunk][3]
  const GCell C = cells[leaves[blockIdx.x]];
  const long long row = row_of(rows, leaves[blockIdx.x]);
  if ((own && own[C.end] == own[C.begin]) || row < 0) return;
  const int o = threadIdx.x, a = o / nc, c = o - a * nc;
  double2 acc = make_double2(0, 0);
  for (int b = C.begin; b < C.end; b += chunk) {
    const int n = min(chunk, C.end - b);
    for (int w = threadIdx.x; w < n * (p + 1); w += blockDim.x) {
      const int i = w / (p + 1), m = w - i * (p + 1);
      const double4_32a xi = x[b + i];
      double2* Ri = R + i * nc;
      harmonic_column<false>(xi.x - C.cx, xi.y - C.cy, xi.z - C.cz, p, m,
                             [&](int l, double re, double im) { Ri[cidx(l, m)] = make_double2(re, im); });
    }
    if (threadIdx.x < n) {
      const int s = b + threadIdx.x;
      const double4_32a ai = !own || own[s + 1] > own[s] ? alpha[s] : make_double4_32a(0, 0, 0, 0);
      q[3 * threadIdx.x + 0] = ai.x;
      q[3 * threadIdx.x + 1] = ai.y;
      q[3 * threadIdx.x + 2] = ai.z;
    }
    __syncthreads();
    if (a < 3)
      for (int i = 0; i < n; ++i) {
        const double2 r = R[i * nc + c];
        const double qa = q[3 * i + a];
        acc.x += qa * r.x;
        acc.y += qa * r.y;
      }
    __syncthreads();
  }
  if (a < 3) M[row * 3 * nc + o] = acc;
}

// ------------------------------------------------------------------------------------ M2M
// Block per parent cell of one level: P_lm = sum over children sum_jk R_jk(d) M_{l-j, m-k}
// (m2m_terms, the children's terms one after the other).  With `own`, a cell without any of
// this rank's particles is skipped: its children's multipoles are all zero; so are those of
// the children M keeps no row for (FarPlan::rows: they hold none of this rank's particles).
__global__ void m2m_kernel(const int* __restrict__ parents, const int* __restrict__ first_child,
                           const int* __restrict__ nchild, const GCell* __restrict__ cells,
                           const int* __restrict__ own, const int* __restrict__ rows, int p,
                           double2* __restrict__ M) {
  extern __shared__ double2 sh[];
  const int nc = cidx(p + 1, 0), nf = (p + 1) * (p + 1);
  double2* Rf = sh;        // [nf]
  double2* Mf = sh + nf;   // [3][nf]
  const int P = parents[blockIdx.x];
  const GCell C = cells[P];
  const long long row = row_of(rows, P);
  if ((own && own[C.end] == own[C.begin]) || row < 0) return;
  const int o = threadIdx.x, a = o / nc;
  int l = 0, m = 0;
  if (a < 3) lm_of(o - a * nc, l, m);
  double2 acc = make_double2(0, 0);
  for (int ch = first_child[P]; ch < first_child[P] + nchild[P]; ++ch) {
    const long long hrow = row_of(rows, ch);
    if (hrow < 0) continue;  // the same for every thread of the block
    const GCell H = cells[ch];
    if (threadIdx.x <= p) regular_column(H.cx - C.cx, H.cy - C.cy, H.cz - C.cz, p, threadIdx.x, Rf);
    stage_full(M + hrow * 3 * nc, p, nc, Mf, false, threadIdx.x, blockDim.x);
    __syncthreads();
    if (a < 3) m2m_output(l, m, Rf, Mf + a * nf, acc.x, acc.y);
    __syncthreads();
  }
  if (a < 3) {
    double2& out = M[row * 3 * nc + o];
    out = make_double2(out.x + acc.x, out.y + acc.y);
  }
}

}  // namespace

void far_clear_multipoles(const FarPlan& f, FarWork& w, cudaStream_t s) {
  const std::size_t count = multipole_rows(f) * 3 * cidx(f.p + 1, 0);
  w.M.reserve(count);
  if (count) VH_CHECK_CUDA(cudaMemsetAsync(w.M.data(), 0, count * sizeof(double2), s));
}

void far_p2m(const FarPlan& f, FarWork& w, cudaStream_t s) {
  if (f.n_src_leaves == 0) return;
  const int nc = cidx(f.p + 1, 0);
  // Chunks of particles: as many as fit 40 KB of shared memory, at most 32.
  const int chunk =
      std::max(1, std::min(32, static_cast<int>((40 * 1024) / (nc * sizeof(double2) + 3 * sizeof(double)))));
  const std::size_t shm = chunk * (nc * sizeof(double2) + 3 * sizeof(double));
  p2m_kernel<<<f.n_src_leaves, coef_threads(f.p), shm, s>>>(f.src_leaves, f.scells, f.xs, f.alpha, f.own, f.rows, f.p,
                                                            chunk, w.M.data());
  VH_CHECK_LAUNCH();
}

void far_m2m(const FarPlan& f, FarWork& w, cudaStream_t s, const LatticeLevels* levels) {
  const std::size_t shm = 4 * (f.p + 1) * (f.p + 1) * sizeof(double2);
  for (std::size_t i = 0; i < f.m2m_levels.size(); ++i) {
    if (levels && levels->m2m(f, w, static_cast<int>(i), s)) continue;
    const auto& lv = f.m2m_levels[i];
    if (lv.second == 0) continue;  // none of this rank's (evaluate_own)
    m2m_kernel<<<lv.second, coef_threads(f.p), shm, s>>>(f.parents + lv.first, f.first_child, f.nchild,
                                                         f.scells, f.own, f.rows, f.p, w.M.data());
    VH_CHECK_LAUNCH();
  }
}

}  // namespace vh::fmm
