// The octree built on the device from sorted keys (tree_gpu.h), and the cells' extents measured
// on the device (also for SortedSourcesGpu::tree's host-split cells).
#include "base/cuda_check.h"
#include "fmm/tree_gpu.h"

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "base/device_buffer.h"
#include "fmm/far_gpu_device.h"
#include "fmm/morton.h"
#include "fmm/particles_gpu.h"
#include "fmm/profile.h"
#include "fmm/traverse_gpu_device.h"

namespace vh::fmm {

namespace {

constexpr int kBlock = 256;
int blocks_for(long long n) { return std::max(1, static_cast<int>((n + kBlock - 1) / kBlock)); }

// A cell while the tree is split: split_cells' fields.
struct DCell {
  double c[3];
  int begin, end, child, nchild, level, parent;
};

// Per cell of the level being split: its children and whether it has any.
struct Cnt2 {
  int children, parents;
};
struct Cnt2Sum {
  __host__ __device__ Cnt2 operator()(const Cnt2& a, const Cnt2& b) const {
    return Cnt2{a.children + b.children, a.parents + b.parents};
  }
};

// split_cells' loop body for cell lb + k: octant bounds by binary search (std::partition_point
// on "digit <= oct" from the previous bound), the number of non-empty octants.  cnt[m] = 0 so
// that the exclusive scan over m + 1 entries ends with the level's totals.
__global__ void split_count_kernel(int m, int lb, const DCell* __restrict__ cells,
                                   const std::uint64_t* __restrict__ key, int ncrit, int min_level, bool fill,
                                   int* __restrict__ bounds, Cnt2* __restrict__ cnt) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k > m) return;
  if (k == m) {
    cnt[m] = Cnt2{0, 0};
    return;
  }
  const DCell c = cells[lb + k];
  int nch = 0;
  int* b = bounds + 9 * static_cast<long long>(k);
  const bool all = fill && c.level < min_level;  // the eight children, empty ones included
  if ((c.end - c.begin > ncrit || (c.level < min_level && (all || c.end > c.begin))) && c.level < morton::kBits) {
    const int shift = 3 * (morton::kBits - 1 - c.level);
    b[0] = c.begin;
    for (int oct = 0; oct < 8; ++oct) {
      int lo = b[oct], hi = c.end;  // first index in [lo, hi) whose digit exceeds oct
      while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (static_cast<int>((key[mid] >> shift) & 7) <= oct) lo = mid + 1;
        else hi = mid;
      }
      b[oct + 1] = lo;
      if (all || b[oct + 1] > b[oct]) ++nch;
    }
  }
  cnt[k] = Cnt2{nch, nch > 0 ? 1 : 0};
}

// The children of the level's cells at le + off[k].children, in octant order (split_cells' second
// loop), and the parents' indices at parents[off[k].parents].
__global__ void split_write_kernel(int m, int lb, int le, DCell* __restrict__ cells, const int* __restrict__ bounds,
                                   const Cnt2* __restrict__ off, double half_child, int* __restrict__ parents) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= m) return;
  const Cnt2 o = off[k], o1 = off[k + 1];
  const int nch = o1.children - o.children;
  if (nch == 0) return;
  const int ci = lb + k;
  DCell& c = cells[ci];
  int next = le + o.children;
  c.child = next;
  c.nchild = nch;
  parents[o.parents] = ci;
  const int* b = bounds + 9 * static_cast<long long>(k);
  for (int oct = 0; oct < 8; ++oct) {
    if (b[oct + 1] == b[oct] && nch < 8) continue;  // eight: every octant (split_count's fill)
    DCell ch;
    for (int d = 0; d < 3; ++d) ch.c[d] = add_rn(c.c[d], ((oct >> d) & 1) ? half_child : -half_child);
    ch.begin = b[oct];
    ch.end = b[oct + 1];
    ch.child = -1;
    ch.nchild = 0;
    ch.level = c.level + 1;
    ch.parent = ci;
    cells[next++] = ch;
  }
}

// ----------------------------------------------------------------------------- extents
// Cell extents (the device twin of fmm::cell_extents, tree.cpp): a warp per item, an item being
// up to kExtentChunk consecutive particles of one cell; the warp's min/max go into the cell by
// atomics on order-preserving integer images of the doubles (min and max are exact, so the
// result does not depend on the order).  Per cell 8 values: min x, y, z, then -max x, y, z (as
// minima), then max r^2 and max sigma.  r^2 is summed as on the CPU, without fused multiply-adds.
constexpr int kExtentChunk = 1024;

