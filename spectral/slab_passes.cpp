// CPU slab passes (slab_passes.h): FFTW batched line plans over the layouts of
// slab_kernel.h, OpenMP loops over its per-element functions, MPI all-to-all through
// vh::Comm. The GPU's cuFFT slab path (gpu_slab.cu) runs the same functions kernel by kernel.
#include "spectral/slab_passes.h"

#include <fftw3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "core/fft.h"
#include "spectral/slab_kernel.h"

namespace vh::spectral {

using kernel::Cx;
using kernel::SlabLayout;
using C = Cx<double>;

struct SlabPasses::Buffers {
  fftw_complex *z = nullptr, *y = nullptr, *x = nullptr, *send = nullptr, *recv = nullptr;
  C* Z() const { return reinterpret_cast<C*>(z); }
  C* Y() const { return reinterpret_cast<C*>(y); }
  C* X() const { return reinterpret_cast<C*>(x); }
  C* S() const { return reinterpret_cast<C*>(send); }
  C* R() const { return reinterpret_cast<C*>(recv); }
};

/// The plans of one transform size on the shared buffers (null where a rank has no lines).
struct SlabPasses::Lines {
  SlabLayout l;
  int fields;  // 6 for the evaluation, 3 for max|u|
  fftw_plan zi = nullptr, zf = nullptr, yi = nullptr, yf = nullptr, xi = nullptr, xf = nullptr;
};

namespace {

std::size_t fits(std::size_t n) { return std::max<std::size_t>(n, 1); }

/// `howmany` contiguous c2c lines of length m, in place; null for none.
fftw_plan lines(int m, std::size_t howmany, fftw_complex* a, int sign) {
  if (howmany == 0) return nullptr;
  return fftw_plan_many_dft(1, &m, int(howmany), a, nullptr, 1, m, a, nullptr, 1, m, sign, FFTW_ESTIMATE);
}

void run(fftw_plan p) {
  if (p) fftw_execute(p);
}

}  // namespace

SlabPasses::SlabPasses(const kernel::Geometry& g, const Slab& s, int threads)
    : slab_(s), threads_(threads), buf_(std::make_unique<Buffers>()) {
  eval_ = std::make_unique<Lines>();
  maxu_ = std::make_unique<Lines>();
  eval_->l = SlabLayout::make(g, s);
  eval_->fields = 6;
  kernel::Geometry gn = g;
  gn.m = g.n;  // max|u| on the N grid: same kept box, transforms of size N
  maxu_->l = SlabLayout::make(gn, s);
  maxu_->fields = 3;
  std::size_t nz = 0, ny = 0, nx = 0, nmsg = 0;
  for (const Lines* L : {eval_.get(), maxu_.get()}) {
    const SlabLayout& l = L->l;
    nz = std::max(nz, l.z_size(L->fields));
    ny = std::max(ny, l.y_size(L->fields));
    nx = std::max(nx, l.x_size(L->fields));
    nmsg = std::max({nmsg, l.z_size(L->fields), std::size_t(L->fields) * l.nk * l.nx * l.nzl});
  }
  std::lock_guard<std::mutex> lock(vh::fftw_planner_mutex());
  static const int init = fftw_init_threads();
  VH_CHECK(init != 0, "fftw_init_threads failed");
  fftw_plan_with_nthreads(threads_);
  Buffers& b = *buf_;
  b.z = fftw_alloc_complex(fits(nz));
  b.y = fftw_alloc_complex(fits(ny));
  b.x = fftw_alloc_complex(fits(nx));
  b.send = fftw_alloc_complex(fits(nmsg));
  b.recv = fftw_alloc_complex(fits(nmsg));
  VH_CHECK(b.z && b.y && b.x && b.send && b.recv, "FFTW allocation of the slab buffers failed");
  for (Lines* L : {eval_.get(), maxu_.get()}) {
    const SlabLayout& l = L->l;
    const int m = l.g.m, mxh = l.g.mxh(), F = L->fields;
    L->zi = lines(m, std::size_t(F) * l.njy * l.nx, b.z, FFTW_BACKWARD);
    L->yi = lines(m, std::size_t(F) * l.nzl * l.nx, b.y, FFTW_BACKWARD);
    L->xi = fftw_plan_many_dft_c2r(1, &m, F * l.nzl * m, b.x, nullptr, 1, mxh, reinterpret_cast<double*>(b.x),
                                   nullptr, 1, 2 * mxh, FFTW_ESTIMATE);
    VH_CHECK(L->xi && L->yi && (L->zi || l.njy == 0), "FFTW planning of the slab passes failed");
    if (F == 3) continue;  // max|u| has no forward transforms
    L->zf = lines(m, std::size_t(3) * l.njy * l.nx, b.z, FFTW_FORWARD);
    L->yf = lines(m, std::size_t(3) * l.nzl * l.nx, b.y, FFTW_FORWARD);
    L->xf = fftw_plan_many_dft_r2c(1, &m, 3 * l.nzl * m, reinterpret_cast<double*>(b.x), nullptr, 1, 2 * mxh, b.x,
                                   nullptr, 1, mxh, FFTW_ESTIMATE);
    VH_CHECK(L->xf && L->yf && (L->zf || l.njy == 0), "FFTW planning of the slab passes failed");
  }
}

SlabPasses::~SlabPasses() {
  std::lock_guard<std::mutex> lock(vh::fftw_planner_mutex());
  for (Lines* L : {eval_.get(), maxu_.get()})
    for (fftw_plan p : {L->zi, L->zf, L->yi, L->yf, L->xi, L->xf})
      if (p) fftw_destroy_plan(p);
  for (fftw_complex* p : {buf_->z, buf_->y, buf_->x, buf_->send, buf_->recv}) fftw_free(p);
}

void SlabPasses::load(const kernel::StageArrays<double>& arr) {
  const SlabLayout& l = eval_->l;
  C* Z = buf_->Z();
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads_)
  for (int j = 0; j < l.njy; ++j)
    for (int kx = 0; kx < l.nx; ++kx)
      for (int z = 0; z < l.g.m; ++z) kernel::load_z(l, 6, j, kx, z, arr, Z);
}

