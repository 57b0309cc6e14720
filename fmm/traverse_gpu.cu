// The dual tree traversal on the GPU, breadth first, and the lists in FarGpu's and P2PGpu's
// device formats; see traverse_gpu.h for the method and traverse.cpp for the serial recursion
// whose lists this reproduces entry for entry.
#include "base/cuda_check.h"
#include "fmm/traverse_gpu.h"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "base/device_buffer.h"
#include "fmm/profile.h"
#include "fmm/traverse_kernel.h"
#include "fmm/traverse_gpu_device.h"

namespace vh::fmm {

namespace {

using Key = std::uint64_t;

// Bit fields of a 64-bit word (target cell, shift, source): target above bs + bc bits, then bs
// bits of shift, bc bits of source (cell index in the frontier, pre-order rank in emitted keys).
// A mixed-shift M2L key has (target, source index, shift) in the same widths.
struct Layout {
  int bs, bc;
  __host__ __device__ Key pack(int a, int s, int b) const {
    return (Key(a) << (bs + bc)) | (Key(s) << bc) | Key(b);
  }
  __host__ __device__ int target(Key k) const { return int(k >> (bs + bc)); }
  __host__ __device__ int shift(Key k) const { return int((k >> bc) & ((Key(1) << bs) - 1)); }
  __host__ __device__ int source(Key k) const { return int(k & ((Key(1) << bc) - 1)); }
  __host__ __device__ Key pack_mixed(int a, int idx, int s) const {
    return (Key(a) << (bs + bc)) | (Key(idx) << bs) | Key(s);
  }
  __host__ __device__ int mixed_source(Key k) const { return int((k & ((Key(1) << (bs + bc)) - 1)) >> bs); }
  __host__ __device__ int mixed_shift(Key k) const { return int(k & ((Key(1) << bs) - 1)); }
};

// Bits to store the values 0 .. n - 1.
int bits_for(long long n) {
  int b = 0;
  while ((1LL << b) < n) ++b;
  return b;
}

enum : unsigned char { kM2L, kP2P, kSplitA, kSplitB, kNone };

// Per frontier pair: M2L entries, P2P entries and next-frontier pairs it makes.
struct Cnt {
  long long m2l, p2p, child;
};
struct CntSum {
  __host__ __device__ Cnt operator()(const Cnt& a, const Cnt& b) const {
    return Cnt{a.m2l + b.m2l, a.p2p + b.p2p, a.child + b.child};
  }
};

// The acceptance test (fmm/traverse_kernel.h, the host's own function and rounding).
__device__ inline bool far_pair(const TCell& A, const TCell& B, const double* s, double theta, double rcut_per_sigma) {
  return vh::fmm::far_pair(A.c, A.r, A.lo, A.hi, B.c, B.r, B.lo, B.hi, B.smax, s, theta, rcut_per_sigma);
}

struct Mac {
  double theta, rcut_per_sigma;
  long long p2p_max_pairs;
};

// Traversal::interact's decision for each frontier pair; cnt[n] = 0 so that the exclusive scan
// over n + 1 entries ends with the level's totals.
__global__ void classify_kernel(const Key* __restrict__ F, int n, Layout L, const TCell* __restrict__ T,
                                const TCell* __restrict__ S, const double* __restrict__ shifts, Mac mac,
                                unsigned char* __restrict__ code, Cnt* __restrict__ cnt) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k > n) return;
  if (k == n) {
    cnt[n] = Cnt{0, 0, 0};
    return;
  }
  const Key f = F[k];
  const int a = L.target(f), s = L.shift(f), b = L.source(f);
  const TCell& A = T[a];
  const TCell& B = S[b];
  const bool a_leaf = A.nchild == 0, b_leaf = B.nchild == 0;
  unsigned char d;
  if (far_pair(A, B, shifts + 3 * s, mac.theta, mac.rcut_per_sigma)) {
    const long long pairs = static_cast<long long>(A.end - A.begin) * (B.end - B.begin);
    d = (a_leaf && s == 0 && pairs <= mac.p2p_max_pairs) ? kP2P : kM2L;
  } else if (a_leaf && b_leaf) {
    d = kP2P;
  } else if (b_leaf || (!a_leaf && A.r >= B.r)) {
    d = kSplitA;
  } else {
    d = kSplitB;
  }
  // flatten_p2p_lists drops P2P entries of empty cells (target leaves without particles are not
  // P2P targets at all).
  if (d == kP2P && (A.end <= A.begin || B.end <= B.begin)) d = kNone;
  Cnt c{0, 0, 0};
  if (d == kM2L) c.m2l = 1;
  else if (d == kP2P) c.p2p = 1;
  else if (d == kSplitA) c.child = A.nchild;
  else if (d == kSplitB) c.child = B.nchild;
  code[k] = d;
  cnt[k] = c;
}

