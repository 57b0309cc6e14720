#include "vortex/particles.h"

#include <cmath>

#include "base/ordered_sum.h"
#include "vortex/update_kernel.h"

namespace vh::vortex {

std::vector<Vec3> lattice_points(const Grid& g) { return lattice_points(g, 0, g.n); }

std::vector<Vec3> lattice_points(const Grid& g, int z0, int nz) {
  std::vector<Vec3> x(std::size_t(nz) * g.n * g.n);
  const double h = g.h();
  const std::size_t plane0 = g.index(0, 0, z0);
  for (int k = z0; k < z0 + nz; ++k)
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.n; ++i) x[g.index(i, j, k) - plane0] = {i * h, j * h, k * h};
  return x;
}

Particles lattice_particles(const Grid& g, double sigma) { return lattice_particles(g, sigma, 0, g.n); }

Particles lattice_particles(const Grid& g, double sigma, int z0, int nz) {
  Particles p;
  p.x = lattice_points(g, z0, nz);
  p.alpha.assign(p.x.size(), Vec3{0, 0, 0});
  p.gamma.assign(p.x.size(), Vec3{0, 0, 0});
  p.sigma.assign(p.x.size(), sigma);
  return p;
}

Vec3 total_strength(const std::vector<Vec3>& s) {
  const auto sum = ordered_sum<3>(std::ptrdiff_t(s.size()), [&](std::ptrdiff_t i, double* acc) {
    for (int d = 0; d < 3; ++d) acc[d] += s[i][d];
  });
  return {sum[0], sum[1], sum[2]};
}

void wrap(Particles& p) {
  const double L = 2.0 * kPi;
  const std::ptrdiff_t n = std::ptrdiff_t(p.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) p.x[i][d] = wrap_coordinate(p.x[i][d], L);
}

}  // namespace vh::vortex