__global__ void extents_kernel(int nitems, const int4* __restrict__ items, const double4_32a* __restrict__ centre,
                               const double4_32a* __restrict__ xs4, unsigned long long* __restrict__ ext) {
  const int item = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (item >= nitems) return;
  const int4 it = items[item];  // (cell, begin, end, -)
  const double4_32a c = centre[it.x];
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300}, r2 = 0, smax = 0;
  for (int i = it.y + lane; i < it.z; i += 32) {
    const double4_32a p = xs4[i];
    const double q[3] = {p.x, p.y, p.z}, cc[3] = {c.x, c.y, c.z};
    double d2 = 0;
    for (int d = 0; d < 3; ++d) {
      lo[d] = fmin(lo[d], q[d]);
      hi[d] = fmax(hi[d], q[d]);
      const double t = sub_rn(q[d], cc[d]);
      d2 = add_rn(d2, mul_rn(t, t));
    }
    r2 = fmax(r2, d2);
    smax = fmax(smax, p.w);
  }
  for (int off = 16; off > 0; off >>= 1) {
    for (int d = 0; d < 3; ++d) {
      lo[d] = fmin(lo[d], __shfl_down_sync(0xffffffffu, lo[d], off));
      hi[d] = fmax(hi[d], __shfl_down_sync(0xffffffffu, hi[d], off));
    }
    r2 = fmax(r2, __shfl_down_sync(0xffffffffu, r2, off));
    smax = fmax(smax, __shfl_down_sync(0xffffffffu, smax, off));
  }
  if (lane == 0) {
    unsigned long long* e = ext + 8 * static_cast<long long>(it.x);
    for (int d = 0; d < 3; ++d) {
      atomicMin(e + d, ordered(lo[d]));
      atomicMin(e + 3 + d, ordered(-hi[d]));
    }
    atomicMax(e + 6, ordered(r2));
    atomicMax(e + 7, ordered(smax));
  }
}

// Per cell: its items (chunks of kExtentChunk points), its centre, its extents' start values.
// nitems[ncell] = 0 for the scan's total.
__global__ void items_count_kernel(int ncell, const DCell* __restrict__ cells, int* __restrict__ nitems,
                                   double4_32a* __restrict__ centre, unsigned long long* __restrict__ ext) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c > ncell) return;
  if (c == ncell) {
    nitems[ncell] = 0;
    return;
  }
  const DCell d = cells[c];
  nitems[c] = (d.end - d.begin + kExtentChunk - 1) / kExtentChunk;
  centre[c] = make_double4_32a(d.c[0], d.c[1], d.c[2], 0.0);
  unsigned long long* e = ext + 8 * static_cast<long long>(c);
  for (int k = 0; k < 6; ++k) e[k] = ordered(1e300);  // minima of x and of -x
  e[6] = e[7] = ordered(0.0);
}

__global__ void items_fill_kernel(int ncell, const DCell* __restrict__ cells, const int* __restrict__ first,
                                  int4* __restrict__ items) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= ncell) return;
  const DCell d = cells[c];
  int k = first[c];
  for (int b = d.begin; b < d.end; b += kExtentChunk) items[k++] = make_int4(c, b, min(d.end, b + kExtentChunk), 0);
}

// The traversal's and the far field's records, the child links, the leaf flags.  leaf[ncell] = 0
// for the scan's total.
__global__ void finish_cells_kernel(int ncell, const DCell* __restrict__ cells,
                                    const unsigned long long* __restrict__ ext, TCell* __restrict__ tc,
                                    GCell* __restrict__ gc, int* __restrict__ first_child, int* __restrict__ nchild,
                                    bool fill, int* __restrict__ leaf) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c > ncell) return;
  if (c == ncell) {
    leaf[ncell] = 0;
    return;
  }
  const DCell d = cells[c];
  const unsigned long long* e = ext + 8 * static_cast<long long>(c);
  TCell t;
  for (int k = 0; k < 3; ++k) {
    t.c[k] = d.c[k];
    t.lo[k] = from_ordered(e[k]);
    t.hi[k] = -from_ordered(e[3 + k]);
  }
  t.r = sqrt_rn(from_ordered(e[6]));
  t.smax = from_ordered(e[7]);
  t.begin = d.begin;
  t.end = d.end;
  t.child = d.child;
  t.nchild = d.nchild;
  tc[c] = t;
  gc[c] = GCell{d.c[0], d.c[1], d.c[2], d.begin, d.end, d.parent, d.level};
  first_child[c] = d.child;
  nchild[c] = d.nchild;
  leaf[c] = (d.nchild == 0 && (d.end > d.begin || fill)) ? 1 : 0;
}