// Writes the entries (keys with the source's pre-order rank) and the next frontier at the
// scanned offsets.
__global__ void emit_kernel(const Key* __restrict__ F, int n, Layout L, const TCell* __restrict__ T,
                            const TCell* __restrict__ S, const int* __restrict__ rank,
                            const unsigned char* __restrict__ code, const Cnt* __restrict__ off, Key* __restrict__ m2l,
                            Key* __restrict__ p2p, Key* __restrict__ next) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  const Key f = F[k];
  const int a = L.target(f), s = L.shift(f), b = L.source(f);
  const Cnt o = off[k];
  switch (code[k]) {
    case kM2L: m2l[o.m2l] = L.pack(a, s, rank[b]); break;
    case kP2P: p2p[o.p2p] = L.pack(a, s, rank[b]); break;
    case kSplitA: {
      const TCell& A = T[a];
      for (int i = 0; i < A.nchild; ++i) next[o.child + i] = L.pack(A.child + i, s, b);
      break;
    }
    case kSplitB: {
      const TCell& B = S[b];
      for (int i = 0; i < B.nchild; ++i) next[o.child + i] = L.pack(a, s, B.child + i);
      break;
    }
    default: break;
  }
}

__global__ void fill_kernel(int n, int v, int* x) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

// Smallest and largest shift of each target's M2L list.  min and max do not depend on the order
// of the updates.
__global__ void shift_range_kernel(const Key* __restrict__ K, int n, Layout L, int* smin, int* smax) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  const int a = L.target(K[k]), s = L.shift(K[k]);
  atomicMin(smin + a, s);
  atomicMax(smax + a, s);
}

// Lists that mix shifts are keyed (target, source index, shift): FarGpu's order for them.
__global__ void rekey_kernel(Key* K, int n, Layout L, const int* __restrict__ smin, const int* __restrict__ smax,
                             const int* __restrict__ rank_to_cell) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  const Key f = K[k];
  const int a = L.target(f);
  if (smin[a] != smax[a]) K[k] = L.pack_mixed(a, rank_to_cell[L.source(f)], L.shift(f));
}

__device__ inline void decode_m2l(Key f, Layout L, const int* smin, const int* smax, const int* rank_to_cell, int& a,
                                  int& src, int& s) {
  a = L.target(f);
  if (smin[a] != smax[a]) {
    src = L.mixed_source(f);
    s = L.mixed_shift(f);
  } else {
    src = rank_to_cell[L.source(f)];
    s = L.shift(f);
  }
}

// Entries (source, shift) and the flags of a new target list and of a new group.
__global__ void m2l_decode_kernel(const Key* __restrict__ K, int n, Layout L, const int* __restrict__ smin,
                                  const int* __restrict__ smax, const int* __restrict__ rank_to_cell,
                                  int2* __restrict__ ent, int* __restrict__ seg, int* __restrict__ grp) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k > n) return;
  if (k == n) {
    seg[n] = grp[n] = 0;
    return;
  }
  int a, src, s;
  decode_m2l(K[k], L, smin, smax, rank_to_cell, a, src, s);
  ent[k] = make_int2(src, s);
  int new_seg = 1, new_grp = 1;
  if (k > 0) {
    int a0, src0, s0;
    decode_m2l(K[k - 1], L, smin, smax, rank_to_cell, a0, src0, s0);
    new_seg = a != a0;
    new_grp = new_seg || src != src0;
  }
  seg[k] = new_seg;
  grp[k] = new_grp;
}

