#include "spectral_test_util.h"

#include <cstdlib>

namespace vh::spectral::test {
namespace {
bool in_set(int n, Dealias d, int kx, int ky, int kz) {
  const int h = n / 2 - 1;
  kx = std::abs(kx), ky = std::abs(ky), kz = std::abs(kz);
  if (kx > h || ky > h || kz > h) return false;
  if (d == Dealias::two_thirds) return 3 * kx < n && 3 * ky < n && 3 * kz < n;
  return true;
}
int sk(int i, int s) { return i < s / 2 ? i : i - s; }
int idx(int k, int s) { return k >= 0 ? k : k + s; }
}  // namespace

SpectralVector reference_nonlinear(const SpectralVector& u, Dealias d) {
  const Grid g = u.grid;
  const int n = g.n, m = d == Dealias::none ? n : 2 * n;
  const Grid G{m};
  SpectralVector U(G), W(G);
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix <= n / 2; ++ix) {
        const int ky = sk(iy, n), kz = sk(iz, n);
        if (!in_set(n, d, ix, ky, kz)) continue;
        const std::size_t a = g.mode_index(ix, iy, iz), b = G.mode_index(ix, idx(ky, m), idx(kz, m));
        const Complex I(0, 1);
        const Complex ux = u.c[0][a], uy = u.c[1][a], uz = u.c[2][a];
        U.c[0][b] = ux, U.c[1][b] = uy, U.c[2][b] = uz;
        W.c[0][b] = I * (double(ky) * uz - double(kz) * uy);
        W.c[1][b] = I * (double(kz) * ux - double(ix) * uz);
        W.c[2][b] = I * (double(ix) * uy - double(ky) * ux);
      }
  Fft3d fft(m);
  VectorField uu(G), ww(G);
  fft.inverse(U, uu);
  fft.inverse(W, ww);
  VectorField x(G);
  for (std::size_t p = 0; p < G.points(); ++p) {
    x.c[0][p] = uu.c[1][p] * ww.c[2][p] - uu.c[2][p] * ww.c[1][p];
    x.c[1][p] = uu.c[2][p] * ww.c[0][p] - uu.c[0][p] * ww.c[2][p];
    x.c[2][p] = uu.c[0][p] * ww.c[1][p] - uu.c[1][p] * ww.c[0][p];
  }
  SpectralVector X(G);
  fft.forward(x, X);
  SpectralVector out(g);
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix <= n / 2; ++ix) {
        const int ky = sk(iy, n), kz = sk(iz, n);
        if (!in_set(n, d, ix, ky, kz)) continue;
        const double k2 = double(ix) * ix + double(ky) * ky + double(kz) * kz;
        if (k2 == 0) continue;
        const std::size_t a = g.mode_index(ix, iy, iz), b = G.mode_index(ix, idx(ky, m), idx(kz, m));
        const Complex v[3] = {X.c[0][b], X.c[1][b], X.c[2][b]};
        const Complex kv = double(ix) * v[0] + double(ky) * v[1] + double(kz) * v[2];
        const double k[3] = {double(ix), double(ky), double(kz)};
        for (int c = 0; c < 3; ++c) out.c[c][a] = v[c] - k[c] * kv / k2;
      }
  return out;
}

}  // namespace vh::spectral::test
