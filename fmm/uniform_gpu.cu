// The uniform levels' far field on the device: see uniform_gpu.h.
#include "fmm/uniform_gpu.h"

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "base/comm.h"
#include "base/cuda_check.h"
#include "base/launch.h"
#include "fmm/expansion_rows.h"

namespace vh::fmm {

namespace {

// grid[offset(level) + (iz n + iy) n + ix] = c for every cell c of levels 0 .. L.
// The place along one axis, 0 .. n - 1, of a cell of side `side` whose centre is at c, the
// level's cells starting at lo.
__device__ inline int grid_coordinate(double c, double lo, double side, int n) {
  return min(max(static_cast<int>(floor((c - lo) / side)), 0), n - 1);
}

__global__ void grid_kernel(const GCell* __restrict__ cells, int ncells, double side0, double lox, double loy,
                            double loz, int* __restrict__ grid) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= ncells) return;
  const GCell C = cells[c];
  const int n = 1 << C.level;
  const double side = side0 / n;
  const int ix = grid_coordinate(C.cx, lox, side, n), iy = grid_coordinate(C.cy, loy, side, n),
            iz = grid_coordinate(C.cz, loz, side, n);
  grid[((1LL << (3 * C.level)) - 1) / 7 + (static_cast<long long>(iz) * n + iy) * n + ix] = c;
}

// flags[c] = 1 where M and L keep cell c (expansion_rows.h): the levels below `from` whole, the
// others in their windows (w: first and count of each level 0 .. L).
__global__ void keep_kernel(const GCell* __restrict__ cells, int ncells, double lo_z, double side0, int from,
                            const int2* __restrict__ w, int* __restrict__ flags) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= ncells) return;
  const GCell C = cells[c];
  const int2 v = w[C.level];
  flags[c] = keeps_expansions(C.level, cell_plane(C.cz, C.level, lo_z, side0), from, PlaneWindow{v.x, v.y});
}

// rows[c] = its place among the kept cells (rows: their exclusive prefix count), -1 for the others.
__global__ void rows_kernel(int ncells, const int* __restrict__ flags, int* __restrict__ rows) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < ncells && !flags[c]) rows[c] = -1;
}

// out[g] = rows[grid[g]]: the level grids as rows of M and L.
__global__ void grid_rows_kernel(long long n, const int* __restrict__ grid, const int* __restrict__ rows,
                                 int* __restrict__ out) {
  const long long g = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (g < n) out[g] = rows[grid[g]];
}

// The particles' smallest margins inside their cells of level L (side s, the cell (ix, iy, iz)
// spanning lo + side [i, i + 1)): out[0] the smallest low-side margin over the three axes,
// out[1] the high-side one, as the bits of non-negative doubles (ordered as the integers are),
// to be set to those of s before the launch.
__global__ void margin_kernel(const GCell* __restrict__ cells, int ncells, int L, double side, double lox, double loy,
                              double loz, const double4_32a* __restrict__ x, unsigned long long* __restrict__ out) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  double mlo = side, mhi = side;
  if (c < ncells && cells[c].level == L) {
    const GCell C = cells[c];
    const int n = 1 << L;
    const double lo[3] = {lox + side * grid_coordinate(C.cx, lox, side, n),
                          loy + side * grid_coordinate(C.cy, loy, side, n),
                          loz + side * grid_coordinate(C.cz, loz, side, n)};
    for (int i = C.begin; i < C.end; ++i) {
      const double4_32a q = x[i];
      const double v[3] = {q.x - lo[0], q.y - lo[1], q.z - lo[2]};
      for (int d = 0; d < 3; ++d) {
        mlo = fmin(mlo, v[d]);
        mhi = fmin(mhi, side - v[d]);
      }
    }
  }
  mlo = fmax(mlo, 0.0);
  mhi = fmax(mhi, 0.0);
  for (int off = 16; off > 0; off >>= 1) {
    mlo = fmin(mlo, __shfl_down_sync(0xffffffffu, mlo, off));
    mhi = fmin(mhi, __shfl_down_sync(0xffffffffu, mhi, off));
  }
  if ((threadIdx.x & 31) == 0) {
    atomicMin(&out[0], static_cast<unsigned long long>(__double_as_longlong(mlo)));
    atomicMin(&out[1], static_cast<unsigned long long>(__double_as_longlong(mhi)));
  }
}