__global__ void m2l_scatter_kernel(const Key* __restrict__ K, int n, Layout L, const int* __restrict__ seg,
                                   const int* __restrict__ segpos, const int* __restrict__ grp,
                                   const int* __restrict__ grppos, int* __restrict__ targets, int* __restrict__ goff,
                                   int* __restrict__ groups) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k > n) return;
  if (k == n) {
    goff[segpos[n]] = grppos[n];
    groups[grppos[n]] = n;
    return;
  }
  if (seg[k]) {
    targets[segpos[k]] = L.target(K[k]);
    goff[segpos[k]] = grppos[k];
  }
  if (grp[k]) groups[grppos[k]] = k;
}

// Per sorted P2P key: does it start a new entry (not the continuation, same leaf and shift, of
// the previous source range), its pair count and its source end.
__global__ void p2p_decode_kernel(const Key* __restrict__ K, int n, Layout L, const TCell* __restrict__ T,
                                  const TCell* __restrict__ S, const int* __restrict__ rank_to_cell, bool merge,
                                  int* __restrict__ newf, long long* __restrict__ pairs, int* __restrict__ send) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k > n) return;
  if (k == n) {
    newf[n] = 0;
    return;
  }
  const Key f = K[k];
  const int a = L.target(f);
  const TCell& B = S[rank_to_cell[L.source(f)]];
  bool extend = false;
  if (merge && k > 0) {
    const Key g = K[k - 1];
    extend = L.target(g) == a && L.shift(g) == L.shift(f) && S[rank_to_cell[L.source(g)]].end == B.begin;
  }
  newf[k] = extend ? 0 : 1;
  pairs[k] = static_cast<long long>(T[a].end - T[a].begin) * (B.end - B.begin);
  send[k] = B.end;
}

// Merged entries (src_begin, src_end, shift, skip) and each leaf's entry range [lstart, lstop).
__global__ void p2p_entries_kernel(const Key* __restrict__ K, int n, Layout L, const TCell* __restrict__ S,
                                   const int* __restrict__ rank_to_cell, const int* __restrict__ newf,
                                   const int* __restrict__ epos, const double* __restrict__ shifts, bool self,
                                   const int* __restrict__ leaf_of_cell, int4* __restrict__ ent,
                                   int* __restrict__ lstart, int* __restrict__ lstop) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= n) return;
  const Key f = K[k];
  const int a = L.target(f), s = L.shift(f);
  const TCell& B = S[rank_to_cell[L.source(f)]];
  const int e = newf[k] ? epos[k] : epos[k] - 1;
  if (newf[k]) {
    const double* sh = shifts + 3 * s;
    ent[e].x = B.begin;
    ent[e].z = s;
    ent[e].w = (self && sh[0] == 0 && sh[1] == 0 && sh[2] == 0) ? 1 : 0;
  }
  if (k == n - 1 || newf[k + 1]) ent[e].y = B.end;  // the last key of entry e's run
  if (k == 0 || L.target(K[k - 1]) != a) lstart[leaf_of_cell[a]] = e;
  if (k == n - 1 || L.target(K[k + 1]) != a) lstop[leaf_of_cell[a]] = e + 1;
}

// Per target leaf: entries and tasks (chunks of 32 targets); [nl] = 0 for the scans' totals.
__global__ void leaf_counts_kernel(int nl, const int* __restrict__ leaves, const TCell* __restrict__ T,
                                   const int* __restrict__ lstart, const int* __restrict__ lstop,
                                   int* __restrict__ ecnt, int* __restrict__ tcnt) {
  const int l = blockIdx.x * blockDim.x + threadIdx.x;
  if (l > nl) return;
  if (l == nl) {
    ecnt[nl] = tcnt[nl] = 0;
    return;
  }
  const TCell& A = T[leaves[l]];
  ecnt[l] = lstop[l] - lstart[l];
  tcnt[l] = (A.end - A.begin + 31) / 32;
}

__global__ void tasks_kernel(int nl, const int* __restrict__ leaves, const TCell* __restrict__ T,
                             const int* __restrict__ eoff, const int* __restrict__ toff, int4* __restrict__ tasks) {
  const int l = blockIdx.x * blockDim.x + threadIdx.x;
  if (l >= nl) return;
  const TCell& A = T[leaves[l]];
  int j = toff[l];
  for (int c = A.begin; c < A.end; c += 32) tasks[j++] = make_int4(c, min(32, A.end - c), eoff[l], eoff[l + 1]);
}

