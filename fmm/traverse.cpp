#include "fmm/traverse.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

namespace vh::fmm {

double rho_tolerance(double tol) {
  // 1 - g(rho) = erfc(rho) + (2/sqrt(pi)) rho exp(-rho^2), decreasing in rho.
  auto one_minus_g = [](double r) { return std::erfc(r) + 2.0 / std::sqrt(M_PI) * r * std::exp(-r * r); };
  double lo = 0, hi = 30;
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (one_minus_g(mid) > tol) lo = mid; else hi = mid;
  }
  return hi;
}

namespace {

// The traversal of docs/design.md in two phases with the lists of the serial recursion
// (interact(0, 0) for shift 0, 1, 2, ... in turn), for any number of threads.
//
// Task roots: the cells of level `task_level` and the leaves above it.  Every descent of the
// target side into a task root's subtree passes through a call interact(T, j) with T that root
// (targets are split one level at a time), and the serial recursion runs each such call to the
// end before it makes the next call.  So the entries of the cells in T's subtree, in serial
// order, are the concatenation over those calls (in the order the serial recursion makes them)
// of what each call appends.
//  Phase 1 runs the recursion per shift (shifts in parallel), stops at task roots and records
//  (T, j) in the order met; cells above the task level get their entries here, also recorded
//  per shift.  Merging the records shift by shift gives the serial order of both.
//  Phase 2 runs the recorded calls of each task root in that order (roots in parallel; a root's
//  subtree is touched by no other root), appending directly to the lists.
struct Record {
  int target;  // target cell, or task root for a deferred call
  int source;
  int kind;    // 0: M2L entry, 1: P2P entry, 2: deferred call interact(target, source)
};

template <bool Defer>
struct Traversal {
  const Tree& tgt;
  const Tree& src;
  const Vec3& shift;
  int s;
  const Acceptance& mac;
  const std::vector<char>* task_root;  // Defer: stop at these targets
  std::vector<Record>* out;            // Defer: where entries and stops go
  Lists* lists;                        // !Defer: append here

  void add(int kind, int i, int j) {
    if constexpr (Defer)
      out->push_back({i, j, kind});
    else if (kind == 0)
      (*lists).m2l[i].push_back({j, s});
    else
      (*lists).p2p[i].push_back({j, s});
  }

  void interact(int i, int j) {
    if constexpr (Defer) {
      if ((*task_root)[i]) {
        out->push_back({i, j, 2});
        return;
      }
    }
    const Cell& A = tgt.cells[i];
    const Cell& B = src.cells[j];
    if (far_pair(A.center.data(), A.radius, A.bmin.data(), A.bmax.data(), B.center.data(), B.radius, B.bmin.data(),
                 B.bmax.data(), B.sigma_max, shift.data(), mac.theta, mac.rcut_per_sigma)) {
      const long long pairs = static_cast<long long>(A.end - A.begin) * (B.end - B.begin);
      if (A.leaf() && s == 0 && pairs <= mac.p2p_max_pairs)
        add(1, i, j);
      else
        add(0, i, j);
      return;
    }
    if (A.leaf() && B.leaf()) {
      add(1, i, j);
      return;
    }
    if (B.leaf() || (!A.leaf() && A.radius >= B.radius)) {
      for (int c = A.child; c < A.child + A.nchild; ++c) interact(c, j);
    } else {
      for (int c = B.child; c < B.child + B.nchild; ++c) interact(i, c);
    }
  }
};

}  // namespace

std::vector<int> task_roots(const Tree& tgt, std::vector<char>& is_root) {
  const int nct = static_cast<int>(tgt.cells.size());
  const int nthreads = omp_get_max_threads();
  int task_level = 0;
  while (task_level + 1 < static_cast<int>(tgt.levels.size()) &&
         static_cast<int>(tgt.levels[task_level].size()) < 64 * nthreads)
    ++task_level;
  is_root.assign(nct, 0);
  std::vector<int> roots;
  for (int c = 0; c < nct; ++c) {
    const Cell& C = tgt.cells[c];
    if (C.level == task_level || (C.leaf() && C.level < task_level)) {
      is_root[c] = 1;
      roots.push_back(c);
    }
  }
  return roots;
}

Lists build_lists(const Tree& tgt, const Tree& src, const std::vector<Vec3>& shifts, const Acceptance& mac) {
  Lists lists;
  const int nct = static_cast<int>(tgt.cells.size());
  lists.m2l.resize(nct);
  lists.p2p.resize(nct);
  if (tgt.size() == 0 || src.size() == 0) return lists;
  const int nshift = static_cast<int>(shifts.size());
  std::vector<char> task_root;
  const std::vector<int> roots = task_roots(tgt, task_root);
  // Phase 1: per shift, down to the task roots.
  std::vector<std::vector<Record>> rec(nshift);
#pragma omp parallel for schedule(dynamic, 1) if (nshift > 1)
  for (int s = 0; s < nshift; ++s) {
    Traversal<true> t{tgt, src, shifts[s], s, mac, &task_root, &rec[s], nullptr};
    t.interact(0, 0);
  }
  // Merge shift by shift: entries of the cells above the task level, and the calls of each task
  // root (compressed rows, in the order met).
  std::vector<int> qbegin(nct + 1, 0);
  for (int s = 0; s < nshift; ++s)
    for (const Record& r : rec[s]) {
      if (r.kind == 2) ++qbegin[r.target + 1];
      else if (r.kind == 0) lists.m2l[r.target].push_back({r.source, s});
      else lists.p2p[r.target].push_back({r.source, s});
    }
  for (int c = 0; c < nct; ++c) qbegin[c + 1] += qbegin[c];
  std::vector<Interaction> queue(qbegin[nct]);
  {
    std::vector<int> fill(qbegin.begin(), qbegin.end() - 1);
    for (int s = 0; s < nshift; ++s) {
      for (const Record& r : rec[s])
        if (r.kind == 2) queue[fill[r.target]++] = {r.source, s};
      std::vector<Record>().swap(rec[s]);
    }
  }
  // Phase 2: each task root's calls in order; roots in parallel (largest work first is not
  // needed for determinism; dynamic scheduling balances).
#pragma omp parallel for schedule(dynamic, 1)
  for (int k = 0; k < static_cast<int>(roots.size()); ++k) {
    const int T = roots[k];
    for (int q = qbegin[T]; q < qbegin[T + 1]; ++q) {
      const int s = queue[q].shift;
      Traversal<false> t{tgt, src, shifts[s], s, mac, nullptr, nullptr, &lists};
      t.interact(T, queue[q].source);
    }
  }
  return lists;
}

}  // namespace vh::fmm