__device__ inline int wrapi(int a, int n) { return ((a % n) + n) % n; }
__device__ inline int floordiv(int a, int n) { return (a - wrapi(a, n)) / n; }

// The P2P's leaves are the nw leaves from grid index g0 on (mod nl): the leaves of a window of
// z planes (UniformFar::build's first_plane, planes), or all of them; leaf w of them is grid
// index (g0 + w) mod nl.
// Entry e = w E + k: leaf w's k-th near leaf, (source begin, end, shift index, self flag); per
// leaf its task count; and the pairs, summed over each warp before one atomic add (a thread's
// own atomic add on the one counter serialised nl E of them: 24 M at 2^24 blobs).
__global__ void near_kernel(int L, int E, long long g0, long long nw, const int* __restrict__ near,
                            const int* __restrict__ grid, const GCell* __restrict__ cells,
                            const int* __restrict__ shift_of, int r0, int4* __restrict__ entries,
                            int* __restrict__ ntask, unsigned long long* pairs) {
  const long long n = 1LL << L, nl = n * n * n;
  const long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  unsigned long long np = 0;
  if (e < nw * E) {
    const long long w0 = e / E, g = (g0 + w0) % nl;
    const int k = static_cast<int>(e % E), w = 2 * r0 + 1;
    const int i[3] = {static_cast<int>(g % n), static_cast<int>(g / n % n), static_cast<int>(g / n / n)};
    int j[3], S[3];
    for (int d = 0; d < 3; ++d) {
      const int q = i[d] + near[3 * k + d];
      j[d] = wrapi(q, static_cast<int>(n));
      S[d] = floordiv(q, static_cast<int>(n));
    }
    const GCell B = cells[grid[(static_cast<long long>(j[2]) * n + j[1]) * n + j[0]]];
    const int sh = shift_of[((S[2] + r0) * w + (S[1] + r0)) * w + (S[0] + r0)];
    entries[e] = make_int4(B.begin, B.end, sh, sh == 0 ? 1 : 0);
    const GCell A = cells[grid[g]];
    if (k == 0) ntask[w0] = (A.end - A.begin + 31) / 32;
    np = static_cast<unsigned long long>(A.end - A.begin) * static_cast<unsigned long long>(B.end - B.begin);
  }
  for (int off = 16; off > 0; off >>= 1) np += __shfl_down_sync(0xffffffffu, np, off);
  if ((threadIdx.x & 31) == 0 && np > 0) atomicAdd(pairs, np);
}