__global__ void leaves_kernel(int ncell, const int* __restrict__ leaf, const int* __restrict__ pos,
                              int* __restrict__ leaves, int* __restrict__ leaf_of) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= ncell) return;
  leaf_of[c] = leaf[c] ? pos[c] : -1;
  if (leaf[c]) leaves[pos[c]] = c;
}

// Subtree sizes of the cells [b, e) of one level from their children's (deeper levels first).
__global__ void subtree_kernel(int b, int e, const DCell* __restrict__ cells, int* __restrict__ size) {
  const int c = b + blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= e) return;
  const DCell d = cells[c];
  int s = 1;
  for (int k = d.child; k < d.child + d.nchild; ++k) s += size[k];
  size[c] = s;
}

// Pre-order ranks of the children of the cells [b, e) (the root's rank 0 set first): children in
// index order, each after the subtrees of its elder siblings.
__global__ void rank_kernel(int b, int e, const DCell* __restrict__ cells, const int* __restrict__ size,
                            int* __restrict__ rank, int* __restrict__ r2c) {
  const int c = b + blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= e) return;
  const DCell d = cells[c];
  const int r = rank[c];
  r2c[r] = c;
  int next = r + 1;
  for (int k = d.child; k < d.child + d.nchild; ++k) {
    rank[k] = next;
    next += size[k];
  }
}

__global__ void iota_from_kernel(int n, int first, int* __restrict__ v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = first + i;
}

template <class T, class Op> void exclusive_scan(CubScratch& tmp, const T* in, T* out, int n, Op op, T init) {
  std::size_t bytes = 0;
  VH_CHECK_CUDA(cub::DeviceScan::ExclusiveScan(nullptr, bytes, in, out, op, init, n));
  VH_CHECK_CUDA(cub::DeviceScan::ExclusiveScan(tmp.get(bytes), bytes, in, out, op, init, n));
}

void exclusive_sum(CubScratch& tmp, const int* in, int* out, int n) {
  std::size_t bytes = 0;
  VH_CHECK_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n));
  VH_CHECK_CUDA(cub::DeviceScan::ExclusiveSum(tmp.get(bytes), bytes, in, out, n));
}

// The extents of the cells [0, ncell) (DCell array) into ext (8 per cell) from the sorted
// positions: items counted, placed, measured.
void measure(int ncell, const DCell* cells, const double4_32a* xs4, DeviceArray<unsigned long long>& ext) {
  ext.reserve(8 * static_cast<std::size_t>(std::max(1, ncell)));
  DeviceArray<int> nitems(ncell + 1), first(ncell + 1);
  DeviceArray<double4_32a> centre(std::max(1, ncell));
  DeviceArray<int4> items;
  CubScratch tmp;
  items_count_kernel<<<blocks_for(ncell + 1), kBlock>>>(ncell, cells, nitems.data(), centre.data(), ext.data());
  VH_CHECK_LAUNCH();
  exclusive_sum(tmp, nitems.data(), first.data(), ncell + 1);
  const int n_items = download_one(first.data() + ncell);
  if (n_items == 0) return;
  items.resize(n_items);
  items_fill_kernel<<<blocks_for(ncell), kBlock>>>(ncell, cells, first.data(), items.data());
  VH_CHECK_LAUNCH();
  extents_kernel<<<(n_items + 7) / 8, 256>>>(n_items, items.data(), centre.data(), xs4, ext.data());
  VH_CHECK_LAUNCH();
}

}  // namespace

struct DeviceTree::Impl {
  int n = 0, ncell = 0, nlevel = 0, nleaf = 0;
  double half0 = 0;  // the root's half side
  std::vector<int> level_begin;  // first cell of each level, then ncell
  DeviceArray<DCell> dcells;
  DeviceArray<int> bounds, parents;
  DeviceArray<Cnt2> cnt, off;
  DeviceArray<unsigned long long> ext;
  CubScratch tmp;
  DeviceArray<TCell> tc;
  DeviceArray<GCell> gc;
  DeviceArray<int> fchild, nch, rank, r2c, size, leaf, leafpos, leaves, leaf_of, children;
  std::vector<std::pair<int, int>> m2m_levels, l2l_levels;
};

DeviceTree::DeviceTree() : impl_(std::make_unique<Impl>()) {}
DeviceTree::~DeviceTree() = default;

