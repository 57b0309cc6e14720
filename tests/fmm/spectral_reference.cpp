#include "spectral_reference.h"

#include <fftw3.h>

#include <cmath>
#include <complex>
#include <random>

namespace vh::fmm::testing {

namespace {

using cd = std::complex<double>;

// In-place 3-D complex FFT of an n^3 array.
void fft3(int n, std::vector<cd>& a, int sign) {
  fftw_plan plan = fftw_plan_dft_3d(n, n, n, reinterpret_cast<fftw_complex*>(a.data()),
                                    reinterpret_cast<fftw_complex*>(a.data()), sign, FFTW_ESTIMATE);
  fftw_execute(plan);
  fftw_destroy_plan(plan);
}

int signed_mode(int i, int n) { return i <= n / 2 ? i : i - n; }

}  // namespace

void spectral_velocity(int n, double sigma, const std::vector<std::array<double, 3>>& alpha,
                       std::vector<std::array<double, 3>>& u, std::vector<std::array<std::array<double, 3>, 3>>& grad) {
  const std::size_t n3 = std::size_t(n) * n * n;
  std::vector<cd> ah[3];
  for (int c = 0; c < 3; ++c) {
    ah[c].resize(n3);
    for (std::size_t i = 0; i < n3; ++i) ah[c][i] = alpha[i][c];
    fft3(n, ah[c], FFTW_FORWARD);
  }
  const double vol = std::pow(2 * M_PI, 3);
  std::vector<cd> uh[3], gh[3][3];
  for (int c = 0; c < 3; ++c) {
    uh[c].assign(n3, 0.0);
    for (int l = 0; l < 3; ++l) gh[c][l].assign(n3, 0.0);
  }
  const cd I(0, 1);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < n; ++k) {
        const std::size_t id = (std::size_t(i) * n + j) * n + k;
        const int m[3] = {signed_mode(i, n), signed_mode(j, n), signed_mode(k, n)};
        for (int a0 = -1; a0 <= 1; ++a0)
          for (int a1 = -1; a1 <= 1; ++a1)
            for (int a2 = -1; a2 <= 1; ++a2) {
              const double kv[3] = {double(m[0] + a0 * n), double(m[1] + a1 * n), double(m[2] + a2 * n)};
              const double k2 = kv[0] * kv[0] + kv[1] * kv[1] + kv[2] * kv[2];
              if (k2 == 0) continue;
              const double damp = std::exp(-0.5 * sigma * sigma * k2) / vol;
              const cd w[3] = {ah[0][id] * damp, ah[1][id] * damp, ah[2][id] * damp};
              const cd U[3] = {I * (kv[1] * w[2] - kv[2] * w[1]) / k2, I * (kv[2] * w[0] - kv[0] * w[2]) / k2,
                               I * (kv[0] * w[1] - kv[1] * w[0]) / k2};
              for (int c = 0; c < 3; ++c) {
                uh[c][id] += U[c];
                for (int l = 0; l < 3; ++l) gh[c][l][id] += I * kv[l] * U[c];
              }
            }
      }
  u.assign(n3, {});
  grad.assign(n3, {});
  for (int c = 0; c < 3; ++c) {
    fft3(n, uh[c], FFTW_BACKWARD);
    for (std::size_t i = 0; i < n3; ++i) u[i][c] = uh[c][i].real();
    for (int l = 0; l < 3; ++l) {
      fft3(n, gh[c][l], FFTW_BACKWARD);
      for (std::size_t i = 0; i < n3; ++i) grad[i][c][l] = gh[c][l][i].real();
    }
  }
}

std::vector<std::array<double, 3>> random_solenoidal(int n, unsigned seed) {
  const std::size_t n3 = std::size_t(n) * n * n;
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> nd;
  std::vector<cd> a[3], w[3];
  for (int c = 0; c < 3; ++c) {
    a[c].resize(n3);
    for (auto& v : a[c]) v = nd(gen);
    fft3(n, a[c], FFTW_FORWARD);
    w[c].assign(n3, 0.0);
  }
  const cd I(0, 1);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < n; ++k) {
        const std::size_t id = (std::size_t(i) * n + j) * n + k;
        if (2 * i == n || 2 * j == n || 2 * k == n) continue;  // Nyquist: keep the curl real
        const double kv[3] = {double(signed_mode(i, n)), double(signed_mode(j, n)), double(signed_mode(k, n))};
        w[0][id] = I * (kv[1] * a[2][id] - kv[2] * a[1][id]);
        w[1][id] = I * (kv[2] * a[0][id] - kv[0] * a[2][id]);
        w[2][id] = I * (kv[0] * a[1][id] - kv[1] * a[0][id]);
      }
  std::vector<std::array<double, 3>> out(n3);
  double rms = 0;
  for (int c = 0; c < 3; ++c) {
    fft3(n, w[c], FFTW_BACKWARD);
    for (std::size_t i = 0; i < n3; ++i) {
      out[i][c] = w[c][i].real();
      rms += out[i][c] * out[i][c];
    }
  }
  rms = std::sqrt(rms / double(n3));
  for (auto& v : out)
    for (auto& c : v) c /= rms;
  return out;
}

void lattice_blobs(int n, const std::vector<std::array<double, 3>>& omega, std::vector<std::array<double, 3>>& x,
                   std::vector<std::array<double, 3>>& alpha) {
  const double h = 2 * M_PI / n, h3 = h * h * h;
  x.resize(omega.size());
  alpha.resize(omega.size());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < n; ++k) {
        const std::size_t id = (std::size_t(i) * n + j) * n + k;
        x[id] = {i * h, j * h, k * h};
        for (int d = 0; d < 3; ++d) alpha[id][d] = omega[id][d] * h3;
      }
}

}  // namespace vh::fmm::testing