// Leaf g's E entries sorted by (shift, source begin), and each run of them whose source ranges
// follow one another (the leaves of a Morton run hold consecutive particles) under one shift
// merged into one entry, as the traversal's lists merge theirs: written over the first
// count[g] of the leaf's E slots.  A warp a leaf, its entries in shared memory twice (as read,
// then sorted); the sort by ranks (E^2 / 32 comparisons a lane, E <= kMergeMaxE).
constexpr int kMergeMaxE = 512;
__global__ void merge_kernel(long long nl, int E, int4* __restrict__ entries, int* __restrict__ count) {
  extern __shared__ int4 smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const long long g = blockIdx.x * static_cast<long long>(blockDim.x / 32) + warp;
  if (g >= nl) return;  // the whole warp: no block-wide barrier below
  int4* in = smem + 2 * E * warp;
  int4* sorted = in + E;
  int4* e = entries + g * E;
  for (int k = lane; k < E; k += 32) in[k] = e[k];
  __syncwarp();
  const auto before = [](int4 a, int4 b) { return a.z != b.z ? a.z < b.z : a.x < b.x; };
  for (int k = lane; k < E; k += 32) {
    const int4 a = in[k];
    int rank = 0;
    for (int q = 0; q < E; ++q) rank += before(in[q], a) ? 1 : 0;
    sorted[rank] = a;
  }
  __syncwarp();
  // Run starts, their places by a running count over the warp's rounds, then each run's end.
  int runs = 0;
  for (int k0 = 0; k0 < E; k0 += 32) {
    const int k = k0 + lane;
    bool start = false;
    int4 a = make_int4(0, 0, 0, 0);
    if (k < E) {
      a = sorted[k];
      start = k == 0 || sorted[k - 1].z != a.z || sorted[k - 1].y != a.x;
    }
    const unsigned starts = __ballot_sync(0xffffffffu, start);
    const int r = runs + __popc(starts & ((1u << lane) - 1u)) + (start ? 0 : -1);
    if (start) in[r] = a;  // `in` is free once sorted
    runs += __popc(starts);
    __syncwarp();
    if (k < E && (k + 1 == E || sorted[k + 1].z != a.z || sorted[k + 1].x != a.y)) in[r].y = a.y;
    __syncwarp();
  }
  for (int k = lane; k < runs; k += 32) e[k] = in[k];
  if (lane == 0) count[g] = runs;
}

// Every leaf's E entries as they are (E > kMergeMaxE).
__global__ void fill_kernel(long long nl, int E, int* __restrict__ count) {
  const long long g = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (g < nl) count[g] = E;
}

// Leaf w's tasks (near_kernel's leaves): targets begin + 32 k .. (at most 32), entries
// [w E, w E + count[w]).
__global__ void task_kernel(int L, int E, long long g0, long long nw, const int* __restrict__ grid,
                            const GCell* __restrict__ cells, const int* __restrict__ first,
                            const int* __restrict__ count, int4* __restrict__ tasks) {
  const long long n = 1LL << L, nl = n * n * n;
  const long long w = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (w >= nw) return;
  const GCell A = cells[grid[(g0 + w) % nl]];
  int t = first[w];
  for (int b = A.begin; b < A.end; b += 32)
    tasks[t++] = make_int4(b, min(32, A.end - b), static_cast<int>(w * E), static_cast<int>(w * E + count[w]));
}

}  // namespace

bool UniformFar::complete(int cells, int levels, int leaves) {
  const int L = levels - 1;
  if (L < 2 || L > 7) return false;
  return cells == level_offset(L + 1) && leaves == (1LL << (3 * L));
}

