// FarStages, the far field's one sequence of stages (far_gpu_device.h), and FarGpu, the GPU far
// field over host-built trees (far_gpu.h), which runs it over a FarPlan of the buffers uploaded
// here.
#include "base/cuda_check.h"
#include "fmm/far_gpu.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

#include "base/device_buffer.h"
#include "fmm/expansions.h"
#include "fmm/far_gpu_device.h"
#include "fmm/periodic.h"
#include "fmm/profile.h"
#include "fmm/p2p_gpu.h"
#include "fmm/particles_gpu.h"
#include "fmm/traverse_gpu.h"
#include "fmm/traverse_gpu_device.h"

namespace vh::fmm {

FarStages::FarStages() {
  for (auto& e : ev_) VH_CHECK_CUDA(cudaEventCreate(&e));
}

FarStages::~FarStages() {
  for (auto& e : ev_)
    if (e) cudaEventDestroy(e);
}

void FarStages::reserve(const FarPlan& f, const FarPeriodic& per) {
  const int nc = cidx(f.p + 1, 0), nf = (f.p + 1) * (f.p + 1), nfp = (nf + 1) & ~1;
  work_.M.reserve(multipole_rows(f) * 3 * nc);
  work_.L.reserve(local_rows(f) * 3 * nc);
  if (f.single_m2l) {
    work_.Mfold.reserve(static_cast<std::size_t>(m2l_list_cells(f)) * 3 * nfp);
    work_.tables.reserve(static_cast<std::size_t>(kTablesPerLevel) * nf * sizeof(float2));
  } else {
    work_.tables.reserve(static_cast<std::size_t>(f.table_levels) * kTablesPerLevel * nf * sizeof(double2));
  }
  if (per.on && per.images > 0) lattice_.set(f.p, per.r0, per.images);
  leaves_.prepare(f);
  levels_.prepare(f);
  leaves_prepared_ = true;
  lattice_work_.reserve(lattice_work_doubles(f.p));
  mean_.reserve(1);
  mean_part_.reserve(std::max(1, (f.ns + kMeanChunk - 1) / kMeanChunk));
}

void FarStages::upward(const FarPlan& f, cudaStream_t s) {
  if (!leaves_prepared_) {
    leaves_.prepare(f);
    levels_.prepare(f);
  }
  leaves_prepared_ = false;
  record(kUp0, s);
  far_clear_multipoles(f, work_, s);
  if (leaves_.sources()) {
    leaves_.p2m(f, work_, s);
  } else {
    far_p2m(f, work_, s);
  }
  far_m2m(f, work_, s, &levels_);
  record(kUp1, s);
}

const MeanTerms* FarStages::before_m2l(const FarPlan& f, const FarPeriodic& per, cudaStream_t s) {
  far_clear_locals(f, work_, s);
  if (!per.on) return nullptr;
  if (per.images > 0 && f.ns > 0 && f.nt > 0) {
    // The far lattice from the source root's multipole into the target root's local expansion
    // (both about the box centre).
    lattice_.set(f.p, per.r0, per.images);
    lattice_m2l_device(lattice_, work_.M.data(), work_.L.data(), lattice_work_, s);
  }
  if (f.mean) return f.mean;
  mean_.reserve(1);
  mean_terms_device(f.ns, f.xs, f.alpha, mean_.data(), mean_part_, s);
  return mean_.data();
}

FarGpuTimes FarStages::times() const {
  VH_CHECK_CUDA(cudaEventSynchronize(ev_[kL2P1]));
  auto ms = [&](int a, int b) {
    float v = 0;
    VH_CHECK_CUDA(cudaEventElapsedTime(&v, ev_[a], ev_[b]));
    return double(v);
  };
  return {ms(kUp0, kUp1), ms(kM2L0, kM2L1), ms(kM2L1, kL2L1) + ms(kL2P0, kL2P1),
          leaves_.sources() || leaves_.targets(), levels_.count()};
}

struct FarGpu::Impl {
  int p = 0, nc = 0, nf = 0, nt = 0, ns = 0;
  bool self = false;
  long long n_m2l = 0;
  DeviceArray<GCell> tcells, scells;
  DeviceArray<double4_32a> xs, xt, alpha, shifts;
  DeviceArray<int> src_leaves, tgt_leaves, first_child, nchild;
  DeviceArray<int> parents, children;
  DeviceArray<int> m2l_targets, m2l_goffset, m2l_groups;
  DeviceArray<int2> m2l_entries;
  DeviceArray<int> perm;    // sorted target -> input index (from tgt.perm)
  DeviceArray<double> out;  // u (3 per target), then grad (9 per target), input order
  FarPlan plan;  // the device addresses of the buffers above (or a P2PGpu's / SortedSourcesGpu's)
  FarStages stages;
  bool downward_done = false;
  // The constructors' common parts: parameters, cells, positions and level lists up (before
  // the M2L lists); the outputs allocated (after them).
  void setup(const Tree& tgt, const Tree& src, bool self, const std::vector<Vec3>& shifts, int p, const P2PGpu* near,
             StepTimer& st);
  void finish(const Tree& tgt, const Tree& src, StepTimer& st);
};

namespace {

std::vector<GCell> gcells(const Tree& t) {
  std::vector<GCell> g(t.cells.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    const Cell& c = t.cells[i];
    g[i] = GCell{c.center[0], c.center[1], c.center[2], c.begin, c.end, c.parent, c.level};
  }
  return g;
}

// Uploads x as double4 (x, y, z, 0).
void upload_positions(DeviceArray<double4_32a>& d, const std::vector<Vec3>& x) {
  d.upload_with(x.size(), [&](std::ptrdiff_t i) { return make_double4_32a(x[i][0], x[i][1], x[i][2], 0.0); });
}

// FarGpu's M2L arrays from the host lists (M2LArrays): target cells with a list, each list
// sorted by (source, shift) where it mixes shifts (as the CPU's M2L does), and its groups.
// alloc(n) gives room for the n entries (pinned staging memory for the upload, or a vector);
// cells in parallel.  Returns the number of entries.
template <class Alloc>
std::size_t group_m2l_lists(const Tree& tgt, const Lists& lists, std::vector<int>& tg, std::vector<int>& goff,
                            std::vector<int>& groups, Alloc&& alloc) {
  std::vector<int> off{0};
  tg.clear();
  for (std::size_t i = 0; i < tgt.cells.size() && i < lists.m2l.size(); ++i)
    if (!lists.m2l[i].empty()) {
      tg.push_back(static_cast<int>(i));
      off.push_back(off.back() + static_cast<int>(lists.m2l[i].size()));
    }
  const std::size_t n_ent = static_cast<std::size_t>(off.back());
  std::array<int, 2>* ent = alloc(n_ent);
  std::vector<int> ngroup(tg.size() + 1, 0);
#pragma omp parallel for schedule(dynamic, 16)
  for (int t = 0; t < static_cast<int>(tg.size()); ++t) {
    std::array<int, 2>* e = ent + off[t];
    const auto& l = lists.m2l[tg[t]];
    bool one_shift = true;
    for (std::size_t k = 0; k < l.size(); ++k) {
      e[k] = {l[k].source, l[k].shift};
      one_shift = one_shift && l[k].shift == l[0].shift;
    }
    // With one shift every source appears once (the traversal meets a pair once per shift):
    // each entry is its own group and the list needs no sorting.
    if (!one_shift) std::sort(e, e + l.size());  // (source, shift), lexicographic
    for (std::size_t k = 0; k < l.size(); ++k) ngroup[t + 1] += (k == 0 || e[k][0] != e[k - 1][0]) ? 1 : 0;
  }
  // Groups (one source, all its images): per target cell [goff[t], goff[t+1]) into `groups`,
  // group g = entries [groups[g], groups[g+1]).
  goff.assign(tg.size() + 1, 0);
  for (std::size_t t = 0; t < tg.size(); ++t) goff[t + 1] = goff[t] + ngroup[t + 1];
  groups.assign(goff.back() + 1, 0);
  groups[goff.back()] = off.back();
#pragma omp parallel for schedule(dynamic, 16)
  for (int t = 0; t < static_cast<int>(tg.size()); ++t) {
    int g = goff[t];
    for (int k = off[t]; k < off[t + 1]; ++k)
      if (k == off[t] || ent[k][0] != ent[k - 1][0]) groups[g++] = k;
  }
  return n_ent;
}

}  // namespace

void FarGpu::Impl::setup(const Tree& tgt, const Tree& src, bool self, const std::vector<Vec3>& shifts, int p,
                         const P2PGpu* near, StepTimer& st) {
  Impl& m = *this;
  if (p < 1 || p > kMaxGpuOrder)
    throw std::invalid_argument("FarGpu: p = " + std::to_string(p) + " must be in [1, " +
                                std::to_string(kMaxGpuOrder) + "] on the GPU");
  m.p = p;
  m.nc = ncoef(p);
  m.nf = (p + 1) * (p + 1);
  m.self = self;
  m.nt = tgt.size();
  m.ns = src.size();
  FarPlan& f = m.plan;
  f.p = p;
  f.nt = m.nt;
  f.ns = m.ns;

  m.scells.upload(gcells(src));
  if (!self) m.tcells.upload(gcells(tgt));
  f.n_scells = static_cast<int>(src.cells.size());
  f.n_tcells = static_cast<int>(tgt.cells.size());
  f.scells = m.scells.data();
  f.tcells = self ? f.scells : m.tcells.data();
  if (near) {
    f.xs = static_cast<const double4_32a*>(near->device_sources());
    f.xt = static_cast<const double4_32a*>(near->device_targets());
  } else {
    upload_positions(m.xs, src.x);
    if (!self) upload_positions(m.xt, tgt.x);
    f.xs = m.xs.data();
    f.xt = self ? f.xs : m.xt.data();
  }
  std::vector<double4_32a> sh(shifts.size());
  for (std::size_t s = 0; s < shifts.size(); ++s) sh[s] = make_double4_32a(shifts[s][0], shifts[s][1], shifts[s][2], 0);
  if (sh.empty()) sh.push_back(make_double4_32a(0, 0, 0, 0));
  m.shifts.upload(sh);
  f.shifts = m.shifts.data();
  f.side0 = 2 * tgt.cells[0].half;  // the trees share the root cube
  f.table_levels = static_cast<int>(std::min(tgt.levels.size(), src.levels.size()));
  st.mark("cells+positions up");

  // Source leaves, parents per level (bottom-up), children per level (top-down), target leaves.
  std::vector<int> sl, fc(src.cells.size()), nch(src.cells.size()), par, chl, tl;
  for (std::size_t c = 0; c < src.cells.size(); ++c) {
    fc[c] = src.cells[c].child;
    nch[c] = src.cells[c].nchild;
    if (src.cells[c].leaf() && src.cells[c].end > src.cells[c].begin) sl.push_back(static_cast<int>(c));
  }
  for (int lev = static_cast<int>(src.levels.size()) - 2; lev >= 0; --lev) {
    const int off = static_cast<int>(par.size());
    for (int c : src.levels[lev])
      if (src.cells[c].nchild > 0) par.push_back(c);
    if (static_cast<int>(par.size()) > off) f.m2m_levels.push_back({off, static_cast<int>(par.size()) - off});
  }
  for (int lev = 1; lev < static_cast<int>(tgt.levels.size()); ++lev) {
    const int off = static_cast<int>(chl.size());
    for (int c : tgt.levels[lev]) chl.push_back(c);
    if (static_cast<int>(chl.size()) > off) f.l2l_levels.push_back({off, static_cast<int>(chl.size()) - off});
  }
  for (std::size_t c = 0; c < tgt.cells.size(); ++c)
    if (tgt.cells[c].leaf() && tgt.cells[c].end > tgt.cells[c].begin) tl.push_back(static_cast<int>(c));
  f.n_src_leaves = static_cast<int>(sl.size());
  f.n_tgt_leaves = static_cast<int>(tl.size());
  m.src_leaves.upload(sl);
  m.first_child.upload(fc);
  m.nchild.upload(nch);
  m.parents.upload(par);
  m.children.upload(chl);
  m.tgt_leaves.upload(tl);
  f.src_leaves = m.src_leaves.data();
  f.first_child = m.first_child.data();
  f.nchild = m.nchild.data();
  f.parents = m.parents.data();
  f.children = m.children.data();
  f.tgt_leaves = m.tgt_leaves.data();
  st.mark("level lists");
}

void FarGpu::Impl::finish(const Tree& tgt, const Tree&, StepTimer& st) {
  Impl& m = *this;
  FarPlan& f = m.plan;
  f.m2l_targets = m.m2l_targets.data();
  f.m2l_goffset = m.m2l_goffset.data();
  f.m2l_groups = m.m2l_groups.data();
  f.m2l_entries = m.m2l_entries.data();
  st.mark("m2l lists up");
  if (!tgt.perm.empty()) {
    m.perm.upload(tgt.perm);
    f.perm = m.perm.data();
  }
  m.out.resize(static_cast<std::size_t>(m.nt) * 12);
}

FarGpu::FarGpu(const Tree& tgt, const Tree& src, bool self, const Lists& lists, const std::vector<Vec3>& shifts, int p,
               const P2PGpu* near)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  StepTimer st("far setup");
  m.setup(tgt, src, self, shifts, p, near, st);
  // The entries are written straight into the pinned staging memory (8.6e7 of them at 2^24
  // particles) and uploaded from there before anything else uses it.
  static_assert(sizeof(std::array<int, 2>) == sizeof(int2), "entry layout");
  std::vector<int> tg, goff, groups;
  void* ent = nullptr;
  const std::size_t n_ent = group_m2l_lists(tgt, lists, tg, goff, groups, [&](std::size_t n) {
    ent = pinned_staging(std::max<std::size_t>(1, n) * sizeof(int2));
    return static_cast<std::array<int, 2>*>(ent);
  });
  st.mark("m2l lists sorted");
  m.m2l_entries.upload(static_cast<const int2*>(ent), n_ent);
  m.m2l_goffset.upload(goff);
  m.m2l_groups.upload(groups);
  m.n_m2l = static_cast<long long>(n_ent);
  m.plan.n_m2l_targets = static_cast<int>(tg.size());
  m.m2l_targets.upload(tg);
  m.finish(tgt, src, st);
}

