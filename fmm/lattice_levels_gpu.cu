// M2M and L2L as matrix products on the full levels of a uniform tree (LatticeLevels,
// far_gpu_device.h).  Per evaluation: a check of the levels (a thread per parent or child), a
// download; at each full level's turn on the stream the eight octants' matrices T_o from the
// first parent's children, then 24 matrix products (dgemm_gpu) over all the level's parents.
//
// Layouts (column-major).  A cell's expansion is 6 ncoef(p) doubles, component a's 2 ncoef(p) of
// them from 2 a ncoef(p) on, index 2 c + (0 re, 1 im) for stored coefficient c (FarWork's M and
// L: cell i's at 6 ncoef i).  Parent q of a full level is cell parent0 + q, its child in octant o
// cell child0 + 8 q + o.
//   M2M: M[parent q, a] += T_o M[child (q, o), a]    T_o: 2 ncoef x 2 ncoef, for o < 8, a < 3
//   L2L: L[child (q, o), a] += T_o L[parent q, a]
// so each product's B (or C) columns are 8 cells apart.
#include "base/cuda_check.h"
#include "fmm/dgemm_gpu.h"
#include "fmm/far_gpu_device.h"
#include "fmm/lattice_leaves.h"

namespace vh::fmm {

namespace {

// found[5 i .. 5 i + 4] of level i: full (1, cleared by any parent that differs), the first
// parent, its first child, and their rows in M and L (FarPlan::rows: the rows must follow one
// another as the cells do; rows rise with the cells, so a run's last row tells).  M2M: thread
// per parent q of the level's list, the source cells' child counts and first children.
__global__ void full_up_kernel(const int* __restrict__ parents, int n, const int* __restrict__ first_child,
                               const int* __restrict__ nchild, const GCell* __restrict__ cells,
                               const int* __restrict__ rows, double tol, int* __restrict__ found) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= n) return;
  const int p0 = parents[0], f0 = first_child[p0], pq = parents[q];
  const long long rp0 = row_of(rows, p0), rf0 = row_of(rows, f0);
  if (q == 0) {
    found[1] = p0;
    found[2] = f0;
    found[3] = static_cast<int>(rp0);
    found[4] = static_cast<int>(rf0);
  }
  if (pq != p0 + q || nchild[pq] != 8 || first_child[pq] != f0 + 8 * q || rp0 < 0 || rf0 < 0 ||
      row_of(rows, pq) != rp0 + q || row_of(rows, f0 + 8 * q + 7) != rf0 + 8 * q + 7) {
    atomicAnd(found, 0);
    return;
  }
  const GCell P = cells[pq], P0 = cells[p0];
  for (int o = 0; o < 8; ++o) {
    const GCell C = cells[f0 + 8 * q + o], C0 = cells[f0 + o];
    if (!same_leaf_offset(C.cx - P.cx, C.cy - P.cy, C.cz - P.cz, C0.cx - P0.cx, C0.cy - P0.cy, C0.cz - P0.cz, tol))
      atomicAnd(found, 0);
  }
}

// L2L: thread per child j of the level's list (n of them, the parents' children in order).
__global__ void full_down_kernel(const int* __restrict__ children, int n, const GCell* __restrict__ cells,
                                 const int* __restrict__ rows, double tol, int* __restrict__ found) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const int c0 = children[0], cj = children[j];
  const GCell C0 = cells[c0];
  const long long rp0 = row_of(rows, C0.parent), rc0 = row_of(rows, c0);
  if (j == 0) {
    found[1] = C0.parent;
    found[2] = c0;
    found[3] = static_cast<int>(rp0);
    found[4] = static_cast<int>(rc0);
  }
  const GCell C = cells[cj];
  if (cj != c0 + j || C.parent != C0.parent + j / 8 || rp0 < 0 || rc0 < 0 || row_of(rows, cj) != rc0 + j ||
      row_of(rows, C.parent) != rp0 + j / 8) {
    atomicAnd(found, 0);
    return;
  }
  const GCell P = cells[C.parent], P0 = cells[C0.parent], R = cells[c0 + j % 8];
  if (!same_leaf_offset(C.cx - P.cx, C.cy - P.cy, C.cz - P.cz, R.cx - P0.cx, R.cy - P0.cy, R.cz - P0.cz, tol))
    atomicAnd(found, 0);
}

// Column e of T_o (block (e, o)), thread per output coefficient c: the per-cell kernels' sums
// (upward_gpu.cu m2m_kernel, downward_gpu.cu l2l_kernel) on the unit expansion e of component 0,
// d the offset of child o from the first parent.
template <bool Up>
__global__ void level_matrix_kernel(const GCell* __restrict__ cells, int parent0, int child0, int p,
                                    double* __restrict__ T) {
  extern __shared__ double2 sh[];
  const int nc = cidx(p + 1, 0), nf = (p + 1) * (p + 1), e = blockIdx.x, o = blockIdx.y;
  double2* Rf = sh;             // [nf]
  double2* Xf = sh + nf;        // [3][nf]
  double2* unit = sh + 4 * nf;  // [3][nc]
  for (int i = threadIdx.x; i < 3 * nc; i += blockDim.x)
    unit[i] = i == e / 2 ? make_double2(e % 2 ? 0.0 : 1.0, e % 2 ? 1.0 : 0.0) : make_double2(0, 0);
  const GCell P = cells[parent0], C = cells[child0 + o];
  if (threadIdx.x <= p) regular_column(C.cx - P.cx, C.cy - P.cy, C.cz - P.cz, p, threadIdx.x, Rf);
  __syncthreads();
  stage_full(unit, p, nc, Xf, false, threadIdx.x, blockDim.x);
  __syncthreads();
  const int c = threadIdx.x;
  if (c >= nc) return;
  int l = 0, m = 0;
  lm_of(c, l, m);
  double re = 0, im = 0;
  if constexpr (Up)
    m2m_output(l, m, Rf, Xf, re, im);
  else
    l2l_output(p, l, m, Xf, Rf, re, im);
  double* col = T + (static_cast<long long>(o) * 2 * nc + e) * 2 * nc;
  col[2 * c] = re;
  col[2 * c + 1] = im;
}

