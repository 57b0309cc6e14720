#include "core/slab.h"
#include "core/slab_copy.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/modes_kernel.h"

namespace vh {

Slab Slab::whole_grid(const Grid& g, int kmax) {
  Slab s;
  s.grid = g;
  s.kmax = kmax >= 0 ? kmax : g.n / 2 - 1;
  s.njy = 2 * s.kmax + 1;
  s.nnr = g.n - s.njy;
  s.nz = g.n;
  return s;
}

Slab Slab::make(const Grid& g, int kmax, const Comm& comm) {
  Slab s = layout(g, kmax, comm.rank(), comm.size());
  s.comm = comm;
  return s;
}

Slab Slab::layout(const Grid& g, int kmax, int r, int R) {
  VH_CHECK(kmax >= 0 && 2 * kmax + 1 <= g.n, "slab: kmax out of range");
  VH_CHECK(R >= 1 && r >= 0 && r < R, "slab: rank out of range");
  Slab s = whole_grid(g, kmax);
  s.nranks = R;
  return s.of_rank(r);
}

Slab Slab::of_rank(int r) const {
  Slab s = *this;
  s.rank = r;
  const int R = nranks, n = grid.n, nk = 2 * kmax + 1;
  if (R == 1) return s;
  s.jy0 = block_start(nk, R, r);
  s.njy = block_count(nk, R, r);
  s.nr0 = block_start(n - nk, R, R - 1 - r);  // from the last rank down
  s.nnr = block_count(n - nk, R, R - 1 - r);
  s.z0 = block_start(n, R, r);
  s.nz = block_count(n, R, r);
  return s;
}

SlabTranspose slab_transpose(const Slab& s) {
  SlabTranspose t;
  const int n = s.grid.n, nxh = n / 2 + 1, sl = s.slots();
  std::size_t values = 0;
  for (int r = 0; r < s.ranks(); ++r) {
    const Slab o = s.of_rank(r);
    t.a_counts.push_back(std::size_t(o.nz) * sl * nxh);
    t.a_displs.push_back(std::size_t(o.z0) * sl * nxh);
    t.b_counts.push_back(std::size_t(s.nz) * o.slots() * nxh);
    t.b_displs.push_back(values);
    values += t.b_counts.back();
    for (int z = 0; z < s.nz; ++z)
      for (int j = 0; j < o.slots(); ++j) t.rows.push_back(z * n + o.ky_index(j));
  }
  return t;
}

SpectralSlab SpectralSlab::whole(SpectralVector u) {
  SpectralSlab s;
  s.slab = Slab::whole_grid(u.grid);
  s.c = std::move(u.c);
  return s;
}

SpectralVector SpectralSlab::to_vector() && {
  VH_CHECK(slab.whole(), "to_vector: the field is spread over several ranks");
  SpectralVector u;
  u.grid = slab.grid;
  u.c = std::move(c);
  return u;
}

void gather_plane(const SpectralSlab& u, int c, int iz, Complex* plane) {
  const Slab& s = u.slab;
  const int nxh = s.grid.n / 2 + 1;
  const std::size_t row = std::size_t(s.slots()) * nxh;
  const Complex* mine = u.c[c].data() + s.mode_index(0, 0, iz);
  if (s.whole()) {
    std::copy(mine, mine + row, plane);
    return;
  }
  std::vector<std::size_t> counts;
  for (int r = 0; r < s.ranks(); ++r) counts.push_back(std::size_t(s.of_rank(r).slots()) * nxh);
  std::vector<Complex> all(s.comm.root() ? std::size_t(s.grid.n) * nxh : 0);
  s.comm.gatherv(mine, row, all.data(), counts, sizeof(Complex));
  if (!s.comm.root()) return;
  const Complex* p = all.data();
  for (int r = 0; r < s.ranks(); ++r) {
    const Slab o = s.of_rank(r);
    for (int j = 0; j < o.slots(); ++j, p += nxh) std::copy(p, p + nxh, plane + std::size_t(o.ky_index(j)) * nxh);
  }
}

void scatter_plane(const Complex* plane, int c, int iz, SpectralSlab& u) {
  const Slab& s = u.slab;
  const int nxh = s.grid.n / 2 + 1;
  const std::size_t row = std::size_t(s.slots()) * nxh;
  Complex* mine = u.c[c].data() + s.mode_index(0, 0, iz);
  if (s.whole()) {
    std::copy(plane, plane + row, mine);
    return;
  }
  std::vector<std::size_t> counts;
  std::vector<Complex> all;
  for (int r = 0; r < s.ranks(); ++r) counts.push_back(std::size_t(s.of_rank(r).slots()) * nxh);
  if (s.comm.root()) {
    all.resize(std::size_t(s.grid.n) * nxh);
    Complex* p = all.data();
    for (int r = 0; r < s.ranks(); ++r) {
      const Slab o = s.of_rank(r);
      for (int j = 0; j < o.slots(); ++j, p += nxh)
        std::copy(plane + std::size_t(o.ky_index(j)) * nxh, plane + std::size_t(o.ky_index(j) + 1) * nxh, p);
    }
  }
  s.comm.scatterv(all.data(), counts, mine, row, sizeof(Complex));
}

SpectralSlab restrict_to(const SpectralVector& u, const Slab& s) {
  SpectralSlab r(s);
  for (int c = 0; c < 3; ++c)
    for_each_mode(s, [&](std::size_t m, int ix, int iy, int iz) { r.c[c][m] = u.c[c][u.grid.mode_index(ix, iy, iz)]; });
  return r;
}

SpectralVector allgather(const SpectralSlab& u) {
  const Slab& s = u.slab;
  SpectralVector w(s.grid);
  if (s.whole()) {
    for (int c = 0; c < 3; ++c) w.c[c] = u.c[c];
    return w;
  }
  const int n = s.grid.n, nxh = n / 2 + 1;
  std::vector<std::size_t> counts;
  for (int r = 0; r < s.ranks(); ++r) counts.push_back(s.of_rank(r).local_modes());
  std::vector<Complex> all(std::size_t(n) * n * nxh);
  for (int c = 0; c < 3; ++c) {
    s.comm.allgatherv(u.c[c].data(), u.c[c].size(), all.data(), counts, sizeof(Complex));
    const Complex* p = all.data();
    for (int r = 0; r < s.ranks(); ++r) {  // rank r's [kz][slot][kx] rows to their ky
      const Slab o = s.of_rank(r);
      for (int iz = 0; iz < n; ++iz)
        for (int j = 0; j < o.slots(); ++j, p += nxh)
          std::copy(p, p + nxh, w.c[c].begin() + std::ptrdiff_t(w.grid.mode_index(0, o.ky_index(j), iz)));
    }
  }
  return w;
}

double relative_l2(const SpectralSlab& a, const SpectralSlab& b) {
  const int n = b.slab.grid.n, nxh = n / 2 + 1;
  double num = 0, den = 0;
  for (int c = 0; c < 3; ++c)
    for (std::size_t m = 0; m < b.c[c].size(); ++m) {
      const double w = modes::mode_weight(int(m % nxh), n);
      num += w * std::norm(a.c[c][m] - b.c[c][m]);
      den += w * std::norm(b.c[c][m]);
    }
  return std::sqrt(b.slab.comm.sum(num) / b.slab.comm.sum(den));
}

}  // namespace vh
