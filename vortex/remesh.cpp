#include "vortex/remesh.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/ordered_sum.h"

#include "vortex/blobs.h"
#include "vortex/rbf.h"
#include "vortex/remesh_kernel.h"

namespace vh::vortex {
namespace {

using kernel::Cx;

Cx* cx(Complex* c) { return reinterpret_cast<Cx*>(c); }
const Cx* cx(const Complex* c) { return reinterpret_cast<const Cx*>(c); }

}  // namespace

void resample(const SpectralVector& from, const Grid& to_grid, SpectralVector& to) {
  to = SpectralVector(to_grid);
  for_each_mode(Slab::whole_grid(to_grid), [&](std::size_t dst, int ix, int iy, int iz) {
    const long long src = kernel::resample_source(ix, iy, iz, to_grid.n, from.grid.n);
    if (src < 0) return;
    for (int d = 0; d < 3; ++d) to.c[d][dst] = from.c[d][std::size_t(src)];
  });
}

void resample(const SpectralSlab& from, SpectralSlab& to) {
  const Slab &fs = from.slab, &ts = to.slab;
  VH_CHECK(fs.ranks() == ts.ranks(), "resample: the two slabs are spread over different ranks");
  for (auto& a : to.c) a.assign(ts.local_modes(), Complex(0.0, 0.0));
  const int nt = ts.grid.n, nf = fs.grid.n;
  if (ts.whole()) {
    for_each_mode(ts, [&](std::size_t dst, int ix, int iy, int iz) {
      const long long src = kernel::resample_source(ix, iy, iz, nt, nf);
      if (src < 0) return;
      for (int d = 0; d < 3; ++d) to.c[d][dst] = from.c[d][std::size_t(src)];
    });
    return;
  }
  const ResamplePlan plan = plan_resample(fs, ts);
  // Answer with the three components of each mode asked for.
  std::vector<Complex> answer(3 * plan.send.size()), got(3 * plan.where.size());
  for (std::size_t i = 0; i < plan.send.size(); ++i)
    for (int d = 0; d < 3; ++d) answer[3 * i + std::size_t(d)] = from.c[d][plan.send[i]];
  ts.comm.alltoallv(answer.data(), plan.send_counts, displacements(plan.send_counts), got.data(), plan.recv_counts,
                    displacements(plan.recv_counts), 3 * sizeof(Complex));
  for (std::size_t i = 0; i < plan.where.size(); ++i)
    for (int d = 0; d < 3; ++d) to.c[d][plan.where[i]] = got[3 * i + std::size_t(d)];
}

ResamplePlan plan_resample(const Slab& fs, const Slab& ts) {
  const int nt = ts.grid.n, nf = fs.grid.n, nxf = nf / 2 + 1;
  // Where each ky index of the source layout lives: its rank and slot there.
  const int R = ts.ranks();
  const std::size_t NR = std::size_t(R), NF = std::size_t(nf);
  std::vector<int> owner(NF), slot(NF);
  std::vector<Slab> of(NR);
  for (int r = 0; r < R; ++r) {
    of[std::size_t(r)] = fs.of_rank(r);
    for (int j = 0; j < of[std::size_t(r)].slots(); ++j) {
      const int ky = of[std::size_t(r)].ky_index(j);
      owner[std::size_t(ky)] = r;
      slot[std::size_t(ky)] = j;
    }
  }
  // For each source rank, its storage indices of the modes this rank needs, and where they go here.
  std::vector<std::vector<std::size_t>> want(NR), where(NR);
  const int nxt = nt / 2 + 1;
  for (int iz = 0; iz < nt; ++iz)
    for (int j = 0; j < ts.slots(); ++j)
      for (int ix = 0; ix < nxt; ++ix) {
        const long long src = kernel::resample_source(ix, ts.ky_index(j), iz, nt, nf);
        if (src < 0) continue;
        const int sx = int(src % nxf), sy = int((src / nxf) % nf), sz = int(src / (std::size_t(nxf) * nf));
        const int r = owner[std::size_t(sy)];
        want[std::size_t(r)].push_back(of[std::size_t(r)].mode_index(sx, slot[std::size_t(sy)], sz));
        where[std::size_t(r)].push_back(ts.mode_index(ix, j, iz));
      }
  // The requests to their owners (one all-to-all): what this rank sends each rank.
  ResamplePlan p;
  std::vector<std::size_t> req;
  p.recv_counts.resize(NR);
  for (std::size_t r = 0; r < NR; ++r) {
    p.recv_counts[r] = want[r].size();
    req.insert(req.end(), want[r].begin(), want[r].end());
    p.where.insert(p.where.end(), where[r].begin(), where[r].end());
  }
  p.send_counts = ts.comm.alltoall_counts(p.recv_counts);
  p.send.resize(displacements(p.send_counts).back() + p.send_counts.back());
  ts.comm.alltoallv(req.data(), p.recv_counts, displacements(p.recv_counts), p.send.data(), p.send_counts,
                    displacements(p.send_counts), sizeof(std::size_t));
  return p;
}

Lattice::Lattice(const Slab& s, double sigma0, double symbol_floor, double cutoff, bool gpu)
    : s_(s), sigma0_(sigma0), floor_(symbol_floor), cutoff_(cutoff), vol_(s.grid.h() * s.grid.h() * s.grid.h()),
      gpu_(gpu), s1_(symbol_factors(s.grid, sigma0)), fft_(std::make_unique<SlabFft>(s)) {
  VH_CHECK(s.whole() || !gpu, "Lattice: blob sums on the GPU need the whole lattice on one rank");
}

double Lattice::symbol(int ix, int iy, int iz) const { return kernel::symbol(s1_.data(), ix, iy, iz, floor_); }

void Lattice::field(const std::vector<Vec3>& x, const std::vector<Vec3>& qv, const std::vector<double>& sigma,
                    SpectralSlab& out) {
  if (s_.whole())
    blob_sums(x, qv, sigma, s_.grid, cutoff_, work_, gpu_);
  else
    blob_sums(x, qv, sigma, s_.grid, cutoff_, s_.z0, s_.nz, work_);
  out = SpectralSlab(s_);
  for (int d = 0; d < 3; ++d) fft_->forward(work_.c[d].data(), out.c[d].data());
  // Σ_p q_p V ζ(x_i − x_p) has the coefficients (s(k)/V) q̂ V = s(k) q̂ on the lattice.
  for (auto& c : out.c)
    for_each_mode(s_, [&](std::size_t m, int ix, int iy, int iz) { kernel::deconvolve(cx(c.data())[m], symbol(ix, iy, iz)); });
}

void Lattice::modes(const std::vector<Vec3>& values, double scale, SpectralSlab& out) {
  VH_CHECK(values.size() == s_.local_points(), "Lattice::modes: one value per lattice point of the slab expected");
  if (work_.c[0].size() != s_.local_points()) work_ = VectorField(s_.grid, s_.nz);
  const std::ptrdiff_t np = std::ptrdiff_t(values.size());
  for (int d = 0; d < 3; ++d)
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t i = 0; i < np; ++i) work_.c[d][i] = values[i][d] * scale;
  out = SpectralSlab(s_);
  for (int d = 0; d < 3; ++d) fft_->forward(work_.c[d].data(), out.c[d].data());
}