void DeviceTree::build(const SortedSourcesGpu& pts, int ncrit, int min_level, bool fill) {
  Impl& m = *impl_;
  StepTimer st("device tree");
  const int n = pts.size();
  const Vec3& center = pts.center();
  const double half = pts.half();
  const std::uint64_t* key = static_cast<const std::uint64_t*>(pts.keys());
  m.n = n;
  m.half0 = half;
  // The root, then level by level.
  DCell root;
  for (int d = 0; d < 3; ++d) root.c[d] = center[d];
  root.begin = 0;
  root.end = n;
  root.child = -1;
  root.nchild = 0;
  root.level = 0;
  root.parent = -1;
  m.dcells.reserve(64);
  copy_to_device(m.dcells.data(), &root, sizeof root);
  m.parents.reserve(64);
  m.level_begin.assign(1, 0);
  std::vector<std::pair<int, int>> parent_levels;  // (offset, count) per level, top-down
  int lb = 0, le = 1, npar = 0;
  double half_child = half;
  while (lb < le) {
    const int mm = le - lb;
    half_child *= 0.5;  // split_cells' ch.half = 0.5 * c.half, exact
    m.bounds.reserve(9 * static_cast<std::size_t>(mm));
    m.cnt.reserve(mm + 1);
    m.off.reserve(mm + 1);
    split_count_kernel<<<blocks_for(mm + 1), kBlock>>>(mm, lb, m.dcells.data(), key, ncrit, min_level,
                                                       fill, m.bounds.data(), m.cnt.data());
    VH_CHECK_LAUNCH();
    exclusive_scan(m.tmp, m.cnt.data(), m.off.data(), mm + 1, Cnt2Sum{}, Cnt2{0, 0});
    const Cnt2 tot = download_one(m.off.data() + mm);
    if (tot.children == 0) {
      m.level_begin.push_back(le);
      break;
    }
    grow_keep(m.dcells, le, static_cast<std::size_t>(le) + tot.children);
    grow_keep(m.parents, npar, static_cast<std::size_t>(npar) + tot.parents);
    split_write_kernel<<<blocks_for(mm), kBlock>>>(mm, lb, le, m.dcells.data(), m.bounds.data(), m.off.data(),
                                                   half_child, m.parents.data() + npar);
    VH_CHECK_LAUNCH();
    parent_levels.push_back({npar, tot.parents});
    npar += tot.parents;
    m.level_begin.push_back(le);
    lb = le;
    le += tot.children;
  }
  if (m.level_begin.back() != le) m.level_begin.push_back(le);
  m.ncell = le;
  m.nlevel = static_cast<int>(m.level_begin.size()) - 1;
  st.mark("split");
  const int nc = m.ncell;
  const DCell* dc = m.dcells.data();
  measure(nc, dc, static_cast<const double4_32a*>(pts.positions_sigma()), m.ext);
  st.mark("extents");
  // Records, links, leaves.
  m.tc.reserve(nc);
  m.gc.reserve(nc);
  m.fchild.reserve(nc);
  m.nch.reserve(nc);
  m.leaf.reserve(nc + 1);
  m.leafpos.reserve(nc + 1);
  m.leaf_of.reserve(nc);
  finish_cells_kernel<<<blocks_for(nc + 1), kBlock>>>(nc, dc, m.ext.data(), m.tc.data(), m.gc.data(),
                                                      m.fchild.data(), m.nch.data(), fill, m.leaf.data());
  VH_CHECK_LAUNCH();
  exclusive_sum(m.tmp, m.leaf.data(), m.leafpos.data(), nc + 1);
  m.nleaf = download_one(m.leafpos.data() + nc);
  m.leaves.reserve(std::max(1, m.nleaf));
  leaves_kernel<<<blocks_for(nc), kBlock>>>(nc, m.leaf.data(), m.leafpos.data(), m.leaves.data(), m.leaf_of.data());
  VH_CHECK_LAUNCH();
  // Pre-order ranks: subtree sizes bottom-up, ranks top-down.
  m.size.reserve(nc);
  m.rank.reserve(nc);
  m.r2c.reserve(nc);
  for (int l = m.nlevel - 1; l >= 0; --l) {
    const int b = m.level_begin[l], e = m.level_begin[l + 1];
    subtree_kernel<<<blocks_for(e - b), kBlock>>>(b, e, dc, m.size.data());
    VH_CHECK_LAUNCH();
  }
  VH_CHECK_CUDA(cudaMemset(m.rank.data(), 0, sizeof(int)));  // the root's rank
  for (int l = 0; l < m.nlevel; ++l) {
    const int b = m.level_begin[l], e = m.level_begin[l + 1];
    rank_kernel<<<blocks_for(e - b), kBlock>>>(b, e, dc, m.size.data(), m.rank.data(), m.r2c.data());
    VH_CHECK_LAUNCH();
  }
  // Level lists of the far field: parents bottom-up, children (cells 1 ..) top-down.
  m.m2m_levels.clear();
  for (auto it = parent_levels.rbegin(); it != parent_levels.rend(); ++it)
    if (it->second > 0) m.m2m_levels.push_back(*it);
  m.l2l_levels.clear();
  for (int l = 1; l < m.nlevel; ++l)
    m.l2l_levels.push_back({m.level_begin[l] - 1, m.level_begin[l + 1] - m.level_begin[l]});
  m.children.reserve(std::max(1, nc - 1));
  if (nc > 1) {
    iota_from_kernel<<<blocks_for(nc - 1), kBlock>>>(nc - 1, 1, m.children.data());
    VH_CHECK_LAUNCH();
  }
  VH_CHECK_CUDA(cudaDeviceSynchronize());
  st.mark("records+ranks");
}

