// Helpers of the fused-pass tests (spectral/fused.h): state ↔ HostArrays, the reference
// chain of CPU passes for one evaluation or one RK4 step, random pass inputs, errors.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>

#include "core/grid.h"
#include "spectral/fused.h"
#include "spectral/solver.h"

namespace vh::spectral::test {

using FCx = kernel::Cx<double>;

/// u0 of the host arrays from coefficients (non-retained modes zeroed, as set_velocity).
inline void set_state(const kernel::Geometry& g, const SpectralVector& u, fused::HostArrays& h) {
  const std::size_t nm = std::size_t(g.n) * g.n * g.nxh();
  h.u0.assign(3 * nm, FCx{0, 0});
  h.acc.assign(3 * nm, FCx{0, 0});
  h.a.assign(3 * nm, FCx{0, 0});
  for (int iz = 0; iz < g.n; ++iz)
    for (int iy = 0; iy < g.n; ++iy)
      for (int ix = 0; ix < g.nxh(); ++ix) {
        const std::size_t m = (std::size_t(iz) * g.n + iy) * g.nxh() + ix;
        if (!kernel::retained(g, ix, kernel::signed_k(iy, g.n), kernel::signed_k(iz, g.n))) continue;
        for (int c = 0; c < 3; ++c) h.u0[c * nm + m] = FCx{u.c[c][m].real(), u.c[c][m].imag()};
      }
}

/// Coefficients from 3 N-layout arrays of the host arrays (u0, acc or a).
inline SpectralVector get_state(const kernel::Geometry& g, const std::vector<FCx>& v) {
  SpectralVector u(Grid{g.n});
  const std::size_t nm = std::size_t(g.n) * g.n * g.nxh();
  for (int c = 0; c < 3; ++c)
    for (std::size_t m = 0; m < nm; ++m) u.c[c][m] = Complex(v[c * nm + m].re, v[c * nm + m].im);
  return u;
}

/// The five CPU passes of one evaluation: n̂ into h.a (stage kRhsOnly), or RK4 stage s.
inline void cpu_evaluation(const kernel::Geometry& g, const fused::StageArgs& s, fused::HostArrays& h,
                           bool load = true) {
  using fused::Pass;
  if (load) fused::run_pass_cpu(Pass::z_inverse, g, s, h);
  for (Pass p : {Pass::y_inverse, Pass::x_cross, Pass::y_forward, Pass::z_forward_post})
    fused::run_pass_cpu(p, g, s, h);
}

/// Fills every array of h with reproducible random values (zb, yb sized for g).
inline void random_arrays(const kernel::Geometry& g, unsigned seed, fused::HostArrays& h) {
  const kernel::FusedLayout l = kernel::FusedLayout::make(g);
  const std::size_t nm = 3 * std::size_t(g.n) * g.n * g.nxh();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  for (auto* v : {&h.u0, &h.acc, &h.a}) v->resize(nm);
  h.zb.resize(l.zb_size());
  h.yb.resize(l.yb_size());
  for (auto* v : {&h.u0, &h.acc, &h.a, &h.zb, &h.yb})
    for (FCx& x : *v) x = FCx{d(rng), d(rng)};
}

/// max |a − b| / max |b| over one array.
inline double max_rel(const std::vector<FCx>& a, const std::vector<FCx>& b) {
  double e = 0, s = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    e = std::max(e, std::hypot(a[i].re - b[i].re, a[i].im - b[i].im));
    s = std::max(s, std::hypot(b[i].re, b[i].im));
  }
  return s > 0 ? e / s : e;
}

}  // namespace vh::spectral::test