namespace {
/// c ← factor(kx, ky, kz) c, mode by mode (signed wavenumbers), every component.
template <class Factor>
void scale_modes(const Slab& s, SpectralSlab& c, Factor factor) {
  const Grid& g = s.grid;
  for_each_mode(s, [&](std::size_t m, int ix, int iy, int iz) {
    const double f = factor(ix, g.wavenumber(iy), g.wavenumber(iz));
    for (auto& a : c.c) kernel::scale(cx(a.data())[m], f);
  });
}
}  // namespace

void Lattice::diffuse(SpectralSlab& c, double nu_tau) const {
  if (nu_tau == 0) return;
  scale_modes(s_, c, [&](int kx, int ky, int kz) { return kernel::diffusion_factor(nu_tau, kx, ky, kz); });
}

void Lattice::diffusion_increment(SpectralSlab& c, double nu_tau) const {
  scale_modes(s_, c, [&](int kx, int ky, int kz) { return kernel::diffusion_increment(nu_tau, kx, ky, kz); });
}

double Lattice::project(SpectralSlab& c) const {
  const Grid& g = s_.grid;
  const int n = g.n, nxh = n / 2 + 1, sl = s_.slots();
  // One term a row (iz, slot) of nxh modes.
  const auto rows = ordered_sum<2>(std::ptrdiff_t(n) * sl, [&](std::ptrdiff_t r, double* acc) {
    const int iz = int(r / sl), j = int(r % sl), iy = s_.ky_index(j);
    for (int ix = 0; ix < nxh; ++ix) {
      const std::size_t m = s_.mode_index(ix, j, iz);
      Cx v[3] = {cx(c.c[0].data())[m], cx(c.c[1].data())[m], cx(c.c[2].data())[m]};
      kernel::project(ix, g.wavenumber(iy), g.wavenumber(iz), mode_weight(ix, n), v, acc[0], acc[1]);
      for (int d = 0; d < 3; ++d) cx(c.c[d].data())[m] = v[d];
    }
  }, kSumChunk / nxh);
  std::vector<double> sums = {rows[0], rows[1]};  // removed, total
  if (!s_.whole()) s_.comm.sum(sums);
  return sums[1] > 0 ? std::sqrt(sums[0] / sums[1]) : 0.0;
}

