#include "fmm/tree.h"

#include "fmm/morton.h"
#include "fmm/periodic.h"
#include "fmm/profile.h"
#ifdef VH_FMM_HAVE_CUDA
#include "fmm/sort_gpu.h"
#endif

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace vh::fmm {

namespace {

constexpr int kBits = morton::kBits;

// Below this many items a loop runs on one thread (the parallel region costs more).
constexpr int kSerialBelow = 1 << 14;

// The box [l, h] extended to the point p; min and max are exact, so a reduction in any order
// gives the serial box.
inline void extend_box(const Vec3& p, double& l0, double& l1, double& l2, double& h0, double& h1, double& h2) {
  l0 = std::min(l0, p[0]);
  l1 = std::min(l1, p[1]);
  l2 = std::min(l2, p[2]);
  h0 = std::max(h0, p[0]);
  h1 = std::max(h1, p[1]);
  h2 = std::max(h2, p[2]);
}

// |p - c|^2 summed over x, y, z in that order (the GPU's twin in tree_gpu.cu sums the same way).
inline double distance2(const Vec3& p, double c0, double c1, double c2) {
  double d2 = 0;
  d2 += (p[0] - c0) * (p[0] - c0);
  d2 += (p[1] - c1) * (p[1] - c1);
  d2 += (p[2] - c2) * (p[2] - c2);
  return d2;
}

// Stable LSD radix sort of perm (initially any order) by key[perm[i]], 11-bit digits, OpenMP.
// Each pass is a stable counting sort: thread t histograms its contiguous chunk, the output
// offset of (digit b, thread t) is the count of all smaller digits plus that of digit b in the
// chunks before t, and each thread scatters its chunk in order.  The output is therefore the
// serial stable counting sort's, for any number of threads, and the whole sort equals
// std::stable_sort by key (ties keep their input order).  Digits on which all keys agree are
// skipped (no reordering).
// On return `sorted` holds the keys in the sorted order, key_in[perm[i]].
void radix_sort(const std::vector<std::uint64_t>& key_in, std::vector<int>& perm, std::vector<std::uint64_t>& sorted) {
  const int n = static_cast<int>(perm.size());
  constexpr int kDigit = 11, kBuckets = 1 << kDigit;
  std::vector<std::uint64_t> key(n), key2(n);
  std::vector<int> perm2(n);
  std::uint64_t all_or = 0, all_and = ~std::uint64_t(0);
#pragma omp parallel for schedule(static) reduction(| : all_or) reduction(& : all_and) if (n > kSerialBelow)
  for (int i = 0; i < n; ++i) {
    key[i] = key_in[perm[i]];
    all_or |= key[i];
    all_and &= key[i];
  }
  const std::uint64_t varying = all_or ^ all_and;
  const int max_threads = n > kSerialBelow ? omp_get_max_threads() : 1;
  std::vector<int> count(static_cast<std::size_t>(max_threads) * kBuckets);
  for (int shift = 0; shift < 64; shift += kDigit) {
    if (((varying >> shift) & (kBuckets - 1)) == 0) continue;
#pragma omp parallel num_threads(max_threads)
    {
      const int nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int lo = static_cast<int>(static_cast<long long>(n) * t / nt);
      const int hi = static_cast<int>(static_cast<long long>(n) * (t + 1) / nt);
      int* c = &count[static_cast<std::size_t>(t) * kBuckets];
      std::fill(c, c + kBuckets, 0);
      for (int i = lo; i < hi; ++i) ++c[(key[i] >> shift) & (kBuckets - 1)];
#pragma omp barrier
#pragma omp single
      {
        int sum = 0;
        for (int b = 0; b < kBuckets; ++b)
          for (int u = 0; u < nt; ++u) {
            int& cu = count[static_cast<std::size_t>(u) * kBuckets + b];
            const int v = cu;
            cu = sum;
            sum += v;
          }
      }  // implicit barrier
      for (int i = lo; i < hi; ++i) {
        const int pos = c[(key[i] >> shift) & (kBuckets - 1)]++;
        key2[pos] = key[i];
        perm2[pos] = perm[i];
      }
    }
    key.swap(key2);
    perm.swap(perm2);
  }
  sorted.swap(key);
}

}  // namespace

void extend_bounds(const std::vector<Vec3>& x, bool wrap, Vec3& lo, Vec3& hi) {
  const long long n = static_cast<long long>(x.size());
  double l0 = lo[0], l1 = lo[1], l2 = lo[2], h0 = hi[0], h1 = hi[1], h2 = hi[2];
#pragma omp parallel for schedule(static) reduction(min : l0, l1, l2) reduction(max : h0, h1, h2) if (n > kSerialBelow)
  for (long long i = 0; i < n; ++i)
    extend_box(wrap ? Vec3{morton::wrap(x[i][0]), morton::wrap(x[i][1]), morton::wrap(x[i][2])} : x[i], l0, l1, l2,
               h0, h1, h2);
  lo = {l0, l1, l2};
  hi = {h0, h1, h2};
}

void bounding_cube(const std::vector<Vec3>& a, const std::vector<Vec3>* b, Vec3& center, double& half) {
  Vec3 lo = {1e300, 1e300, 1e300}, hi = {-1e300, -1e300, -1e300};
  extend_bounds(a, false, lo, hi);
  if (b) extend_bounds(*b, false, lo, hi);
  cube_of_box(lo, hi, center, half);
}

void cube_of_box(const Vec3& lo, const Vec3& hi, Vec3& center, double& half) {
  half = 0;
  for (int d = 0; d < 3; ++d) {
    center[d] = 0.5 * (lo[d] + hi[d]);
    half = std::max(half, 0.5 * (hi[d] - lo[d]));
  }
  half = half * (1 + 1e-6) + 1e-300;
  if (half < 1e-12) half = 1.0;
}

// Parallel build (OpenMP) with the result of the serial algorithm for any number of threads:
// the keys are computed independently per particle, the radix sort above equals a stable sort,
// cells are created level by level (breadth first: the children of the cells of level l, in the
// order of their parents, form level l + 1, each cell's block contiguous), and boxes, radii and
// sigma_max are maxima/minima over each cell's particles, which do not depend on the order in
// which they are taken.
Tree build_tree(const std::vector<Vec3>& x, const std::vector<double>& sigma, const Vec3& center,
                double half, int ncrit, TreeBuild how) {
  const bool wrap = how.wrap;
  const int n = static_cast<int>(x.size());
  const bool par = n > kSerialBelow;
  StepTimer st("tree");
  Tree t;
  // Morton keys relative to the cube's lower corner.
  std::vector<std::uint64_t> key(n);
  const double scale = double(1 << kBits) / (2 * half);
  const double lo[3] = {center[0] - half, center[1] - half, center[2] - half};
#pragma omp parallel for schedule(static) if (par)
  for (int i = 0; i < n; ++i) {
    const double xd[3] = {wrap ? morton::wrap(x[i][0]) : x[i][0], wrap ? morton::wrap(x[i][1]) : x[i][1],
                          wrap ? morton::wrap(x[i][2]) : x[i][2]};
    key[i] = morton::key(xd, lo, scale);
  }
  st.mark("keys");
  t.perm.resize(n);
  std::iota(t.perm.begin(), t.perm.end(), 0);
  // Ties broken by input index are avoided on purpose: a permutation of the input must give the
  // same tree; equal keys only reorder a leaf's particles (round-off level).  (The radix sort is
  // stable, i.e. equal to std::stable_sort by key from the identity.)
  std::vector<std::uint64_t> skey;
  if (how.gpu_sort) {
#ifdef VH_FMM_HAVE_CUDA
    std::uint64_t all_or = 0, all_and = ~std::uint64_t(0);
#pragma omp parallel for schedule(static) reduction(| : all_or) reduction(& : all_and) if (par)
    for (int i = 0; i < n; ++i) {
      all_or |= key[i];
      all_and &= key[i];
    }
    const std::uint64_t varying = all_or ^ all_and;  // only these bits decide the order
    int lo = 0, hi = 0;
    if (varying) {
      lo = __builtin_ctzll(varying);
      hi = 64 - __builtin_clzll(varying);
    }
    sort_keys_gpu(key, lo, hi, t.perm, skey);
#else
    throw std::invalid_argument("build_tree: gpu_sort in a build without CUDA");
#endif
  } else {
    radix_sort(key, t.perm, skey);
  }
  st.mark("sort");
  std::vector<double>& ssig = t.sigma;
  ssig.resize(sigma.empty() ? 0 : n);
  t.x.resize(n);
#pragma omp parallel for schedule(static) if (par)
  for (int i = 0; i < n; ++i) {
    if (i + 16 < n) {  // the gather is latency-bound: fetch ahead
      __builtin_prefetch(&x[t.perm[i + 16]]);
      if (!sigma.empty()) __builtin_prefetch(&sigma[t.perm[i + 16]]);
    }
    const Vec3& xi = x[t.perm[i]];
    t.x[i] = wrap ? Vec3{morton::wrap(xi[0]), morton::wrap(xi[1]), morton::wrap(xi[2])} : xi;
    if (!sigma.empty()) ssig[i] = sigma[t.perm[i]];
  }

  st.mark("permute");
  return tree_from_sorted(std::move(t.perm), skey, std::move(t.x), std::move(t.sigma), center, half, ncrit,
                          how.min_level);
}

Tree tree_from_sorted(std::vector<int> perm, const std::vector<std::uint64_t>& skey, std::vector<Vec3> x,
                      std::vector<double> sigma, const Vec3& center, double half, int ncrit, int min_level) {
  StepTimer st("cells");
  Tree t;
  t.cells = split_cells(skey.data(), static_cast<int>(x.size()), center, half, ncrit, min_level);
  st.mark("split");
  t.perm = std::move(perm);
  t.x = std::move(x);
  t.sigma = std::move(sigma);
  cell_extents(t.cells, t.x, t.sigma);
  st.mark("extents");
  index_levels(t);
  return t;
}

int whole_set_leaf_level(long long n, int ncrit) {
  int level = 0;
  for (double per_cell = double(n); per_cell > ncrit && level < kBits; per_cell /= 8) ++level;
  return level;
}

std::vector<Cell> split_cells(const std::uint64_t* skey, int n, const Vec3& center, double half, int ncrit,
                              int min_level) {
  std::vector<Cell> cells;
  Cell root;
  root.center = center;
  root.half = half;
  root.begin = 0;
  root.end = n;
  cells.push_back(root);
  // Breadth-first split, one level at a time: a cell's children are one contiguous block, the
  // blocks in the order of the parents.
  struct Split {
    int bound[9];  // octant oct holds [bound[oct], bound[oct + 1])
    int nchild;
  };
  std::vector<Split> split;
  std::vector<int> first;
  for (int lb = 0, le = 1; lb < le;) {
    const int m = le - lb;
    split.assign(m, Split{});
    first.assign(m + 1, 0);
#pragma omp parallel for schedule(dynamic, 64) if (m > 256)
    for (int k = 0; k < m; ++k) {
      const Cell& c = cells[lb + k];
      Split& s = split[k];
      s.nchild = 0;
      if ((c.end - c.begin <= ncrit && c.level >= min_level) || c.level >= kBits) continue;
      const int shift = 3 * (kBits - 1 - c.level);
      s.bound[0] = c.begin;
      for (int oct = 0; oct < 8; ++oct) {
        // end of octant oct: first key whose octant digit exceeds oct
        s.bound[oct + 1] = static_cast<int>(
            std::partition_point(skey + s.bound[oct], skey + c.end,
                                 [&](std::uint64_t key_) { return int((key_ >> shift) & 7) <= oct; }) -
            skey);
        if (s.bound[oct + 1] > s.bound[oct]) ++s.nchild;
      }
    }
    for (int k = 0; k < m; ++k) first[k + 1] = first[k] + split[k].nchild;
    cells.resize(static_cast<std::size_t>(le) + first[m]);
#pragma omp parallel for schedule(dynamic, 64) if (m > 256)
    for (int k = 0; k < m; ++k) {
      const Split& s = split[k];
      if (s.nchild == 0) continue;
      const int ci = lb + k;
      Cell& c = cells[ci];
      int next = le + first[k];
      c.child = next;
      c.nchild = s.nchild;
      for (int oct = 0; oct < 8; ++oct) {
        if (s.bound[oct + 1] == s.bound[oct]) continue;
        Cell& ch = cells[next++];
        ch.half = 0.5 * c.half;
        for (int d = 0; d < 3; ++d) ch.center[d] = c.center[d] + (((oct >> d) & 1) ? ch.half : -ch.half);
        ch.begin = s.bound[oct];
        ch.end = s.bound[oct + 1];
        ch.level = c.level + 1;
        ch.parent = ci;
      }
    }
    lb = le;
    le += first[m];
  }
  return cells;
}

void cell_extents(std::vector<Cell>& cells, const std::vector<Vec3>& x, const std::vector<double>& ssig) {
  const bool par = x.size() > static_cast<std::size_t>(kSerialBelow);
  // Tight boxes, radii and sigma_max from the particles.  Large cells (the top levels) take
  // their particles in parallel, the others one cell per thread; min/max are exact, so the
  // result does not depend on the split.
  const int ncell = static_cast<int>(cells.size());
  struct Extent {
    double l0 = 1e300, l1 = 1e300, l2 = 1e300, h0 = -1e300, h1 = -1e300, h2 = -1e300, r2 = 0, smax = 0;
  };
  const bool has_sigma = !ssig.empty();
  auto store = [](Cell& c, const Extent& e) {
    c.bmin = {e.l0, e.l1, e.l2};
    c.bmax = {e.h0, e.h1, e.h2};
    c.radius = std::sqrt(e.r2);
    c.sigma_max = e.smax;
  };
  constexpr int kBigCell = 1 << 16;
  for (int ci = 0; ci < ncell; ++ci) {
    Cell& c = cells[ci];
    if (c.end - c.begin < kBigCell) continue;
    double l0 = 1e300, l1 = 1e300, l2 = 1e300, h0 = -1e300, h1 = -1e300, h2 = -1e300, r2 = 0, smax = 0;
    const double c0 = c.center[0], c1 = c.center[1], c2 = c.center[2];
#pragma omp parallel for schedule(static) reduction(min : l0, l1, l2) reduction(max : h0, h1, h2, r2, smax)
    for (int i = c.begin; i < c.end; ++i) {
      extend_box(x[i], l0, l1, l2, h0, h1, h2);
      r2 = std::max(r2, distance2(x[i], c0, c1, c2));
      if (has_sigma) smax = std::max(smax, ssig[i]);
    }
    store(c, Extent{l0, l1, l2, h0, h1, h2, r2, smax});
  }
#pragma omp parallel for schedule(dynamic, 16) if (par)
  for (int ci = 0; ci < ncell; ++ci) {
    Cell& c = cells[ci];
    if (c.end - c.begin >= kBigCell) continue;
    Extent e;
    const double c0 = c.center[0], c1 = c.center[1], c2 = c.center[2];
    for (int i = c.begin; i < c.end; ++i) {
      extend_box(x[i], e.l0, e.l1, e.l2, e.h0, e.h1, e.h2);
      e.r2 = std::max(e.r2, distance2(x[i], c0, c1, c2));
      if (has_sigma) e.smax = std::max(e.smax, ssig[i]);
    }
    store(c, e);
  }
}

void index_levels(Tree& t) {
  int nlevel = 0;
  for (const Cell& c : t.cells) nlevel = std::max(nlevel, c.level + 1);
  t.levels.assign(nlevel, {});
  for (int i = 0; i < static_cast<int>(t.cells.size()); ++i) t.levels[t.cells[i].level].push_back(i);
}

}  // namespace vh::fmm
