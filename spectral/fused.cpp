// CPU reference of the fused passes (fused.h): the layouts and per-element math of
// fused_kernel.h with a plain O(M²) DFT per line (exact twiddle table), for tests at small N.
#include <cmath>

#include "core/error.h"
#include "spectral/fused.h"

namespace vh::spectral::fused {
namespace {

using kernel::Cx;
using kernel::FusedLayout;
using C = Cx<double>;

/// Unnormalised DFT of one line in place: sign −1 forward, +1 inverse.
class LineDft {
 public:
  explicit LineDft(int m) : m_(m), w_(m), tmp_(m) {
    for (int j = 0; j < m; ++j) {
      const double a = 2 * M_PI * j / m;
      w_[j] = C{std::cos(a), std::sin(a)};
    }
  }
  void run(C* v, int sign) {
    for (int k = 0; k < m_; ++k) {
      double re = 0, im = 0;
      for (int j = 0; j < m_; ++j) {
        const C w = w_[(long long)j * k % m_];
        const double wi = sign * w.im;
        re += v[j].re * w.re - v[j].im * wi;
        im += v[j].re * wi + v[j].im * w.re;
      }
      tmp_[k] = C{re, im};
    }
    for (int k = 0; k < m_; ++k) v[k] = tmp_[k];
  }

