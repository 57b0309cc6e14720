// A periodic lattice of blobs, its tree and multipoles: what the tests of
// fmm/level_stencil.h and fmm/m2l_fft_gpu.h start from.
#pragma once

#include <cmath>
#include <random>
#include <vector>

#include "fmm/expansions.h"
#include "fmm/level_stencil.h"
#include "fmm/periodic.h"
#include "fmm/tree.h"

namespace vh::fmm::testing {

struct LevelSetup {
  Tree tree;
  std::vector<cplx> M;  ///< every cell's multipole, 3 ncoef(p) each (P2M and M2M of random strengths)
};

/// N^3 blobs on the lattice (i + 1/4) h of the periodic box, h = 2 pi / N, sigma = h, random
/// strengths; the tree with `ncrit` and the multipoles of order p.
inline LevelSetup lattice_setup(int N, int ncrit, int p, unsigned seed) {
  LevelSetup s;
  const double h = kBoxLength / N;
  std::vector<Vec3> x;
  std::vector<double> sigma;
  for (int k = 0; k < N; ++k)
    for (int j = 0; j < N; ++j)
      for (int i = 0; i < N; ++i) {
        x.push_back({(i + 0.25) * h, (j + 0.25) * h, (k + 0.25) * h});
        sigma.push_back(h);
      }
  s.tree = build_tree(x, sigma, {0.5 * kBoxLength, 0.5 * kBoxLength, 0.5 * kBoxLength}, 0.5 * kBoxLength, ncrit,
                      TreeBuild{true, false});
  const int nc = ncoef(p);
  s.M.assign(s.tree.cells.size() * 3 * nc, cplx(0));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int lev = static_cast<int>(s.tree.levels.size()) - 1; lev >= 0; --lev)
    for (int c : s.tree.levels[lev]) {
      const Cell& C = s.tree.cells[c];
      cplx* Mc = &s.M[static_cast<std::size_t>(c) * 3 * nc];
      if (C.leaf())
        for (int q = C.begin; q < C.end; ++q)
          p2m(p, {s.tree.x[q][0] - C.center[0], s.tree.x[q][1] - C.center[1], s.tree.x[q][2] - C.center[2]},
              {u(rng), u(rng), u(rng)}, Mc);
      for (int k = C.child; k < C.child + C.nchild; ++k) {
        const Cell& K = s.tree.cells[k];
        m2m(p, {K.center[0] - C.center[0], K.center[1] - C.center[1], K.center[2] - C.center[2]},
            &s.M[static_cast<std::size_t>(k) * 3 * nc], Mc);
      }
    }
  return s;
}

/// The M2L of `st` into the one cell (ix, iy, iz) of its level, translation by translation (m2l
/// of fmm/expansions.h, d = t side), added to L (3 ncoef(p)): M holds every cell's multipole and
/// grid = level_grid(tree, st.level).
inline void cell_m2l_direct(const std::vector<cplx>& M, const std::vector<int>& grid, int p, const LevelStencil& st,
                            int ix, int iy, int iz, cplx* L) {
  const int nc = ncoef(p), n = 1 << st.level;
  const double side = kBoxLength / n;
  const int c = (ix & 1) + 2 * (iy & 1) + 4 * (iz & 1);
  for (const auto& t : st.offsets[c]) {
    const int j[3] = {((ix + t[0]) % n + n) % n, ((iy + t[1]) % n + n) % n, ((iz + t[2]) % n + n) % n};
    const int b = grid[(j[2] * n + j[1]) * n + j[0]];
    m2l(p, {t[0] * side, t[1] * side, t[2] * side}, &M[static_cast<std::size_t>(b) * 3 * nc], L);
  }
}

/// cell_m2l_direct at every cell of the level: every cell's local expansion, zero elsewhere.
inline std::vector<cplx> stencil_m2l_direct(const LevelSetup& s, int p, const LevelStencil& st) {
  const int nc = ncoef(p), n = 1 << st.level;
  const std::vector<int> g = level_grid(s.tree, st.level);
  std::vector<cplx> L(s.M.size(), cplx(0));
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix < n; ++ix)
        cell_m2l_direct(s.M, g, p, st, ix, iy, iz, &L[static_cast<std::size_t>(g[(iz * n + iy) * n + ix]) * 3 * nc]);
  return L;
}

}  // namespace vh::fmm::testing