void SlabPasses::alltoall(const SlabLayout& l, int F, bool to_planes) {
  std::vector<std::size_t> zc, zo, yc, yo;  // the z side's messages (to or from each rank's planes), the y side's
  for (int r = 0; r < l.ranks; ++r) {
    zc.push_back(l.z_count(F, r)), zo.push_back(l.z_offset(F, r));
    yc.push_back(l.y_count(F, r)), yo.push_back(l.y_offset(F, r));
    if (r != l.rank) stats_.bytes += double((to_planes ? zc : yc).back() * sizeof(C));
  }
  if (to_planes)
    slab_.comm.alltoallv(buf_->S(), zc, zo, buf_->R(), yc, yo, sizeof(C));
  else
    slab_.comm.alltoallv(buf_->S(), yc, yo, buf_->R(), zc, zo, sizeof(C));
  ++stats_.exchanges;
}

void SlabPasses::exchange_to_planes(const Lines& L, int F) {
  const auto t0 = std::chrono::steady_clock::now();
  const SlabLayout& l = L.l;
  const C* Z = buf_->Z();
  C *S = buf_->S(), *R = buf_->R(), *Y = buf_->Y();
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads_)
  for (int f = 0; f < F; ++f)
    for (int j = 0; j < l.njy; ++j)
      for (int kx = 0; kx < l.nx; ++kx)
        for (int z = 0; z < l.g.m; ++z) S[l.z_message(F, f, j, kx, z)] = Z[l.zi(f, j, kx, z)];
  alltoall(l, F, true);
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads_)
  for (int f = 0; f < F; ++f)
    for (int zl = 0; zl < l.nzl; ++zl)
      for (int kx = 0; kx < l.nx; ++kx)
        for (int y = 0; y < l.g.m; ++y) Y[l.yi(f, zl, kx, y)] = kernel::y_from_message(l, F, f, zl, kx, y, R);
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void SlabPasses::exchange_to_columns(const Lines& L) {
  const auto t0 = std::chrono::steady_clock::now();
  const SlabLayout& l = L.l;
  const int F = 3;
  const C* Y = buf_->Y();
  C *S = buf_->S(), *R = buf_->R(), *Z = buf_->Z();
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads_)
  for (int c = 0; c < F; ++c)
    for (int zl = 0; zl < l.nzl; ++zl)
      for (int kx = 0; kx < l.nx; ++kx)
        for (int jy = 0; jy < l.nk; ++jy)
          S[l.y_message(F, c, jy, kx, zl)] = Y[l.yi(c, zl, kx, kernel::axis_index(jy - l.k, l.g.m))];
  alltoall(l, F, false);
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads_)
  for (int c = 0; c < F; ++c)
    for (int j = 0; j < l.njy; ++j)
      for (int kx = 0; kx < l.nx; ++kx)
        for (int z = 0; z < l.g.m; ++z) Z[l.zi(c, j, kx, z)] = R[l.z_message(F, c, j, kx, z)];
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void SlabPasses::to_rows(const Lines& L, int F) {
  const SlabLayout& l = L.l;
  const C* Y = buf_->Y();
  C* X = buf_->X();
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads_)
  for (int f = 0; f < F; ++f)
    for (int zl = 0; zl < l.nzl; ++zl)
      for (int y = 0; y < l.g.m; ++y)
        for (int kx = 0; kx < l.g.mxh(); ++kx) X[l.xi(f, zl, y, kx)] = kernel::x_from_y(l, f, zl, y, kx, Y);
  run(L.xi);
}