bool UniformFar::build(const GCell* cells, int ncells, int levels, const double4_32a* x, int p, const Acceptance& mac,
                       double sigma_max, int r0, const std::vector<Vec3>& shifts, double side0, const Vec3& lo,
                       int first_plane, int planes, const Comm* over) {
  const int L = levels - 1;
  refused_.clear();
  n_rows_ = 0;  // every cell at its index until keep_rows()
  whole_ = 0;
  ncells_ = ncells;
  L_ = L;
  lo_z_ = lo[2];
  side0_ = side0;
  if (p > 14 || !complete(ncells, levels, static_cast<int>(1LL << (3 * L)))) {
    refused_ = p > 14 ? "p > 14" : "not a complete tree";
    return false;
  }
  const double rcut = mac.rcut_per_sigma * sigma_max;
  const auto rcut_cells = [&](int l) { return rcut / (side0 / (1 << l)); };
  // The slack of level_stencil.h: the particles' boxes lie inside their leaves by margins
  // measured here, at every build (particles off the lattice shrink it, and the stencils follow).
  double slack = 0;
  {
    const double leaf = side0 / (1 << L);
    unsigned long long m[2];
    std::memcpy(&m[0], &leaf, sizeof leaf);
    m[1] = m[0];
    margins_.resize(2);
    VH_CHECK_CUDA(cudaMemcpy(margins_.data(), m, sizeof m, cudaMemcpyHostToDevice));
    margin_kernel<<<blocks_for(ncells, 256), 256>>>(cells, ncells, L, leaf, lo[0], lo[1], lo[2], x, margins_.data());
    VH_CHECK_LAUNCH();
    VH_CHECK_CUDA(cudaMemcpy(m, margins_.data(), sizeof m, cudaMemcpyDeviceToHost));
    double mlo, mhi;
    std::memcpy(&mlo, &m[0], sizeof mlo);
    std::memcpy(&mhi, &m[1], sizeof mhi);
    if (over) {  // the whole set's margins: the smallest of the ranks' parts
      mlo = -over->max(-mlo);
      mhi = -over->max(-mhi);
    }
    slack = std::min(mlo + mhi, leaf);
  }
  const auto slack_cells = [&](int l) { return slack / (side0 / (1 << l)); };

  // The leaves' near leaves, each image of them within the near images.
  const std::vector<std::array<int, 3>> near = near_stencil(mac.theta, rcut_cells(L), slack_cells(L));
  for (const auto& t : near)
    for (int d = 0; d < 3; ++d)
      if (std::abs(t[d]) >= r0 * (1 << L)) {
        refused_ = "a near leaf beyond the near images";
        return false;
      }

  // The FFT operators of levels 2 .. L, kept while their stencils are the same and their
  // windows hold the target planes; first the memory they need (tables, transforms, and the
  // tables' transient copy). The target parent planes of level l: those of the leaf planes
  // [first_plane, first_plane + planes) (all where planes is 0).
  if (planes < 0 || planes > (1 << L) || first_plane < 0 || first_plane >= (1 << L))
    throw std::invalid_argument("UniformFar: leaf planes " + std::to_string(first_plane) + " + " +
                                std::to_string(planes) + " of " + std::to_string(1 << L));
  std::map<int, std::pair<LevelStencil, int>> want;  // the stencil and its z extent
  std::size_t need = 0;
  for (int l = 2; l <= L; ++l) {
    LevelStencil st = uniform_stencil(l, mac.theta, rcut_cells(l), slack_cells(l));
    const int m = 1 << (l - 1), shift = L - l + 1;
    int z0 = 0, nz = m;
    if (planes > 0 && ((first_plane + planes - 1) >> shift) - (first_plane >> shift) + 1 < m) {
      z0 = first_plane >> shift;
      nz = ((first_plane + planes - 1) >> shift) - z0 + 1;
    }
    const int extent = m2l_fft_window_extent(l, parent_z_reach(st), nz);
    if (extent == m) z0 = 0, nz = m;  // the whole level's transforms: every cell takes its M2L
    Fft& f = fft_[l];
    f.z0 = z0;
    f.nz = nz;
    if (f.op && f.p == p && f.side0 == side0 && f.st.offsets == st.offsets && f.op->planes() >= nz &&
        (extent == m) == (f.op->planes() == m))
      continue;
    need += static_cast<std::size_t>(m2l_fft_bytes(l, p, true, extent));
    want[l] = {std::move(st), extent};
  }
  if (need > 0) {
    std::size_t free_b = 0, total_b = 0;
    VH_CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    if (need + need / 4 + (std::size_t(1) << 30) > free_b) {
      refused_ = "the tables need " + std::to_string(need >> 20) + " MiB, " + std::to_string(free_b >> 20) +
                 " MiB free";
      return false;
    }
  }
  for (auto& [l, w] : want) {
    Fft& f = fft_[l];
    f.op.reset();
    f.op = std::make_unique<M2LFftGpu>(p, side0, w.first, w.second);
    f.p = p;
    f.side0 = side0;
    f.st = std::move(w.first);
  }
  for (auto it = fft_.begin(); it != fft_.end();) it = it->first > L ? fft_.erase(it) : std::next(it);

  // The grids.
  grid_.resize(static_cast<std::size_t>(level_offset(L + 1)));
  grid_kernel<<<blocks_for(ncells, 256), 256>>>(cells, ncells, side0, lo[0], lo[1], lo[2], grid_.data());
  VH_CHECK_LAUNCH();
  int top[9];
  VH_CHECK_CUDA(cudaMemcpy(top, grid_.data(), sizeof top, cudaMemcpyDeviceToHost));

  // Each shift as its image S in boxes, and the shift index of the image S, |S_d| <= r0.
  const int w = 2 * r0 + 1;
  std::vector<std::array<int, 3>> image(shifts.size());
  std::vector<int> shift_of(static_cast<std::size_t>(w) * w * w, -1);
  for (std::size_t k = 0; k < shifts.size(); ++k) {
    std::array<int, 3>& S = image[k];
    for (int d = 0; d < 3; ++d) S[d] = static_cast<int>(std::lround(shifts[k][d] / side0));
    shift_of[((S[2] + r0) * w + (S[1] + r0)) * w + (S[0] + r0)] = static_cast<int>(k);
  }
  const auto shift_index = [&](const int S[3]) {
    for (int d = 0; d < 3; ++d)
      if (std::abs(S[d]) > r0) throw std::logic_error("UniformFar: an image beyond the near images");
    return shift_of[((S[2] + r0) * w + (S[1] + r0)) * w + (S[0] + r0)];
  };

  // Levels 0 and 1 as lists: the root's far images, then the eight cells' stencil.
  std::vector<int> targets, goffset{0}, groups{0};
  std::vector<int2> entries;
  {
    std::vector<int2> root;
    for (std::size_t k = 1; k < shifts.size(); ++k)
      if (uniform_far(image[k], mac.theta, rcut_cells(0), slack_cells(0))) root.push_back({0, static_cast<int>(k)});
    std::sort(root.begin(), root.end(), [](int2 a, int2 b) { return a.y < b.y; });
    if (!root.empty()) {
      targets.push_back(top[0]);
      entries.insert(entries.end(), root.begin(), root.end());
      groups.push_back(static_cast<int>(entries.size()));
      goffset.push_back(static_cast<int>(groups.size()) - 1);
    }
    const LevelStencil s1 = uniform_stencil(1, mac.theta, rcut_cells(1), slack_cells(1));
    std::vector<std::pair<int, int>> order;  // (cell, grid index) of level 1, by cell
    for (int g = 0; g < 8; ++g) order.push_back({top[1 + g], g});
    std::sort(order.begin(), order.end());
    for (const auto& [cell, g] : order) {
      std::vector<int2> list;
      const int i[3] = {g & 1, (g >> 1) & 1, g >> 2};
      for (const auto& t : s1.offsets[g]) {
        int j[3], S[3];
        for (int d = 0; d < 3; ++d) {
          const int q = i[d] + t[d];
          j[d] = ((q % 2) + 2) % 2;
          S[d] = (q - j[d]) / 2;
        }
        list.push_back({top[1 + j[0] + 2 * j[1] + 4 * j[2]], shift_index(S)});
      }
      if (list.empty()) continue;
      std::sort(list.begin(), list.end(), [](int2 a, int2 b) { return a.x != b.x ? a.x < b.x : a.y < b.y; });
      targets.push_back(cell);
      for (std::size_t k = 0; k < list.size(); ++k) {
        entries.push_back(list[k]);
        if (k + 1 == list.size() || list[k + 1].x != list[k].x) groups.push_back(static_cast<int>(entries.size()));
      }
      goffset.push_back(static_cast<int>(groups.size()) - 1);
    }
  }
  n_m2l_ = static_cast<long long>(entries.size());
  for (const auto& [l, f] : fft_) n_m2l_ += f.st.translations() / (1LL << (l - 1)) * f.nz;
  n_targets_ = static_cast<int>(targets.size());
  targets_.upload(targets);
  goffset_.upload(goffset);
  groups_.upload(groups);
  entries_.upload(entries);

  // The P2P of the leaves: those of the planes [first_plane, first_plane + planes) where only
  // they need their fields (evaluate_own: a rank's own targets), else all.
  const int E = static_cast<int>(near.size());
  const long long side = 1LL << L, g0 = planes > 0 ? first_plane * side * side : 0,
                  nw = planes > 0 ? planes * side * side : side * side * side;
  std::vector<int> nflat;
  for (const auto& t : near) nflat.insert(nflat.end(), t.begin(), t.end());
  near_.upload(nflat);
  shift_of_.upload(shift_of);
  p2p_entries_.resize(static_cast<std::size_t>(nw * E));
  ntask_.resize(static_cast<std::size_t>(nw) + 1);
  VH_CHECK_CUDA(cudaMemset(ntask_.data() + nw, 0, sizeof(int)));
  task_first_.resize(static_cast<std::size_t>(nw) + 1);
  counts_dev_.resize(2);
  counts_dev_.zero();
  const int* gl = grid_.data() + level_offset(L);
  near_kernel<<<blocks_for(nw * E, 256), 256>>>(L, E, g0, nw, near_.data(), gl, cells, shift_of_.data(), r0,
                                                p2p_entries_.data(), ntask_.data(), counts_dev_.data());
  VH_CHECK_LAUNCH();
  std::size_t bytes = 0;
  VH_CHECK_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, bytes, ntask_.data(), task_first_.data(), nw + 1));
  scan_temp_.reserve(std::max<std::size_t>(bytes, 1));
  VH_CHECK_CUDA(cub::DeviceScan::ExclusiveSum(scan_temp_.data(), bytes, ntask_.data(), task_first_.data(), nw + 1));
  VH_CHECK_CUDA(cudaMemcpy(&n_tasks_, task_first_.data() + nw, sizeof(int), cudaMemcpyDeviceToHost));
  entry_count_.resize(static_cast<std::size_t>(nw));
  if (E <= kMergeMaxE) {
    const int warps = std::max(1, std::min(8, static_cast<int>((48 << 10) / (2 * E * sizeof(int4)))));
    merge_kernel<<<blocks_for(nw, warps), 32 * warps, 2 * E * warps * sizeof(int4)>>>(nw, E, p2p_entries_.data(),
                                                                                      entry_count_.data());
    VH_CHECK_LAUNCH();
  } else {
    fill_kernel<<<blocks_for(nw, 256), 256>>>(nw, E, entry_count_.data());
    VH_CHECK_LAUNCH();
  }
  tasks_.resize(static_cast<std::size_t>(n_tasks_));
  task_kernel<<<blocks_for(nw, 256), 256>>>(L, E, g0, nw, gl, cells, task_first_.data(), entry_count_.data(),
                                            tasks_.data());
  VH_CHECK_LAUNCH();
  {
    unsigned long long* total = counts_dev_.data() + 1;
    std::size_t bytes = 0;
    VH_CHECK_CUDA(cub::DeviceReduce::Sum(nullptr, bytes, entry_count_.data(), total, nw));
    scan_temp_.reserve(std::max<std::size_t>(bytes, 1));
    VH_CHECK_CUDA(cub::DeviceReduce::Sum(scan_temp_.data(), bytes, entry_count_.data(), total, nw));
  }
  unsigned long long pr[2] = {0, 0};
  counts_dev_.download(pr, 2);
  pairs_ = static_cast<long long>(pr[0]);
  n_entries_ = static_cast<long long>(pr[1]);
  return true;
}