 private:
  int m_;
  std::vector<C> w_, tmp_;
};

kernel::StageArrays<double> stage_arrays(const FusedLayout& l, HostArrays& h) {
  kernel::StageArrays<double> arr{};
  const std::size_t nm = std::size_t(l.g.n) * l.g.n * l.g.nxh();
  for (int c = 0; c < 3; ++c) {
    arr.u0[c] = h.u0.data() + c * nm;
    arr.acc[c] = h.acc.empty() ? nullptr : h.acc.data() + c * nm;
    arr.a[c] = h.a.empty() ? nullptr : h.a.data() + c * nm;
  }
  return arr;
}

/// ZI of one (kx, jy) column from the stage input a[c][jz] (jz = kz + K).
void z_inverse_column(const FusedLayout& l, LineDft& dft, int kx, int jy, const std::vector<C> a[3],
                      HostArrays& h) {
  const int m = l.g.m, K = l.k;
  std::vector<C> line(m);
  for (int f = 0; f < 6; ++f) {
    for (int j = 0; j < m; ++j) {
      const int kz = kernel::signed_k(j, m);
      if (kx >= l.nx || kz < -K || kz > K) {
        line[j] = C{0, 0};
        continue;
      }
      const C v[3] = {a[0][kz + K], a[1][kz + K], a[2][kz + K]};
      line[j] = kernel::z_field(f, double(kx), double(jy - K), double(kz), v);
    }
    dft.run(line.data(), +1);
    for (int z = 0; z < m; ++z) h.zb[l.zb(f, z, jy, kx)] = line[z];
  }
}

}  // namespace

void run_pass_cpu(Pass p, const kernel::Geometry& g, const StageArgs& s, HostArrays& h) {
  const FusedLayout l = FusedLayout::make(g);
  const int m = g.m, K = l.k;
  h.zb.resize(l.zb_size());
  h.yb.resize(l.yb_size());
  LineDft dft(m);
  std::vector<C> line(m);
  const kernel::StageArrays<double> arr = stage_arrays(l, h);
  switch (p) {
    case Pass::z_inverse: {
      std::vector<C> a[3];
      for (int jy = 0; jy < l.nk; ++jy)
        for (int kx = 0; kx < l.nxp; ++kx) {
          for (int c = 0; c < 3; ++c) {
            a[c].assign(l.nk, C{0, 0});
            if (kx < l.nx)
              for (int jz = 0; jz < l.nk; ++jz) a[c][jz] = arr.u0[c][l.state(kx, jy - K, jz - K)];
          }
          z_inverse_column(l, dft, kx, jy, a, h);
        }
      break;
    }
    case Pass::y_inverse:
      for (int f = 0; f < 6; ++f)
        for (int z = 0; z < m; ++z)
          for (int kx = 0; kx < l.nxp; ++kx) {
            for (int j = 0; j < m; ++j) {
              const int ky = kernel::signed_k(j, m);
              line[j] = (ky < -K || ky > K) ? C{0, 0} : h.zb[l.zb(f, z, ky + K, kx)];
            }
            dft.run(line.data(), +1);
            for (int y = 0; y < m; ++y) h.yb[l.yb(f, z, y, kx)] = line[y];
          }
      break;
    case Pass::x_cross: {
      std::vector<C> in[6], v[3], q1(m), q2(m);
      for (int z = 0; z < m; ++z)
        for (int y = 0; y < m; ++y) {
          for (int f = 0; f < 6; ++f) in[f].assign(&h.yb[l.yb(f, z, y, 0)], &h.yb[l.yb(f, z, y, 0)] + l.nxp);
          for (int c = 0; c < 3; ++c) {
            v[c].resize(m);
            for (int j = 0; j < m; ++j) v[c][j] = kernel::x_pack(j, m, l.nx, in[c].data(), in[3 + c].data());
            dft.run(v[c].data(), +1);
          }
          for (int x = 0; x < m; ++x) {
            double u0 = v[0][x].re, u1 = v[1][x].re, u2 = v[2][x].re;
            kernel::cross_in_place(u0, u1, u2, v[0][x].im, v[1][x].im, v[2][x].im);
            q1[x] = C{u0, u1};
            q2[x] = C{u2, 0};
          }
          dft.run(q1.data(), -1);
          dft.run(q2.data(), -1);
          for (int kx = 0; kx < l.nxp; ++kx) {
            C px{0, 0}, py{0, 0}, pz{0, 0};
            if (kx < l.nx) {
              kernel::x_unpack(q1[kx], q1[(m - kx) % m], px, py);
              pz = q2[kx];
            }
            h.yb[l.yb(0, z, y, kx)] = px;
            h.yb[l.yb(1, z, y, kx)] = py;
            h.yb[l.yb(2, z, y, kx)] = pz;
          }
        }
      break;
    }
    case Pass::y_forward:
      for (int c = 0; c < 3; ++c)
        for (int z = 0; z < m; ++z)
          for (int kx = 0; kx < l.nxp; ++kx) {
            for (int y = 0; y < m; ++y) line[y] = h.yb[l.yb(c, z, y, kx)];
            dft.run(line.data(), -1);
            for (int jy = 0; jy < l.nk; ++jy) h.zb[l.zb(c, z, jy, kx)] = line[kernel::axis_index(jy - K, m)];
          }
      break;
    case Pass::z_forward_post: {
      std::vector<C> nh[3];
      for (int jy = 0; jy < l.nk; ++jy)
        for (int kx = 0; kx < l.nxp; ++kx) {
          for (int c = 0; c < 3; ++c) {
            for (int z = 0; z < m; ++z) line[z] = h.zb[l.zb(c, z, jy, kx)];
            dft.run(line.data(), -1);
            nh[c].resize(l.nk);
            for (int jz = 0; jz < l.nk; ++jz) nh[c][jz] = line[kernel::axis_index(jz - K, m)];
          }
          for (int jz = 0; jz < l.nk; ++jz) {
            C v[3] = {nh[0][jz], nh[1][jz], nh[2][jz]};
            if (kx < l.nx) {
              const long long nm = (long long)l.state(kx, jy - K, jz - K);
              if (!kernel::post_values(g, s.stage, s.explicit_visc, s.nu, s.dt, kx, jy - K, jz - K, nm, v, arr))
                continue;
            } else {
              v[0] = v[1] = v[2] = C{0, 0};
            }
            for (int c = 0; c < 3; ++c) nh[c][jz] = v[c];
          }
          if (s.stage != kernel::kRhsOnly) z_inverse_column(l, dft, kx, jy, nh, h);
        }
      break;
    }
  }
}

}  // namespace vh::spectral::fused
