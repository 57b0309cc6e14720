#include "core/fft.h"

#include <fftw3.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/error.h"

namespace vh {
namespace {
std::mutex& planner_mutex() {  // FFTW's planner is not thread safe
  static std::mutex m;
  return m;
}
}  // namespace

struct Fft3d::Plans {
  double* real = nullptr;
  fftw_complex* spec = nullptr;
  fftw_plan fwd = nullptr;
  fftw_plan inv = nullptr;
  std::size_t nreal = 0, nspec = 0;
};

Fft3d::Fft3d(int n, int threads) : n_(n), plans_(std::make_unique<Plans>()) {
  VH_CHECK(n > 0, "FFT size must be positive");
  Grid g{n};
  plans_->nreal = g.points();
  plans_->nspec = g.modes();
  std::lock_guard<std::mutex> lock(planner_mutex());
  static const int init = fftw_init_threads();
  VH_CHECK(init != 0, "fftw_init_threads failed");
  fftw_plan_with_nthreads(threads > 0 ? threads : omp_get_max_threads());
  plans_->real = fftw_alloc_real(plans_->nreal);
  plans_->spec = fftw_alloc_complex(plans_->nspec);
  VH_CHECK(plans_->real && plans_->spec, "FFTW allocation failed");
  plans_->fwd = fftw_plan_dft_r2c_3d(n, n, n, plans_->real, plans_->spec, FFTW_ESTIMATE);
  plans_->inv = fftw_plan_dft_c2r_3d(n, n, n, plans_->spec, plans_->real, FFTW_ESTIMATE);
  VH_CHECK(plans_->fwd && plans_->inv, "FFTW planning failed");
}

Fft3d::~Fft3d() {
  std::lock_guard<std::mutex> lock(planner_mutex());
  fftw_destroy_plan(plans_->fwd);
  fftw_destroy_plan(plans_->inv);
  fftw_free(plans_->real);
  fftw_free(plans_->spec);
}

void Fft3d::forward(const double* u, Complex* c) {
  std::memcpy(plans_->real, u, plans_->nreal * sizeof(double));
  fftw_execute(plans_->fwd);
  const double scale = 1.0 / double(plans_->nreal);
  const auto* s = reinterpret_cast<const Complex*>(plans_->spec);
  const std::ptrdiff_t m = std::ptrdiff_t(plans_->nspec);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < m; ++i) c[i] = s[i] * scale;
}

void Fft3d::inverse(const Complex* c, double* u) {
  std::memcpy(plans_->spec, c, plans_->nspec * sizeof(Complex));
  fftw_execute(plans_->inv);
  std::memcpy(u, plans_->real, plans_->nreal * sizeof(double));
}

void Fft3d::forward(const VectorField& u, SpectralVector& c) {
  VH_CHECK(u.grid.n == n_, "field size does not match the FFT");
  if (c.grid.n != n_) c = SpectralVector(u.grid);
  for (int d = 0; d < 3; ++d) forward(u.c[d].data(), c.c[d].data());
}

void Fft3d::inverse(const SpectralVector& c, VectorField& u) {
  VH_CHECK(c.grid.n == n_, "field size does not match the FFT");
  if (u.grid.n != n_) u = VectorField(c.grid);
  for (int d = 0; d < 3; ++d) inverse(c.c[d].data(), u.c[d].data());
}

}  // namespace vh