constexpr int kBlock = 256;
// At least one block (the kernels check their bounds; an empty grid is a launch error).
int blocks_for(long long n) { return std::max(1, static_cast<int>((n + kBlock - 1) / kBlock)); }

template <class T> void exclusive_sum(CubScratch& tmp, const T* in, T* out, int n) {
  std::size_t bytes = 0;
  VH_CHECK_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n));
  VH_CHECK_CUDA(cub::DeviceScan::ExclusiveSum(tmp.get(bytes), bytes, in, out, n));
}

void sort_keys(CubScratch& tmp, const Key* in, Key* out, int n, int end_bit) {
  std::size_t bytes = 0;
  VH_CHECK_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, bytes, in, out, n, 0, end_bit));
  VH_CHECK_CUDA(cub::DeviceRadixSort::SortKeys(tmp.get(bytes), bytes, in, out, n, 0, end_bit));
}

std::vector<TCell> tcells(const Tree& t) {
  std::vector<TCell> g(t.cells.size());
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(g.size());
#pragma omp parallel for schedule(static) if (n > 4096)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    const Cell& c = t.cells[i];
    TCell& o = g[i];
    for (int d = 0; d < 3; ++d) {
      o.c[d] = c.center[d];
      o.lo[d] = c.bmin[d];
      o.hi[d] = c.bmax[d];
    }
    o.r = c.radius;
    o.smax = c.sigma_max;
    o.begin = c.begin;
    o.end = c.end;
    o.child = c.child;
    o.nchild = c.nchild;
  }
  return g;
}

// Depth-first pre-order rank of every cell (children in index order) and its inverse.  Cells are
// stored parents before children, so subtree sizes come from one backward pass.
void preorder(const Tree& t, std::vector<int>& rank, std::vector<int>& rank_to_cell) {
  const int nc = static_cast<int>(t.cells.size());
  std::vector<int> size(nc, 1);
  for (int c = nc - 1; c >= 0; --c)
    for (int k = t.cells[c].child; k < t.cells[c].child + t.cells[c].nchild; ++k) size[c] += size[k];
  rank.assign(nc, 0);
  rank_to_cell.assign(nc, 0);
  for (int c = 0; c < nc; ++c) {
    int next = rank[c] + 1;
    for (int k = t.cells[c].child; k < t.cells[c].child + t.cells[c].nchild; ++k) {
      rank[k] = next;
      next += size[k];
    }
    rank_to_cell[rank[c]] = c;
  }
}

}  // namespace

GpuLists::GpuLists() = default;
GpuLists::~GpuLists() = default;
GpuLists::GpuLists(GpuLists&&) noexcept = default;
GpuLists& GpuLists::operator=(GpuLists&&) noexcept = default;

M2LArrays GpuLists::m2l_to_host() const {
  if (!dev || dev->m2l_taken) throw std::logic_error("GpuLists::m2l_to_host: no M2L arrays (taken by FarGpu?)");
  static_assert(sizeof(std::array<int, 2>) == sizeof(int2), "entry layout");
  M2LArrays a;
  a.targets.resize(n_m2l_targets);
  a.goffset.resize(n_m2l_targets + 1);
  a.groups.resize(n_m2l_groups + 1);
  a.entries.resize(n_m2l);
  dev->m2l_targets.download(a.targets.data(), a.targets.size());
  dev->m2l_goffset.download(a.goffset.data(), a.goffset.size());
  dev->m2l_groups.download(a.groups.data(), a.groups.size());
  dev->m2l_entries.download(reinterpret_cast<int2*>(a.entries.data()), a.entries.size());
  return a;
}

P2PArrays GpuLists::p2p_to_host() const {
  if (!dev || dev->p2p_taken) throw std::logic_error("GpuLists::p2p_to_host: no P2P arrays (taken by P2PGpu?)");
  static_assert(sizeof(std::array<int, 4>) == sizeof(int4), "entry layout");
  P2PArrays a;
  a.tasks.resize(n_p2p_tasks);
  a.entries.resize(n_p2p_entries);
  dev->p2p_tasks.download(reinterpret_cast<int4*>(a.tasks.data()), a.tasks.size());
  dev->p2p_entries.download(reinterpret_cast<int4*>(a.entries.data()), a.entries.size());
  return a;
}

