#include "fmm/let.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstddef>

#include "base/comm.h"
#include "fmm/traverse_kernel.h"

namespace vh::fmm {

namespace {

// A particle as it travels.
struct LetParticle {
  Vec3 x, alpha;
  double sigma;
};

// How a cell goes to one rank: as a multipole or as particles (a cell some shift's walk reaches
// and does not open), or opened for some shift, when only its children's data travel (the
// receiver's M2M rebuilds its multipole); for one rank the strongest over the shifts counts.
enum Send : char { kNone = 0, kMultipole = 1, kParticles = 2, kOpened = 3 };

}  // namespace

bool taken_whole(const Vec3& c, double radius, const Vec3& bmin, const Vec3& bmax, double sigma_max, const Vec3& s,
                 const Vec3& lo, const Vec3& hi, const Acceptance& mac) {
  const Vec3 cs = {c[0] + s[0], c[1] + s[1], c[2] + s[2]};
  const Vec3 blo = {bmin[0] + s[0], bmin[1] + s[1], bmin[2] + s[2]};
  const Vec3 bhi = {bmax[0] + s[0], bmax[1] + s[1], bmax[2] + s[2]};
  return accept(0.0, radius, point_box_distance(cs, lo, hi), box_box_distance(blo, bhi, lo, hi), sigma_max, mac.theta,
                mac.rcut_per_sigma);
}

namespace {

// The sender's walk of the header comment for one target box [lo, hi] and one shift s, depth
// first from cell b: appends the cells not opened, (cell, how), in the order met.  A cell taken
// whole goes as particles when it has at most particle_limit of them (fewer bytes than its
// multipole).
void walk(const Tree& src, int b, const Vec3& lo, const Vec3& hi, const Vec3& s, const Acceptance& mac,
          int particle_limit, std::vector<std::pair<int, Send>>& out) {
  const Cell& B = src.cells[b];
  if (B.begin == B.end) return;
  if (taken_whole(B.center, B.radius, B.bmin, B.bmax, B.sigma_max, s, lo, hi, mac)) {
    out.push_back({b, B.end - B.begin <= particle_limit ? kParticles : kMultipole});
  } else if (B.leaf()) {
    out.push_back({b, kParticles});
  } else {
    for (int ch = B.child; ch < B.child + B.nchild; ++ch) walk(src, ch, lo, hi, s, mac, particle_limit, out);
  }
}

// One rank's LET as this rank sends it.
struct Outgoing {
  std::vector<LetCell> cells;
  std::vector<cplx> M;
  std::vector<LetParticle> particles;
};

// The LET for the target box [lo, hi]: the walks of every shift (in parallel), and the union of
// the walked subtrees, the cells not opened and their ancestors, in the tree's order (parents
// first): a cell opened for some shift travels without data (all its children travel: the walk
// opens a cell whole), the others with their multipole or particles.  So a cell that far
// images take whole and near ones open costs a record, not a multipole.
Outgoing build_outgoing(const Tree& src, const std::vector<cplx>& M, const std::vector<Vec3>& as, int p,
                        const std::vector<Vec3>& shifts, const Acceptance& mac, const Vec3& lo, const Vec3& hi,
                        std::vector<char>& how, std::vector<int>& slot) {
  const int nc = ncoef(p), nshift = static_cast<int>(shifts.size());
  const int particle_limit = static_cast<int>(3 * nc * sizeof(cplx) / sizeof(LetParticle));
  std::vector<std::vector<std::pair<int, Send>>> met(nshift);
#pragma omp parallel for schedule(dynamic, 1)
  for (int s = 0; s < nshift; ++s) walk(src, 0, lo, hi, shifts[s], mac, particle_limit, met[s]);
  std::vector<int> used;  // every cell of the union, once
  auto mark = [&](int b, Send h) {
    if (how[b] == kNone) used.push_back(b);
    how[b] = std::max(how[b], static_cast<char>(h));
  };
  for (const auto& m : met)
    for (const auto& e : m) {
      mark(e.first, e.second);
      for (int a = src.cells[e.first].parent; a >= 0 && how[a] != kOpened; a = src.cells[a].parent) mark(a, kOpened);
    }
  std::sort(used.begin(), used.end());
  Outgoing out;
  for (int b : used) {
    const Cell& B = src.cells[b];
    slot[b] = static_cast<int>(out.cells.size());
    LetCell c;
    c.center = B.center;
    c.radius = B.radius;
    c.bmin = B.bmin;
    c.bmax = B.bmax;
    c.sigma_max = B.sigma_max;
    c.count = B.end - B.begin;
    c.parent = B.parent >= 0 ? slot[B.parent] : -1;  // parents come first: in the union, and a lower index
    if (how[b] == kParticles) {
      c.first = static_cast<int>(out.particles.size());
      for (int i = B.begin; i < B.end; ++i) out.particles.push_back({src.x[i], as[i], src.sigma[i]});
    } else if (how[b] == kMultipole) {
      c.multipole = static_cast<int>(out.M.size() / (3 * nc));
      out.M.insert(out.M.end(), M.begin() + std::size_t(b) * 3 * nc, M.begin() + std::size_t(b + 1) * 3 * nc);
    }
    out.cells.push_back(c);
  }
  for (int b : used) {  // reset for the next rank
    how[b] = kNone;
    slot[b] = -1;
  }
  return out;
}

// Bytes of a LET with these counts (cells, multipole coefficients, particles).
long long let_bytes(const std::size_t n[3]) {
  return static_cast<long long>(n[0] * sizeof(LetCell) + n[1] * sizeof(cplx) + n[2] * sizeof(LetParticle));
}

// alltoallv of the per-rank pieces out[r].*member, elements of type T, the counts known.
template <class T>
std::vector<T> exchange(const Comm& comm, const std::vector<std::vector<T>>& send,
                        const std::vector<std::size_t>& recv_counts) {
  const int R = comm.size();
  std::vector<std::size_t> sc(R), sd(R), rd(R);
  std::size_t ns = 0, nr = 0;
  for (int r = 0; r < R; ++r) {
    sc[r] = send[r].size();
    sd[r] = ns;
    ns += sc[r];
    rd[r] = nr;
    nr += recv_counts[r];
  }
  std::vector<T> flat;
  flat.reserve(ns);
  for (const auto& v : send) flat.insert(flat.end(), v.begin(), v.end());
  std::vector<T> recv(nr);
  comm.alltoallv(flat.data(), sc, sd, recv.data(), recv_counts, rd, sizeof(T));
  return recv;
}

}  // namespace

LetSources exchange_let(const Comm& comm, const std::vector<RankBox>& boxes, const Tree& src,
                        const std::vector<cplx>& M, const std::vector<Vec3>& as, int p, const std::vector<Vec3>& shifts,
                        const Acceptance& mac, LetStats& sent, LetStats& received) {
  const int R = comm.size(), me = comm.rank(), nc = ncoef(p);
  std::vector<Outgoing> out(R);
  if (src.size() > 0) {
    std::vector<char> how(src.cells.size(), kNone);
    std::vector<int> slot(src.cells.size(), -1);
    for (int r = 0; r < R; ++r)
      if (r != me && boxes[r].targets > 0)
        out[r] = build_outgoing(src, M, as, p, shifts, mac, boxes[r].target_lo, boxes[r].target_hi, how, slot);
  }
  // The counts, three a rank: cells, multipole coefficients, particles.
  std::vector<std::size_t> counts(3 * R), recv_counts(3 * R);
  sent = LetStats{};
  for (int r = 0; r < R; ++r) {
    std::size_t* n = &counts[3 * r];
    n[0] = out[r].cells.size();
    n[1] = out[r].M.size();
    n[2] = out[r].particles.size();
    sent.cells += static_cast<long long>(n[0]);
    sent.multipoles += static_cast<long long>(n[1] / (3 * nc));
    sent.particles += static_cast<long long>(n[2]);
    sent.bytes += let_bytes(n);
  }
  {
    std::vector<std::size_t> three(R, 3), displ(R);
    for (int r = 0; r < R; ++r) displ[r] = 3 * r;
    comm.alltoallv(counts.data(), three, displ, recv_counts.data(), three, displ, sizeof(std::size_t));
  }
  auto column = [&](int k) {
    std::vector<std::size_t> c(R);
    for (int r = 0; r < R; ++r) c[r] = recv_counts[3 * r + k];
    return c;
  };
  auto pieces = [&](auto member) {
    std::vector<std::decay_t<decltype(out[0].*member)>> v(R);
    for (int r = 0; r < R; ++r) v[r] = std::move(out[r].*member);
    return v;
  };
  LetSources let;
  let.cells = exchange(comm, pieces(&Outgoing::cells), column(0));
  let.M = exchange(comm, pieces(&Outgoing::M), column(1));
  const std::vector<LetParticle> particles = exchange(comm, pieces(&Outgoing::particles), column(2));

  // Indices within each sender's piece become indices into the concatenation; every cell's
  // multipole goes to its own slot (cell k at k 3 ncoef(p)).
  received = LetStats{};
  const std::vector<cplx> Min = std::move(let.M);
  let.M.assign(let.cells.size() * 3 * nc, cplx(0.0));
  std::size_t cell0 = 0, mult0 = 0, part0 = 0;
  for (int r = 0; r < R; ++r) {
    const std::size_t* n = &recv_counts[3 * r];
    if (n[0] > 0) let.roots.push_back(static_cast<int>(cell0));  // parents first: the root first
    for (std::size_t c = cell0; c < cell0 + n[0]; ++c) {
      LetCell& C = let.cells[c];
      if (C.multipole >= 0)
        std::copy_n(Min.begin() + (mult0 + C.multipole) * 3 * nc, 3 * nc, let.M.begin() + c * 3 * nc);
      C.multipole = static_cast<int>(c);
      if (C.first >= 0) C.first += static_cast<int>(part0);
      if (C.parent >= 0) C.parent += static_cast<int>(cell0);
    }
    received.cells += static_cast<long long>(n[0]);
    received.multipoles += static_cast<long long>(n[1] / (3 * nc));
    received.particles += static_cast<long long>(n[2]);
    received.bytes += let_bytes(n);
    cell0 += n[0];
    mult0 += n[1] / (3 * nc);
    part0 += n[2];
  }
  let.x.resize(particles.size());
  let.alpha.resize(particles.size());
  let.sigma.resize(particles.size());
  for (std::size_t i = 0; i < particles.size(); ++i) {
    let.x[i] = particles[i].x;
    let.alpha[i] = particles[i].alpha;
    let.sigma[i] = particles[i].sigma;
  }
  // The multipoles of the cells that came as particles (P2M about the sender's cube centre),
  // then those of the opened cells, level by level up (M2M of the children, in their order).
  const int ncell = static_cast<int>(let.cells.size());
#pragma omp parallel for schedule(dynamic, 8)
  for (int k = 0; k < ncell; ++k) {
    const LetCell& C = let.cells[k];
    if (C.first < 0) continue;
    for (int i = C.first; i < C.first + C.count; ++i)
      p2m(p, {let.x[i][0] - C.center[0], let.x[i][1] - C.center[1], let.x[i][2] - C.center[2]}, let.alpha[i],
          &let.M[std::size_t(k) * 3 * nc]);
  }
  // Children from the parent links: a sent cell's children are consecutive (the tree's are, and
  // an opened cell's travel all).
  let.child.assign(ncell, -1);
  let.nchild.assign(ncell, 0);
  std::vector<int> depth(ncell, 0);
  int max_depth = 0;
  for (int k = 0; k < ncell; ++k) {
    const int a = let.cells[k].parent;
    if (a < 0) continue;
    if (let.nchild[a]++ == 0) let.child[a] = k;
    depth[k] = depth[a] + 1;
    max_depth = std::max(max_depth, depth[k]);
  }
  std::vector<std::vector<int>> at_depth(max_depth + 1);
  for (int k = 0; k < ncell; ++k)
    if (let.nchild[k] > 0) at_depth[depth[k]].push_back(k);
  for (int d = max_depth; d >= 0; --d)
#pragma omp parallel for schedule(dynamic, 4)
    for (int q = 0; q < static_cast<int>(at_depth[d].size()); ++q) {
      const int k = at_depth[d][q];
      const LetCell& C = let.cells[k];
      for (int h = let.child[k]; h < let.child[k] + let.nchild[k]; ++h) {
        const LetCell& H = let.cells[h];
        m2m(p, {H.center[0] - C.center[0], H.center[1] - C.center[1], H.center[2] - C.center[2]},
            &let.M[std::size_t(h) * 3 * nc], &let.M[std::size_t(k) * 3 * nc]);
      }
    }
  return let;
}

namespace {

enum Kind { kM2L, kM2P, kP2P, kDefer };

// One list entry of a receiver's traversal, or (kDefer) a call interact(target, in.source) at
// the shift in.shift left to phase 2.
struct Record {
  int target;
  Kind kind;
  Interaction in;
};

// The receiver's traversal of the header comment for one shift, as build_lists' (fmm/traverse.cpp:
// the same two phases; with task_root, calls at those targets are recorded, not run).
struct LetTraversal {
  const Tree& tgt;
  const LetSources& let;
  const Vec3& lo;
  const Vec3& hi;
  const Vec3& shift;
  int s;
  const Acceptance& mac;
  const std::vector<char>* task_root;
  std::vector<Record>& out;