void SlabPasses::transforms() {
  const Lines& L = *eval_;
  const SlabLayout& l = L.l;
  run(L.zi);
  exchange_to_planes(L, 6);
  run(L.yi);
  to_rows(L, 6);
  // u × ω on the grid: fields 0–2 (u) and 3–5 (ω) as in-place real rows
  const int m = l.g.m, row = l.g.mrow();
  const std::ptrdiff_t cd = std::ptrdiff_t(l.nzl) * m * row;  // reals per field
  double* r = reinterpret_cast<double*>(buf_->x);
#pragma omp parallel for schedule(static) num_threads(threads_)
  for (std::ptrdiff_t yr = 0; yr < std::ptrdiff_t(l.nzl) * m; ++yr) {
    double* p = r + yr * row;
    for (int x = 0; x < m; ++x)
      kernel::cross_in_place(p[x], p[cd + x], p[2 * cd + x], p[3 * cd + x], p[4 * cd + x], p[5 * cd + x]);
  }
  run(L.xf);
  const C* X = buf_->X();
  C* Y = buf_->Y();
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads_)
  for (int c = 0; c < 3; ++c)
    for (int zl = 0; zl < l.nzl; ++zl)
      for (int kx = 0; kx < l.nx; ++kx)
        for (int y = 0; y < m; ++y) Y[l.yi(c, zl, kx, y)] = X[l.xi(c, zl, y, kx)];
  run(L.yf);
  exchange_to_columns(L);
  run(L.zf);
}

void SlabPasses::post(int s, bool expl, double nu, double dt, const kernel::StageArrays<double>& arr) {
  const SlabLayout& l = eval_->l;
  C* Z = buf_->Z();
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads_)
  for (int j = 0; j < l.njy; ++j)
    for (int kx = 0; kx < l.nx; ++kx)
      for (int z = 0; z < l.g.m; ++z) kernel::post_z(l, s, expl, nu, dt, j, kx, z, arr, Z);
}

double SlabPasses::max_velocity(const kernel::StageArrays<double>& arr) {
  const Lines& L = *maxu_;
  const SlabLayout& l = L.l;
  C* Z = buf_->Z();
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads_)
  for (int j = 0; j < l.njy; ++j)
    for (int kx = 0; kx < l.nx; ++kx)
      for (int z = 0; z < l.g.m; ++z) kernel::load_z(l, 3, j, kx, z, arr, Z);
  run(L.zi);
  exchange_to_planes(L, 3);
  run(L.yi);
  to_rows(L, 3);
  const int m = l.g.m, row = l.g.mrow();
  const double* r = reinterpret_cast<const double*>(buf_->x);
  const std::ptrdiff_t rows = std::ptrdiff_t(3) * l.nzl * m;
  double mx = 0;
#pragma omp parallel for reduction(max : mx) schedule(static) num_threads(threads_)
  for (std::ptrdiff_t i = 0; i < rows; ++i)
    for (int x = 0; x < m; ++x) mx = std::max(mx, std::fabs(r[i * row + x]));
  return slab_.comm.max(mx);
}

void SlabPasses::local_ffts() {
  const Lines& L = *eval_;
  for (fftw_plan p : {L.zi, L.yi, L.xi, L.xf, L.yf, L.zf}) run(p);
}

}  // namespace vh::spectral