GpuLists build_lists_gpu(const Tree& tgt, const Tree& src, bool self, const std::vector<Vec3>& shifts,
                         const Acceptance& mac, bool merge_p2p) {
  StepTimer st("gpu lists");
  // Cells, pre-order ranks, shifts, target leaves up.
  DeviceArray<TCell> d_tc, d_sc;
  DeviceArray<int> d_rank, d_r2c, d_leaves, d_leaf_of;
  DeviceArray<double> d_shift;
  d_sc.upload(tcells(src));
  if (!self) d_tc.upload(tcells(tgt));
  ListTrees in;
  in.T = self ? d_sc.data() : d_tc.data();
  in.S = d_sc.data();
  in.nct = static_cast<int>(tgt.cells.size());
  in.ncs = static_cast<int>(src.cells.size());
  in.nt = tgt.size();
  in.ns = src.size();
  st.mark("cells up");
  {
    std::vector<int> rank, r2c;
    preorder(src, rank, r2c);
    d_rank.upload(rank);
    d_r2c.upload(r2c);
  }
  in.rank = d_rank.data();
  in.rank_to_cell = d_r2c.data();
  const int nshift = static_cast<int>(shifts.size());
  std::vector<double> sh(3 * std::max(1, nshift), 0.0);
  for (int s = 0; s < nshift; ++s)
    for (int d = 0; d < 3; ++d) sh[3 * s + d] = shifts[s][d];
  d_shift.upload(sh);
  in.shifts = d_shift.data();
  std::vector<int> leaves, leaf_of(in.nct, -1);
  for (int c = 0; c < in.nct; ++c)
    if (tgt.cells[c].leaf() && tgt.cells[c].end > tgt.cells[c].begin) {
      leaf_of[c] = static_cast<int>(leaves.size());
      leaves.push_back(c);
    }
  in.nl = static_cast<int>(leaves.size());
  d_leaves.upload(leaves);
  d_leaf_of.upload(leaf_of);
  in.leaves = d_leaves.data();
  in.leaf_of = d_leaf_of.data();
  st.mark("ranks+leaves up");
  GpuLists out;
  build_lists_device(in, self, shifts, mac, merge_p2p, out);
  return out;
}