FarGpu::FarGpu(const Tree& tgt, const Tree& src, bool self, GpuLists& lists, const std::vector<Vec3>& shifts, int p,
               const P2PGpu* near)
    : impl_(std::make_unique<Impl>()) {
  if (!lists.dev || lists.dev->m2l_taken) throw std::invalid_argument("FarGpu: the GpuLists' M2L arrays were taken");
  if (lists.self != self || lists.shifts.size() != shifts.size())
    throw std::invalid_argument("FarGpu: GpuLists built for other self/shifts");
  Impl& m = *impl_;
  StepTimer st("far setup");
  m.setup(tgt, src, self, shifts, p, near, st);
  GpuListsDevice& d = *lists.dev;
  m.m2l_targets = std::move(d.m2l_targets);
  m.m2l_goffset = std::move(d.m2l_goffset);
  m.m2l_groups = std::move(d.m2l_groups);
  m.m2l_entries = std::move(d.m2l_entries);
  d.m2l_taken = true;
  m.n_m2l = lists.n_m2l;
  m.plan.n_m2l_targets = lists.n_m2l_targets;
  m.finish(tgt, src, st);
}

M2LArrays m2l_arrays(const Tree& tgt, const Lists& lists) {
  M2LArrays a;
  group_m2l_lists(tgt, lists, a.targets, a.goffset, a.groups, [&](std::size_t n) {
    a.entries.resize(n);
    return a.entries.data();
  });
  return a;
}