  void interact(int a, int b) {
    const Cell& A = tgt.cells[a];
    if (A.begin == A.end) return;
    if (task_root && (*task_root)[a]) {
      out.push_back({a, kDefer, {b, s}});
      return;
    }
    const LetCell& B = let.cells[b];
    const bool particles = B.first >= 0;
    if (far_pair(A.center.data(), A.radius, A.bmin.data(), A.bmax.data(), B.center.data(), B.radius,
                 B.bmin.data(), B.bmax.data(), B.sigma_max, shift.data(), mac.theta, mac.rcut_per_sigma)) {
      const long long pairs = static_cast<long long>(A.end - A.begin) * B.count;
      const bool direct = particles && A.leaf() && s == 0 && pairs <= mac.p2p_max_pairs;  // as build_lists
      out.push_back({a, direct ? kP2P : kM2L, {b, s}});
      return;
    }
    // B can be split where the sender opened it for this shift (its children are here then).
    const bool split_b =
        let.nchild[b] > 0 && !taken_whole(B.center, B.radius, B.bmin, B.bmax, B.sigma_max, shift, lo, hi, mac);
    if (!split_b || (!A.leaf() && A.radius >= B.radius)) {
      if (A.leaf()) {  // B is a leaf for this shift: particles, or a multipole taken whole
        out.push_back({a, particles ? kP2P : kM2P, {b, s}});
        return;
      }
      for (int c = A.child; c < A.child + A.nchild; ++c) interact(c, b);
    } else {
      for (int c = let.child[b]; c < let.child[b] + let.nchild[b]; ++c) interact(a, c);
    }
  }
};

}  // namespace

LetLists let_lists(const Tree& tgt, const LetSources& let, const Vec3& lo, const Vec3& hi,
                   const std::vector<Vec3>& shifts, const Acceptance& mac) {
  LetLists lists;
  const int nct = static_cast<int>(tgt.cells.size());
  lists.m2l.resize(nct);
  lists.p2p.resize(nct);
  lists.m2p.resize(nct);
  if (tgt.size() == 0 || let.roots.empty()) return lists;
  // Task roots as in build_lists (task_roots()).  Phase 1 runs each (sender, shift) from the
  // roots down to them (in parallel, each its records), phase 2 each task root's recorded calls
  // in (sender, shift) order (task roots in parallel: no two share a cell), so the lists are the
  // serial order's.
  std::vector<char> task_root;
  const std::vector<int> roots = task_roots(tgt, task_root);
  const int nshift = static_cast<int>(shifts.size()), npair = static_cast<int>(let.roots.size()) * nshift;
  std::vector<std::vector<Record>> rec(npair);
#pragma omp parallel for schedule(dynamic, 1)
  for (int q = 0; q < npair; ++q) {
    const int s = q % nshift;
    LetTraversal t{tgt, let, lo, hi, shifts[s], s, mac, &task_root, rec[q]};
    t.interact(0, let.roots[q / nshift]);
  }
  auto list_of = [&](Kind k) -> std::vector<std::vector<Interaction>>& {
    return k == kM2L ? lists.m2l : k == kM2P ? lists.m2p : lists.p2p;
  };
  std::vector<std::vector<Interaction>> queue(nct);
  for (const auto& r : rec)
    for (const Record& e : r) (e.kind == kDefer ? queue : list_of(e.kind))[e.target].push_back(e.in);
  rec.clear();
#pragma omp parallel for schedule(dynamic, 1)
  for (int k = 0; k < static_cast<int>(roots.size()); ++k) {
    const int T = roots[k];
    std::vector<Record> out;
    for (const Interaction& call : queue[T]) {
      LetTraversal t{tgt, let, lo, hi, shifts[call.shift], call.shift, mac, nullptr, out};
      t.interact(T, call.source);
    }
    for (const Record& e : out) list_of(e.kind)[e.target].push_back(e.in);
  }
  return lists;
}

void received_sums(const Tree& tgt, const Tree& src, bool self, const Lists& own, const std::vector<Vec3>& as,
                   const std::vector<cplx>& M, const LetSources& let, const LetLists& lists, int p,
                   double lattice_boxes, const Vec3& lattice_alpha, std::vector<Vec3>& sums,
                   std::vector<Mat3>& image_sums) {
  const int nc = ncoef(p), nct = static_cast<int>(tgt.cells.size());
  // A multipole's monopole coefficient, component a: the sum of its sources' alpha_a.
  auto monopole = [&](const std::vector<cplx>& MM, int j) {
    const std::size_t b = std::size_t(j) * 3 * nc;
    return Vec3{MM[b].real(), MM[b + nc].real(), MM[b + 2 * nc].real()};
  };
  // What each target cell's local expansion takes (M2L, own and LET), then down the levels as
  // the L2L carries it: [0] sum alpha, [1] sum (s + 1) alpha.
  std::vector<std::array<Vec3, 2>> acc(nct, {Vec3{}, Vec3{}});
  auto add = [](std::array<Vec3, 2>& a, const Vec3& v, int s) {
    for (int d = 0; d < 3; ++d) {
      a[0][d] += v[d];
      a[1][d] += (s + 1) * v[d];
    }
  };
#pragma omp parallel for schedule(dynamic, 16)
  for (int i = 0; i < nct; ++i) {
    for (const Interaction& in : own.m2l[i]) add(acc[i], monopole(M, in.source), in.shift);
    for (const Interaction& in : lists.m2l[i]) add(acc[i], monopole(let.M, let.cells[in.source].multipole), in.shift);
  }
  for (std::size_t lev = 1; lev < tgt.levels.size(); ++lev)
    for (int c : tgt.levels[lev]) {
      const auto& P = acc[tgt.cells[c].parent];
      for (int k = 0; k < 2; ++k)
        for (int d = 0; d < 3; ++d) acc[c][k][d] += P[k][d];
    }
  // At each target of a leaf: the cell's, its P2P and M2P entries, the lattice.
#pragma omp parallel for schedule(dynamic, 8)
  for (int c = 0; c < nct; ++c) {
    const Cell& A = tgt.cells[c];
    if (!A.leaf()) continue;
    for (int t = A.begin; t < A.end; ++t) {
      std::array<Vec3, 2> a = acc[c];
      for (const Interaction& in : own.p2p[c]) {
        const Cell& B = src.cells[in.source];
        for (int q = B.begin; q < B.end; ++q)
          if (!(self && in.shift == 0 && q == t)) add(a, as[q], in.shift);
      }
      for (const Interaction& in : lists.p2p[c]) {
        const LetCell& B = let.cells[in.source];
        for (int q = B.first; q < B.first + B.count; ++q) add(a, let.alpha[q], in.shift);
      }
      for (const Interaction& in : lists.m2p[c]) add(a, monopole(let.M, let.cells[in.source].multipole), in.shift);
      for (int d = 0; d < 3; ++d) {
        sums[t][d] += a[0][d];
        image_sums[t][0][d] += a[1][d];
        image_sums[t][1][d] += lattice_boxes * lattice_alpha[d];
      }
    }
  }
}

}  // namespace vh::fmm