void build_lists_device(const ListTrees& in, bool self, const std::vector<Vec3>& shifts, const Acceptance& mac,
                        bool merge_p2p, GpuLists& out) {
  StepTimer st("gpu traversal");
  out.self = self;
  out.shifts = shifts;
  if (!out.dev) out.dev = std::make_unique<GpuListsDevice>();
  GpuListsDevice& D = *out.dev;
  D.m2l_taken = D.p2p_taken = false;
  out.p2p_pairs = 0;  // set below only when there are P2P entries
  out.p2p_max_source = 0;
  const int nct = in.nct, ncs = in.ncs;
  const int nshift = static_cast<int>(shifts.size());
  const int nt = in.nt, ns = in.ns, nl = in.nl;
  const TCell* T = in.T;
  const TCell* S = in.S;
  const Layout L{bits_for(nshift), bits_for(ncs)};
  const int key_bits = bits_for(nct) + L.bs + L.bc;
  if (key_bits > 63)
    throw std::invalid_argument("build_lists_gpu: " + std::to_string(nct) + " x " + std::to_string(nshift) + " x " +
                                std::to_string(ncs) + " (cells x shifts x cells) need more than 63 key bits");
  const int sort_bits = std::max(1, key_bits);

  // Traversal, one frontier level at a time.
  CubScratch tmp;
  DeviceArray<Key> F, next, m2l_keys, p2p_keys;
  DeviceArray<unsigned char> code;
  DeviceArray<Cnt> cnt, off;
  long long n_m2l = 0, n_p2p = 0;
  int n = (nt > 0 && ns > 0) ? nshift : 0;
  {
    std::vector<Key> f0(n);
    for (int s = 0; s < n; ++s) f0[s] = L.pack(0, s, 0);
    F.upload(f0);
  }
  const Mac m{mac.theta, mac.rcut_per_sigma, mac.p2p_max_pairs};
  while (n > 0) {
    code.reserve(n);
    cnt.reserve(static_cast<std::size_t>(n) + 1);
    off.reserve(static_cast<std::size_t>(n) + 1);
    classify_kernel<<<blocks_for(n + 1), kBlock>>>(F.data(), n, L, T, S, in.shifts, m, code.data(), cnt.data());
    VH_CHECK_LAUNCH();
    std::size_t bytes = 0;
    VH_CHECK_CUDA(
        cub::DeviceScan::ExclusiveScan(nullptr, bytes, cnt.data(), off.data(), CntSum{}, Cnt{0, 0, 0}, n + 1));
    VH_CHECK_CUDA(cub::DeviceScan::ExclusiveScan(tmp.get(bytes), bytes, cnt.data(), off.data(), CntSum{},
                                                 Cnt{0, 0, 0}, n + 1));
    const Cnt tot = download_one(off.data() + n);
    if (n_m2l + tot.m2l > INT_MAX || n_p2p + tot.p2p > INT_MAX || tot.child > INT_MAX)
      throw std::invalid_argument("build_lists_gpu: more than 2^31 - 1 list entries or frontier pairs");
    grow_keep(m2l_keys, n_m2l, n_m2l + tot.m2l);
    grow_keep(p2p_keys, n_p2p, n_p2p + tot.p2p);
    next.reserve(std::max<long long>(1, tot.child));
    emit_kernel<<<blocks_for(n), kBlock>>>(F.data(), n, L, T, S, in.rank, code.data(), off.data(),
                                           m2l_keys.data() + n_m2l, p2p_keys.data() + n_p2p, next.data());
    VH_CHECK_LAUNCH();
    n_m2l += tot.m2l;
    n_p2p += tot.p2p;
    F.swap(next);
    n = static_cast<int>(tot.child);
  }
  F.release();
  next.release();
  code.release();
  cnt.release();
  off.release();
  st.mark("traversal");

  // M2L: keys of mixed-shift lists re-made, one sort, entries and groups.
  {
    const int nm = static_cast<int>(n_m2l);
    // Allocated in the order of use: the keys go before the arrays of entries and groups come.
    DeviceArray<int> smin(std::max(1, nct)), smax(std::max(1, nct));
    DeviceArray<Key> sorted;
    DeviceArray<int> seg, grp, segpos, grppos;
    fill_kernel<<<blocks_for(nct), kBlock>>>(nct, INT_MAX, smin.data());
    VH_CHECK_LAUNCH();
    fill_kernel<<<blocks_for(nct), kBlock>>>(nct, -1, smax.data());
    VH_CHECK_LAUNCH();
    if (nm > 0) {
      shift_range_kernel<<<blocks_for(nm), kBlock>>>(m2l_keys.data(), nm, L, smin.data(), smax.data());
      VH_CHECK_LAUNCH();
      rekey_kernel<<<blocks_for(nm), kBlock>>>(m2l_keys.data(), nm, L, smin.data(), smax.data(), in.rank_to_cell);
      VH_CHECK_LAUNCH();
      sorted.resize(nm);
      sort_keys(tmp, m2l_keys.data(), sorted.data(), nm, sort_bits);
    }
    m2l_keys.release();
    D.m2l_entries.reserve(nm);
    seg.resize(nm + 1);
    grp.resize(nm + 1);
    segpos.resize(nm + 1);
    grppos.resize(nm + 1);
    m2l_decode_kernel<<<blocks_for(nm + 1), kBlock>>>(sorted.data(), nm, L, smin.data(), smax.data(),
                                                      in.rank_to_cell, D.m2l_entries.data(), seg.data(), grp.data());
    VH_CHECK_LAUNCH();
    exclusive_sum(tmp, seg.data(), segpos.data(), nm + 1);
    exclusive_sum(tmp, grp.data(), grppos.data(), nm + 1);
    out.n_m2l = nm;
    out.n_m2l_targets = download_one(segpos.data() + nm);
    out.n_m2l_groups = download_one(grppos.data() + nm);
    D.m2l_targets.reserve(std::max(1, out.n_m2l_targets));
    D.m2l_goffset.reserve(out.n_m2l_targets + 1);
    D.m2l_groups.reserve(out.n_m2l_groups + 1);
    m2l_scatter_kernel<<<blocks_for(nm + 1), kBlock>>>(sorted.data(), nm, L, seg.data(), segpos.data(), grp.data(),
                                                       grppos.data(), D.m2l_targets.data(), D.m2l_goffset.data(),
                                                       D.m2l_groups.data());
    VH_CHECK_LAUNCH();
    VH_CHECK_CUDA(cudaDeviceSynchronize());
  }
  st.mark("m2l arrays");

  // P2P: one sort, merged entries, leaf offsets, tasks.
  {
    const int np = static_cast<int>(n_p2p);
    DeviceArray<Key> sorted;
    if (np > 0) {
      sorted.resize(np);
      sort_keys(tmp, p2p_keys.data(), sorted.data(), np, sort_bits);
    }
    p2p_keys.release();
    DeviceArray<int> newf(np + 1), epos(np + 1), send(std::max(1, np));
    DeviceArray<long long> pairs(std::max(1, np)), sums(1);
    p2p_decode_kernel<<<blocks_for(np + 1), kBlock>>>(sorted.data(), np, L, T, S, in.rank_to_cell, merge_p2p,
                                                      newf.data(), pairs.data(), send.data());
    VH_CHECK_LAUNCH();
    exclusive_sum(tmp, newf.data(), epos.data(), np + 1);
    const int ne = download_one(epos.data() + np);
    D.p2p_entries.reserve(ne);
    DeviceArray<int> lstart(std::max(1, nl)), lstop(std::max(1, nl));
    VH_CHECK_CUDA(cudaMemset(lstart.data(), 0, lstart.bytes()));
    VH_CHECK_CUDA(cudaMemset(lstop.data(), 0, lstop.bytes()));
    if (np > 0) {
      p2p_entries_kernel<<<blocks_for(np), kBlock>>>(sorted.data(), np, L, S, in.rank_to_cell, newf.data(),
                                                     epos.data(), in.shifts, self, in.leaf_of, D.p2p_entries.data(),
                                                     lstart.data(), lstop.data());
      VH_CHECK_LAUNCH();
      int* d_max = epos.data();  // epos is done with: reuse for the result
      std::size_t bytes = 0;
      VH_CHECK_CUDA(cub::DeviceReduce::Sum(nullptr, bytes, pairs.data(), sums.data(), np));
      VH_CHECK_CUDA(cub::DeviceReduce::Sum(tmp.get(bytes), bytes, pairs.data(), sums.data(), np));
      out.p2p_pairs = download_one(sums.data());
      bytes = 0;
      VH_CHECK_CUDA(cub::DeviceReduce::Max(nullptr, bytes, send.data(), d_max, np));
      VH_CHECK_CUDA(cub::DeviceReduce::Max(tmp.get(bytes), bytes, send.data(), d_max, np));
      out.p2p_max_source = download_one(d_max);
    }
    DeviceArray<int> ecnt(nl + 1), tcnt(nl + 1), eoff(nl + 1), toff(nl + 1);
    leaf_counts_kernel<<<blocks_for(nl + 1), kBlock>>>(nl, in.leaves, T, lstart.data(), lstop.data(), ecnt.data(),
                                                       tcnt.data());
    VH_CHECK_LAUNCH();
    exclusive_sum(tmp, ecnt.data(), eoff.data(), nl + 1);
    exclusive_sum(tmp, tcnt.data(), toff.data(), nl + 1);
    out.n_p2p_entries = ne;
    out.n_p2p_tasks = download_one(toff.data() + nl);
    D.p2p_tasks.reserve(out.n_p2p_tasks);
    if (nl > 0) {
      tasks_kernel<<<blocks_for(nl), kBlock>>>(nl, in.leaves, T, eoff.data(), toff.data(), D.p2p_tasks.data());
      VH_CHECK_LAUNCH();
    }
    out.p2p_targets = nl > 0 ? nt : 0;
    VH_CHECK_CUDA(cudaDeviceSynchronize());
  }
  st.mark("p2p arrays");
}

}  // namespace vh::fmm
