#include "vortex/particles.h"

#include <cmath>

#include "vortex/update_kernel.h"

namespace vh::vortex {

std::vector<Vec3> lattice_points(const Grid& g) {
  std::vector<Vec3> x(g.points());
  const double h = g.h();
  for (int k = 0; k < g.n; ++k)
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.n; ++i) x[g.index(i, j, k)] = {i * h, j * h, k * h};
  return x;
}

Particles lattice_particles(const Grid& g, double sigma) {
  Particles p;
  p.x = lattice_points(g);
  p.alpha.assign(g.points(), Vec3{0, 0, 0});
  p.gamma.assign(g.points(), Vec3{0, 0, 0});
  p.sigma.assign(g.points(), sigma);
  return p;
}

Vec3 total_strength(const std::vector<Vec3>& s) {
  double s0 = 0, s1 = 0, s2 = 0;
  const std::ptrdiff_t n = std::ptrdiff_t(s.size());
#pragma omp parallel for reduction(+ : s0, s1, s2) schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    s0 += s[i][0];
    s1 += s[i][1];
    s2 += s[i][2];
  }
  return {s0, s1, s2};
}

void wrap(Particles& p) {
  const double L = 2.0 * kPi;
  const std::ptrdiff_t n = std::ptrdiff_t(p.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) p.x[i][d] = wrap_coordinate(p.x[i][d], L);
}

}  // namespace vh::vortex