namespace {

// The rows of M and L of `ncells` device cells (expansion_rows.h: levels below `from` whole, the
// others in the windows w, a level each) into rows (ncells entries, -1 for a cell kept nowhere);
// returns the number of rows.
int expansion_rows_device(const GCell* cells, int ncells, double lo_z, double side0, int from,
                          const std::vector<PlaneWindow>& w, DeviceArray<int>& rows, DeviceBytes& temp) {
  std::vector<int2> wv(w.size());
  for (std::size_t l = 0; l < w.size(); ++l) wv[l] = make_int2(w[l].first, w[l].count);
  const DeviceArray<int2> wd(wv);
  DeviceArray<int> flags(static_cast<std::size_t>(ncells) + 1);
  VH_CHECK_CUDA(cudaMemset(flags.data() + ncells, 0, sizeof(int)));
  keep_kernel<<<blocks_for(ncells, 256), 256>>>(cells, ncells, lo_z, side0, from, wd.data(), flags.data());
  VH_CHECK_LAUNCH();
  rows.resize(static_cast<std::size_t>(ncells) + 1);
  std::size_t bytes = 0;
  VH_CHECK_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, bytes, flags.data(), rows.data(), ncells + 1));
  temp.reserve(std::max<std::size_t>(bytes, 1));
  VH_CHECK_CUDA(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, flags.data(), rows.data(), ncells + 1));
  int n = 0;
  VH_CHECK_CUDA(cudaMemcpy(&n, rows.data() + ncells, sizeof(int), cudaMemcpyDeviceToHost));
  rows_kernel<<<blocks_for(ncells, 256), 256>>>(ncells, flags.data(), rows.data());
  VH_CHECK_LAUNCH();
  return n;
}

}  // namespace