void Lattice::filter(SpectralSlab& c, Filter f, double fraction) const {
  if (f == Filter::none) return;
  const Grid& g = s_.grid;
  const double kc = fraction * 0.5 * g.n;  // the cut-off
  for_each_mode(s_, [&](std::size_t m, int ix, int iy, int iz) {
    if (kernel::kept(f, kc, ix, g.wavenumber(iy), g.wavenumber(iz))) return;
    for (auto& a : c.c) a[m] = 0;
  });
}

void Lattice::points(const SpectralSlab& c, VectorField& out) {
  if (out.grid.n != s_.grid.n || out.c[0].size() != s_.local_points()) out = VectorField(s_.grid, s_.nz);
  for (int d = 0; d < 3; ++d) fft_->inverse(c.c[d].data(), out.c[d].data());
}

void Lattice::values(const SpectralSlab& c, bool blob, double scale, std::vector<Vec3>& out) {
  if (blob) {
    SpectralSlab t = c;
    for (auto& a : t.c)
      for_each_mode(s_, [&](std::size_t m, int ix, int iy, int iz) { kernel::scale(cx(a.data())[m], vol_ / symbol(ix, iy, iz)); });
    points(t, work_);
  } else {
    points(c, work_);
  }
  out.resize(s_.local_points());
  const std::ptrdiff_t np = std::ptrdiff_t(out.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < np; ++i)
    for (int d = 0; d < 3; ++d) out[i][d] = work_.c[d][i] * scale;
}

void Lattice::biot_savart(const SpectralSlab& w, SpectralSlab& u) const {
  const Grid& g = s_.grid;
  u = SpectralSlab(s_);
  for_each_mode(s_, [&](std::size_t m, int ix, int iy, int iz) {
    const Cx v[3] = {cx(w.c[0].data())[m], cx(w.c[1].data())[m], cx(w.c[2].data())[m]};
    Cx r[3];
    modes::biot_savart(double(ix), double(g.wavenumber(iy)), double(g.wavenumber(iz)), v, r);
    for (int d = 0; d < 3; ++d) cx(u.c[d].data())[m] = r[d];
  });
}

void Lattice::blob_velocity(const SpectralSlab& c, double sigma, int what, SpectralSlab& out) const {
  const Grid& g = s_.grid;
  const int reach = kernel::alias_reach(sigma, g.h());
  out = SpectralSlab(s_);
  for_each_mode(s_, [&](std::size_t m, int ix, int iy, int iz) {
    const Cx v[3] = {cx(c.c[0].data())[m], cx(c.c[1].data())[m], cx(c.c[2].data())[m]};
    Cx r[3];
    kernel::blob_velocity(ix, g.wavenumber(iy), g.wavenumber(iz), g.n, sigma, reach, what, v, r);
    for (int d = 0; d < 3; ++d) cx(out.c[d].data())[m] = r[d];
  });
}

}  // namespace vh::vortex