// Looks at the levels (offset, count) of `lists` with launch(first, count, found), five found
// values a level, and returns those found full with at least min_parents parents.
template <class Launch>
std::vector<LatticeLevels::Level> full_levels(const std::vector<std::pair<int, int>>& lists, int per_parent,
                                              int min_parents, DeviceArray<int>& found, const Launch& launch) {
  const std::size_t nl = lists.size();
  std::vector<LatticeLevels::Level> out(nl);
  std::vector<int> h(5 * nl, 0);
  bool any = false;
  for (std::size_t i = 0; i < nl; ++i)
    if (lists[i].second / per_parent >= min_parents && lists[i].second % per_parent == 0) {
      h[5 * i] = 1;
      any = true;
    }
  if (!any) return out;
  found.reserve(5 * nl);
  VH_CHECK_CUDA(cudaMemcpy(found.data(), h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice));
  for (std::size_t i = 0; i < nl; ++i)
    if (h[5 * i]) launch(lists[i].first, lists[i].second, found.data() + 5 * i);
  VH_CHECK_CUDA(cudaMemcpy(h.data(), found.data(), h.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < nl; ++i)
    if (h[5 * i])
      out[i] = LatticeLevels::Level{lists[i].second / per_parent, h[5 * i + 1], h[5 * i + 2], h[5 * i + 3],
                                    h[5 * i + 4]};
  return out;
}

}  // namespace

void LatticeLevels::prepare(const FarPlan& f) {
  up_.assign(f.m2m_levels.size(), Level{});
  down_.assign(f.l2l_levels.size(), Level{});
  if (!enabled_) return;
  const double tol = kLatticeLeafTolerance * f.side0;
  constexpr int kThreads = 128;
  if (!f.own)
    up_ = full_levels(f.m2m_levels, 1, min_parents_, found_, [&](int first, int n, int* found) {
      full_up_kernel<<<(n + kThreads - 1) / kThreads, kThreads>>>(f.parents + first, n, f.first_child, f.nchild,
                                                                  f.scells, f.rows, tol, found);
      VH_CHECK_LAUNCH();
    });
  down_ = full_levels(f.l2l_levels, 8, min_parents_, found_, [&](int first, int n, int* found) {
    full_down_kernel<<<(n + kThreads - 1) / kThreads, kThreads>>>(f.children + first, n, f.tcells, f.rows, tol, found);
    VH_CHECK_LAUNCH();
  });
  if (count() > 0) {
    const std::size_t n2 = 2 * static_cast<std::size_t>(cidx(f.p + 1, 0));
    t_.reserve(8 * n2 * n2);
  }
}

int LatticeLevels::count() const {
  int n = 0;
  for (const Level& l : up_) n += l.parents > 0;
  for (const Level& l : down_) n += l.parents > 0;
  return n;
}

namespace {

// T_0 ... T_7 of level v into T on stream s.
template <bool Up>
void level_matrices(const GCell* cells, const LatticeLevels::Level& v, int p, double* T, cudaStream_t s) {
  const int nc = cidx(p + 1, 0), nf = (p + 1) * (p + 1);
  const std::size_t shm = (4 * nf + 3 * nc) * sizeof(double2);
  if (shm > 48 * 1024)
    VH_CHECK_CUDA(cudaFuncSetAttribute(&level_matrix_kernel<Up>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(shm)));
  level_matrix_kernel<Up><<<dim3(2 * nc, 8), round_up32(nc), shm, s>>>(cells, v.parent0, v.child0, p, T);
  VH_CHECK_LAUNCH();
}

}  // namespace

bool LatticeLevels::m2m(const FarPlan& f, FarWork& w, int i, cudaStream_t s) const {
  if (i >= static_cast<int>(up_.size()) || up_[i].parents == 0) return false;
  level_matrices<true>(f.scells, up_[i], f.p, t_.data(), s);
  products(up_[i], f.p, reinterpret_cast<double*>(w.M.data()), true, s);
  return true;
}

bool LatticeLevels::l2l(const FarPlan& f, FarWork& w, int i, cudaStream_t s) const {
  if (i >= static_cast<int>(down_.size()) || down_[i].parents == 0) return false;
  level_matrices<false>(f.tcells, down_[i], f.p, t_.data(), s);
  products(down_[i], f.p, reinterpret_cast<double*>(w.L.data()), false, s);
  return true;
}

// The 24 products of level v on the expansions X (w.M or w.L): up, parents += T_o children;
// down, children += T_o parents.
void LatticeLevels::products(const Level& v, int p, double* X, bool up, cudaStream_t s) const {
  const int nc = cidx(p + 1, 0), n2 = 2 * nc, ld = 6 * nc;
  for (int o = 0; o < 8; ++o)
    for (int a = 0; a < 3; ++a) {
      const double* T = t_.data() + static_cast<long long>(o) * n2 * n2;
      double* parents = X + static_cast<long long>(v.parent_row0) * ld + n2 * a;
      double* children = X + static_cast<long long>(v.child_row0 + o) * ld + n2 * a;
      if (up)
        dgemm_gpu(n2, v.parents, n2, T, n2, children, 1, 8 * ld, parents, ld, s, true);
      else
        dgemm_gpu(n2, v.parents, n2, T, n2, parents, 1, ld, children, 8 * ld, s, true);
    }
}

}  // namespace vh::fmm