void UniformFar::keep_rows(const GCell* cells, int from) {
  n_rows_ = 0;
  whole_ = 0;
  if (from > L_) return;  // every cell at its index
  std::vector<PlaneWindow> w = source_planes();
  w.resize(static_cast<std::size_t>(L_) + 1, PlaneWindow{0, 1 << L_});  // (no FFT level: whole)
  for (const auto& [l, f] : fft_) {  // a window must hold its targets' planes (a reach about 0)
    const ParentReach r = parent_z_reach(f.st);
    if (r.lo > 0 || r.hi < 0) w[l] = {0, 1 << l};
  }
  n_rows_ = expansion_rows_device(cells, ncells_, lo_z_, side0_, from, w, rows_, scan_temp_);
  const long long ng = level_offset(L_ + 1);
  row_grid_.resize(static_cast<std::size_t>(ng));
  grid_rows_kernel<<<blocks_for(ng, 256), 256>>>(ng, grid_.data(), rows_.data(), row_grid_.data());
  VH_CHECK_LAUNCH();
  whole_ = static_cast<int>(level_offset(from));
}

int expansion_rows_gpu(const std::vector<Cell>& cells, double lo_z, double side0, int from,
                       const std::vector<PlaneWindow>& windows, std::vector<int>& rows) {
  std::vector<GCell> g(cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const Cell& c = cells[i];
    g[i] = GCell{c.center[0], c.center[1], c.center[2], c.begin, c.end, c.parent, c.level};
  }
  const DeviceArray<GCell> dg(g);
  DeviceArray<int> dr;
  DeviceBytes temp;
  const int n = expansion_rows_device(dg.data(), static_cast<int>(g.size()), lo_z, side0, from, windows, dr, temp);
  rows.resize(cells.size());
  dr.download(rows.data(), rows.size());
  return n;
}

std::vector<PlaneWindow> UniformFar::source_planes() const {
  const int L = fft_.empty() ? 1 : fft_.rbegin()->first;
  std::vector<PlaneWindow> w(L + 1);
  for (int l = 0; l <= L; ++l) w[l] = {0, 1 << l};
  for (const auto& [l, f] : fft_) {
    const int m = 1 << (l - 1);
    if (f.nz == m) continue;
    const ParentReach r = parent_z_reach(f.st);
    w[l] = {2 * (((f.z0 + r.lo) % m + m) % m), 2 * (f.nz + r.hi - r.lo)};
  }
  return w;
}

void UniformFar::m2l(const double2* M, double2* L, cudaStream_t s) const {
  const int* grid = n_rows_ > 0 ? row_grid_.data() : grid_.data();  // the cells' rows of M and L
  for (const auto& [l, f] : fft_)
    f.op->apply_device(M, L, grid + level_offset(l), s, f.z0, f.nz);
}

void uniform_m2l(const UniformFar* u, FarWork& w, cudaStream_t s) {
  if (u) u->m2l(w.M.data(), w.L.data(), s);
}

}  // namespace vh::fmm