FarGpu::~FarGpu() = default;

void FarGpu::set_strengths(const SortedSourcesGpu& s) {
  Impl& m = *impl_;
  if (s.size() != m.ns) throw std::invalid_argument("FarGpu: one strength per source");
  m.plan.alpha = static_cast<const double4_32a*>(s.alpha_double());
  if (m.self) m.plan.perm = s.permutation();
}

void FarGpu::set_strengths(const std::vector<Vec3>& alpha) {
  Impl& m = *impl_;
  if (static_cast<int>(alpha.size()) != m.ns) throw std::invalid_argument("FarGpu: one strength per source");
  upload_positions(m.alpha, alpha);
  m.plan.alpha = m.alpha.data();
}

void FarGpu::set_single_m2l(bool on) {
  Impl& m = *impl_;
  if (m.downward_done && on != m.plan.single_m2l)
    throw std::logic_error("FarGpu::set_single_m2l after downward()");
  m.plan.single_m2l = on;
}

void FarGpu::upward() {
  Impl& m = *impl_;
  if (m.ns > 0 && !m.plan.alpha) throw std::runtime_error("FarGpu::upward: set_strengths first");
  m.stages.upward(m.plan, 0);
}

void FarGpu::downward(const P2PGpu* near, bool periodic, int r0, int images) {
  Impl& m = *impl_;
  const FarPlan& f = m.plan;
  if (f.n_tgt_leaves > 0 && !f.perm)
    throw std::invalid_argument("FarGpu: the targets' permutation is unknown (a tree without perm takes it from "
                                "set_strengths(const SortedSourcesGpu&) with self)");
  const bool with_near = near && near->n_targets() > 0;
  double* u_out = m.out.data();
  m.stages.downward(
      f, FarPeriodic{periodic, r0, images},
      [&] {
        if (near) near->make_default_stream_wait();
      },
      with_near ? near->device_result() : nullptr, with_near && near->device_result_is_double(), u_out,
      u_out + 3 * static_cast<std::size_t>(m.nt), 0);
  m.downward_done = true;
}

