#include "core/fft.h"

#include <fftw3.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/error.h"

namespace vh {

std::mutex& fftw_planner_mutex() {
  static std::mutex m;
  return m;
}

namespace {
std::mutex& planner_mutex() { return fftw_planner_mutex(); }
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

// ---- SlabFft --------------------------------------------------------------------------------

struct SlabFft::Plans {
  // a: the rank's modes [kz][slot][kx]; b: its planes of every ky [z][ky][kx]; send/recv:
  // the b side's messages (core/slab.h SlabTranspose).
  fftw_complex *a = nullptr, *b = nullptr, *send = nullptr, *recv = nullptr;
  fftw_plan zi = nullptr, zf = nullptr, yi = nullptr, yf = nullptr, xi = nullptr, xf = nullptr;
  SlabTranspose t;
  int nxh = 0;

  /// The b side's messages into the [z][ky][kx] planes (recv → b) or out of them (b → send), a
  /// row of N/2 + 1 values at a time (transpose_b_index of its first value).
  void unpack() {
    auto* to = reinterpret_cast<Complex*>(b);
    const auto* from = reinterpret_cast<const Complex*>(recv);
    const std::ptrdiff_t nrows = std::ptrdiff_t(t.rows.size());
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t r = 0; r < nrows; ++r) {
      const std::size_t q = std::size_t(r) * nxh;
      std::copy(from + q, from + q + nxh, to + transpose_b_index(t.rows.data(), nxh, q));
    }
  }
  void pack() {
    const auto* from = reinterpret_cast<const Complex*>(b);
    auto* to = reinterpret_cast<Complex*>(send);
    const std::ptrdiff_t nrows = std::ptrdiff_t(t.rows.size());
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t r = 0; r < nrows; ++r) {
      const std::size_t q = std::size_t(r) * nxh;
      const Complex* row = from + transpose_b_index(t.rows.data(), nxh, q);
      std::copy(row, row + nxh, to + q);
    }
  }
};

SlabFft::SlabFft(const Slab& s, int threads) : slab_(s) {
  if (s.whole()) {
    whole_ = std::make_unique<Fft3d>(s.grid.n, threads);
    return;
  }
  plans_ = std::make_unique<Plans>();
  Plans& p = *plans_;
  const int n = s.grid.n, nxh = n / 2 + 1, sl = s.slots();
  const std::size_t na = s.local_modes(), nb = std::size_t(s.nz) * n * nxh;
  p.t = slab_transpose(s);
  p.nxh = nxh;
  const std::size_t nmsg = p.t.rows.size() * nxh;
  std::lock_guard<std::mutex> lock(planner_mutex());
  static const int init = fftw_init_threads();
  VH_CHECK(init != 0, "fftw_init_threads failed");
  fftw_plan_with_nthreads(threads > 0 ? threads : omp_get_max_threads());
  p.a = fftw_alloc_complex(std::max<std::size_t>(na, 1));
  p.b = fftw_alloc_complex(std::max<std::size_t>(nb, 1));
  p.send = fftw_alloc_complex(std::max<std::size_t>(nmsg, 1));
  p.recv = fftw_alloc_complex(std::max<std::size_t>(nmsg, 1));
  VH_CHECK(p.a && p.b && p.send && p.recv, "FFTW allocation failed");
  // z: lines of the a array, stride slots·(N/2+1), one per (slot, kx)
  const int zs = sl * nxh;
  p.zi = fftw_plan_many_dft(1, &n, zs, p.a, nullptr, zs, 1, p.a, nullptr, zs, 1, FFTW_BACKWARD, FFTW_ESTIMATE);
  p.zf = fftw_plan_many_dft(1, &n, zs, p.a, nullptr, zs, 1, p.a, nullptr, zs, 1, FFTW_FORWARD, FFTW_ESTIMATE);
  // y: lines of the b array, stride N/2+1, one per (z, kx)
  const fftw_iodim64 ydim{n, nxh, nxh};
  const fftw_iodim64 yloops[2] = {{s.nz, std::ptrdiff_t(n) * nxh, std::ptrdiff_t(n) * nxh}, {nxh, 1, 1}};
  p.yi = fftw_plan_guru64_dft(1, &ydim, 2, yloops, p.b, p.b, FFTW_BACKWARD, FFTW_ESTIMATE);
  p.yf = fftw_plan_guru64_dft(1, &ydim, 2, yloops, p.b, p.b, FFTW_FORWARD, FFTW_ESTIMATE);
  // x: rows of b to and from the caller's real planes (new-array execution, so unaligned)
  std::vector<double> row(std::size_t(s.nz) * n * n);
  auto* rr = row.data();
  p.xi = fftw_plan_many_dft_c2r(1, &n, s.nz * n, p.b, nullptr, 1, nxh, rr, nullptr, 1, n, FFTW_ESTIMATE | FFTW_UNALIGNED);
  p.xf = fftw_plan_many_dft_r2c(1, &n, s.nz * n, rr, nullptr, 1, n, p.b, nullptr, 1, nxh, FFTW_ESTIMATE | FFTW_UNALIGNED);
  VH_CHECK(p.zi && p.zf && p.yi && p.yf && p.xi && p.xf, "FFTW planning failed");
}

SlabFft::~SlabFft() {
  if (!plans_) return;
  std::lock_guard<std::mutex> lock(planner_mutex());
  Plans& p = *plans_;
  for (fftw_plan q : {p.zi, p.zf, p.yi, p.yf, p.xi, p.xf}) fftw_destroy_plan(q);
  for (fftw_complex* b : {p.a, p.b, p.send, p.recv}) fftw_free(b);
}

void SlabFft::inverse(const Complex* c, double* u) {
  if (whole_) return whole_->inverse(c, u);
  Plans& p = *plans_;
  const Slab& s = slab_;
  std::memcpy(static_cast<void*>(p.a), c, s.local_modes() * sizeof(Complex));
  fftw_execute(p.zi);
  s.comm.alltoallv(p.a, p.t.a_counts, p.t.a_displs, p.recv, p.t.b_counts, p.t.b_displs, sizeof(Complex));
  p.unpack();
  fftw_execute(p.yi);
  fftw_execute_dft_c2r(p.xi, p.b, u);
}

void SlabFft::forward(const double* u, Complex* c) {
  if (whole_) return whole_->forward(u, c);
  Plans& p = *plans_;
  const Slab& s = slab_;
  fftw_execute_dft_r2c(p.xf, const_cast<double*>(u), p.b);  // r2c leaves its input alone
  fftw_execute(p.yf);
  p.pack();
  s.comm.alltoallv(p.send, p.t.b_counts, p.t.b_displs, p.a, p.t.a_counts, p.t.a_displs, sizeof(Complex));
  fftw_execute(p.zf);
  const double scale = 1.0 / double(s.grid.points());
  const auto* a = reinterpret_cast<const Complex*>(p.a);
  const std::ptrdiff_t m = std::ptrdiff_t(s.local_modes());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < m; ++i) c[i] = a[i] * scale;
}

}  // namespace vh