int DeviceTree::cells() const { return impl_->ncell; }
int DeviceTree::levels() const { return impl_->nlevel; }
int DeviceTree::points() const { return impl_->n; }
const void* DeviceTree::tcells() const { return impl_->tc.data(); }
const void* DeviceTree::gcells() const { return impl_->gc.data(); }
const int* DeviceTree::first_child() const { return impl_->fchild.data(); }
const int* DeviceTree::nchild() const { return impl_->nch.data(); }
const int* DeviceTree::rank() const { return impl_->rank.data(); }
const int* DeviceTree::rank_to_cell() const { return impl_->r2c.data(); }
const int* DeviceTree::leaves() const { return impl_->leaves.data(); }
const int* DeviceTree::leaf_of() const { return impl_->leaf_of.data(); }
int DeviceTree::n_leaves() const { return impl_->nleaf; }
const int* DeviceTree::parents() const { return impl_->parents.data(); }
const std::vector<std::pair<int, int>>& DeviceTree::m2m_levels() const { return impl_->m2m_levels; }
const int* DeviceTree::children() const { return impl_->children.data(); }
const std::vector<std::pair<int, int>>& DeviceTree::l2l_levels() const { return impl_->l2l_levels; }

std::vector<Cell> DeviceTree::download_cells() const {
  const Impl& m = *impl_;
  std::vector<TCell> tc(m.ncell);
  std::vector<GCell> gc(m.ncell);
  m.tc.download(tc.data(), m.ncell);
  m.gc.download(gc.data(), m.ncell);
  std::vector<Cell> cells(m.ncell);
  for (int c = 0; c < m.ncell; ++c) {
    Cell& o = cells[c];
    for (int d = 0; d < 3; ++d) {
      o.center[d] = tc[c].c[d];
      o.bmin[d] = tc[c].lo[d];
      o.bmax[d] = tc[c].hi[d];
    }
    o.half = std::ldexp(m.half0, -gc[c].level);  // split_cells halves it level by level, exactly
    o.radius = tc[c].r;
    o.sigma_max = tc[c].smax;
    o.begin = tc[c].begin;
    o.end = tc[c].end;
    o.child = tc[c].child;
    o.nchild = tc[c].nchild;
    o.level = gc[c].level;
    o.parent = gc[c].parent;
  }
  return cells;
}

void measure_cells_gpu(std::vector<Cell>& cells, const SortedSourcesGpu& pts) {
  const int ncell = static_cast<int>(cells.size());
  if (ncell == 0) return;
  std::vector<DCell> dc(ncell);
  for (int c = 0; c < ncell; ++c) {
    const Cell& cl = cells[c];
    for (int d = 0; d < 3; ++d) dc[c].c[d] = cl.center[d];
    dc[c].begin = cl.begin;
    dc[c].end = cl.end;
    dc[c].child = cl.child;
    dc[c].nchild = cl.nchild;
    dc[c].level = cl.level;
    dc[c].parent = cl.parent;
  }
  DeviceArray<DCell> d_cells(dc);
  DeviceArray<unsigned long long> ext;
  measure(ncell, d_cells.data(), static_cast<const double4_32a*>(pts.positions_sigma()), ext);
  std::vector<unsigned long long> e(8 * static_cast<std::size_t>(ncell));
  ext.download(e.data(), e.size());
  for (int c = 0; c < ncell; ++c) {
    Cell& cl = cells[c];
    const unsigned long long* ec = &e[8 * static_cast<std::size_t>(c)];
    for (int d = 0; d < 3; ++d) {
      cl.bmin[d] = from_ordered(ec[d]);
      cl.bmax[d] = -from_ordered(ec[3 + d]);
    }
    cl.radius = std::sqrt(from_ordered(ec[6]));
    cl.sigma_max = from_ordered(ec[7]);
  }
}

}  // namespace vh::fmm