void FarGpu::get(std::vector<Vec3>& u, std::vector<Mat3>& grad) const {
  const Impl& m = *impl_;
  // Vec3 and Mat3 are arrays of doubles (3 and 9, no padding).
  static_assert(sizeof(Vec3) == 3 * sizeof(double) && sizeof(Mat3) == 9 * sizeof(double), "Vec3/Mat3 layout");
  if (u.size() != static_cast<std::size_t>(m.nt)) u.resize(m.nt);
  if (grad.size() != static_cast<std::size_t>(m.nt)) grad.resize(m.nt);
  if (m.nt == 0) return;
  // Through the pinned staging memory, copied out by all host threads (a pageable download of
  // 1.6 GB at 2^24 targets runs at a few GB/s).
  const std::size_t n = static_cast<std::size_t>(m.nt);
  double* h = static_cast<double*>(pinned_staging(12 * n * sizeof(double)));
  m.out.download(h, 12 * n);
  const double* hg = h + 3 * n;
  const std::ptrdiff_t nn = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < nn; ++i) {
    for (int c = 0; c < 3; ++c) u[i][c] = h[3 * i + c];
    for (int a = 0; a < 3; ++a)
      for (int c = 0; c < 3; ++c) grad[i][a][c] = hg[9 * i + 3 * a + c];
  }
}

FarGpuTimes FarGpu::times() const { return impl_->stages.times(); }

long long FarGpu::n_m2l() const { return impl_->n_m2l; }

}  // namespace vh::fmm
