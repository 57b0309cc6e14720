#include "fmm/p2p.h"

#include "fmm/p2p_kernel.h"

namespace vh::fmm {

void p2p(const Vec3* xt, int nt, int t_offset, const Vec3* xs, const Vec3* as, const double* ss, int ns,
         int s_offset, const Vec3& shift, bool skip_same, Vec3* u, Mat3* grad) {
  for (int i = 0; i < nt; ++i) {
    double ui[3] = {0, 0, 0};
    double gi[3][3] = {};
    const Vec3 x = {xt[i][0] - shift[0], xt[i][1] - shift[1], xt[i][2] - shift[2]};
    for (int j = 0; j < ns; ++j) {
      if (skip_same && t_offset + i == s_offset + j) continue;
      const double r[3] = {x[0] - xs[j][0], x[1] - xs[j][1], x[2] - xs[j][2]};
      p2p_pair(r, as[j].data(), ss[j], ui, gi);
    }
    for (int m = 0; m < 3; ++m) {
      u[i][m] += ui[m];
      for (int k = 0; k < 3; ++k) grad[i][m][k] += gi[m][k];
    }
  }
}

void direct_sum(const std::vector<Vec3>& x, const std::vector<Vec3>& alpha, const std::vector<double>& sigma,
                const std::vector<Vec3>& targets, bool self, std::vector<Vec3>& u, std::vector<Mat3>& grad) {
  const int nt = static_cast<int>(targets.size());
  u.assign(nt, Vec3{});
  grad.assign(nt, Mat3{});
  const Vec3 zero{};
#pragma omp parallel for schedule(dynamic, 16)
  for (int i = 0; i < nt; ++i)
    p2p(&targets[i], 1, i, x.data(), alpha.data(), sigma.data(), static_cast<int>(x.size()), 0, zero, self, &u[i],
        &grad[i]);
}

}  // namespace vh::fmm
