// CPU back end (cpu_solver.h). The loops mirror the GPU kernels of gpu_solver.cu one to one
// and call the same per-mode math (rhs_kernel.h); this is the reference the GPU is tested
// against. On one rank an evaluation is 3-D FFTW transforms of the zero-padded M grid; on
// R > 1 ranks (or with Params::transforms = fused) it is the slab passes (slab_passes.h).
#include "spectral/cpu_solver.h"

#include <fftw3.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>

#include "base/ordered_sum.h"
#include "core/error.h"
#include "core/fft.h"
#include "spectral/rhs_kernel.h"
#include "spectral/rk4.h"
#include "spectral/slab_passes.h"

namespace vh::spectral {
namespace {

using kernel::Cx;
using C = Cx<double>;

std::mutex& planner_mutex() { return vh::fftw_planner_mutex(); }

/// In-place FFTW plan of `howmany` r2c or c2r transforms of size m³ on `data`.
fftw_plan plan_many(int m, int howmany, fftw_complex* data, bool inverse) {
  const int n[3] = {m, m, m};
  const int cemb[3] = {m, m, m / 2 + 1};
  const int remb[3] = {m, m, 2 * (m / 2 + 1)};
  const int cdist = m * m * (m / 2 + 1);
  auto* r = reinterpret_cast<double*>(data);
  if (inverse)
    return fftw_plan_many_dft_c2r(3, n, howmany, data, cemb, 1, cdist, r, remb, 1, 2 * cdist,
                                  FFTW_ESTIMATE);
  return fftw_plan_many_dft_r2c(3, n, howmany, r, remb, 1, 2 * cdist, data, cemb, 1, cdist,
                                FFTW_ESTIMATE);
}

class CpuSolver final : public Rk4Solver {
 public:
  CpuSolver(const Params& p, const Slab& s) : p_(p), slab_(s) {
    const int n = s.grid.n;
    g_ = kernel::make_geometry(n, p.dealias);
    nmodes_ = s.local_modes();
    pmodes_ = std::size_t(g_.m) * g_.m * g_.mxh();
    // Below 64³ transforms a step is a few ms of work: threads cost more than they save,
    // and far more on a loaded machine (barriers wait for descheduled threads).
    threads_ = std::size_t(g_.m) * g_.m * g_.m >= std::size_t(64) * 64 * 64 ? omp_get_max_threads() : 1;
    for (auto* v : {&u0_, &acc_}) v->assign(3 * nmodes_, C{0, 0});
    if (p.viscosity == Viscosity::explicit_rk4) a_.assign(3 * nmodes_, C{0, 0});
    for (int c = 0; c < 3; ++c) {
      arr_.u0[c] = u0_.data() + c * nmodes_;
      arr_.acc[c] = acc_.data() + c * nmodes_;
      arr_.a[c] = a_.empty() ? nullptr : a_.data() + c * nmodes_;
    }
    if (!s.whole() || p.transforms == Transforms::fused) {
      passes_ = std::make_unique<SlabPasses>(g_, s, threads_);
      return;
    }
    work_ = fftw_alloc_complex(6 * pmodes_);
    VH_CHECK(work_, "FFTW allocation of the transform buffers failed");
    std::memset(static_cast<void*>(work_), 0, 6 * pmodes_ * sizeof(fftw_complex));
    {
      std::lock_guard<std::mutex> lock(planner_mutex());
      static const int init = fftw_init_threads();
      VH_CHECK(init != 0, "fftw_init_threads failed");
      fftw_plan_with_nthreads(threads_);
      inv6_ = plan_many(g_.m, 6, work_, true);
      fwd3_ = plan_many(g_.m, 3, work_, false);
      invn_ = plan_many(n, 3, work_, true);
    }
    VH_CHECK(inv6_ && fwd3_ && invn_, "FFTW planning failed");
    auto* w = reinterpret_cast<C*>(work_);
    for (int c = 0; c < 6; ++c) arr_.buf[c] = w + c * pmodes_;
  }
  ~CpuSolver() override {
    if (passes_) return;
    std::lock_guard<std::mutex> lock(planner_mutex());
    fftw_destroy_plan(inv6_);
    fftw_destroy_plan(fwd3_);
    fftw_destroy_plan(invn_);
    fftw_free(work_);
  }

  void set_velocity(const SpectralSlab& u, double t) override {
    VH_CHECK(u.slab.grid.n == g_.n && u.c[0].size() == nmodes_, "set_velocity: grid or slab differs from the solver's");
    kernel::for_each_state_mode(g_, slab_, [&](std::size_t m, bool keep) {
      for (int c = 0; c < 3; ++c) arr_.u0[c][m] = keep ? C{u.c[c][m].real(), u.c[c][m].imag()} : C{0, 0};
    });
    t_ = t;
    inputs_ready_ = false;
    max_valid_ = false;
  }

  void velocity(SpectralSlab& u) override {
    if (u.c[0].size() != nmodes_) u = SpectralSlab(slab_);
    u.slab = slab_;
    for (int c = 0; c < 3; ++c)
      std::memcpy(static_cast<void*>(u.c[c].data()), arr_.u0[c], nmodes_ * sizeof(C));
  }

  double max_velocity() override {
    if (max_valid_) return max_cache_;
    if (passes_) {
      inputs_ready_ = false;
      max_valid_ = true;
      return max_cache_ = passes_->max_velocity(arr_);
    }
    const int n = g_.n, row = 2 * g_.nxh();
    const std::size_t cd = std::size_t(n) * n * g_.nxh();
    for (int c = 0; c < 3; ++c)
      std::memcpy(static_cast<void*>(work_ + c * cd), arr_.u0[c], nmodes_ * sizeof(C));
    fftw_execute(invn_);
    const auto* r = reinterpret_cast<const double*>(work_);
    double mx = 0;
#pragma omp parallel for collapse(2) reduction(max : mx) schedule(static) num_threads(threads_)
    for (int iz = 0; iz < n; ++iz)
      for (int iy = 0; iy < n; ++iy)
        for (int c = 0; c < 3; ++c) {
          const double* p = r + 2 * c * cd + (std::size_t(iz) * n + iy) * row;
          for (int ix = 0; ix < n; ++ix) mx = std::max(mx, std::fabs(p[ix]));
        }
    inputs_ready_ = false;
    max_valid_ = true;
    return max_cache_ = mx;
  }

  Energies energies() override {
    const int n = g_.n, nxh = g_.nxh(), sl = slab_.slots();
    const C* u[3] = {arr_.u0[0], arr_.u0[1], arr_.u0[2]};
    // One term a row (iz, slot) of nxh modes.
    const auto KZ = ordered_sum<2>(std::ptrdiff_t(n) * sl, [&](std::ptrdiff_t r, double* acc) {
      const int iz = int(r / sl), j = int(r % sl);
      for (int ix = 0; ix < nxh; ++ix) {
        double e, z;
        kernel::mode_energy(g_, ix, slab_.ky_index(j), iz, slab_.mode_index(ix, j, iz), u, e, z);
        acc[0] += e;
        acc[1] += z;
      }
    }, kSumChunk / nxh);
    return {slab_.comm.sum(KZ[0]), slab_.comm.sum(KZ[1])};
  }

  void nonlinear_term(SpectralSlab& out) override {
    load_state_inputs();
    nonlinear_transforms();
    kernel::StageArrays<double> arr = arr_;
    for (int c = 0; c < 3; ++c) arr.a[c] = arr.acc[c];
    post(kernel::kRhsOnly, 0.0, arr);
    if (out.c[0].size() != nmodes_) out = SpectralSlab(slab_);
    out.slab = slab_;
    for (int c = 0; c < 3; ++c) {
      std::memcpy(static_cast<void*>(out.c[c].data()), arr_.acc[c], nmodes_ * sizeof(C));
      std::fill(arr_.acc[c], arr_.acc[c] + nmodes_, C{0, 0});
    }
    inputs_ready_ = false;
  }

  double time_transforms(int reps) override {
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
      load_state_inputs();
      const auto t0 = std::chrono::steady_clock::now();
      for (int s = 0; s < 4; ++s) {
        if (passes_) {
          passes_->local_ffts();
          continue;
        }
        fftw_execute(inv6_);
        fftw_execute(fwd3_);
      }
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    inputs_ready_ = false;
    std::sort(t.begin(), t.end());
    return t.empty() ? 0.0 : t[t.size() / 2];
  }

  int transform_size() const override { return g_.m; }
  ExchangeStats exchange_stats() const override { return passes_ ? passes_->stats() : ExchangeStats{}; }
  std::string path() const override { return passes_ ? "slab passes (FFTW lines)" : "3-D FFTW"; }

 protected:
  void load_state_inputs() override {
    if (passes_) return passes_->load(arr_);
    const int m = g_.m, mxh = g_.mxh();
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads_)
    for (int iz = 0; iz < m; ++iz)
      for (int iy = 0; iy < m; ++iy)
        for (int ix = 0; ix < mxh; ++ix) kernel::load_mode(g_, ix, iy, iz, arr_);
  }

  void nonlinear_transforms() override {
    if (passes_) return passes_->transforms();
    fftw_execute(inv6_);
    const int m = g_.m, row = g_.mrow();
    const std::ptrdiff_t cd = std::ptrdiff_t(2) * pmodes_;  // reals per buffer
    auto* r = reinterpret_cast<double*>(work_);
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads_)
    for (int iz = 0; iz < m; ++iz)
      for (int iy = 0; iy < m; ++iy) {
        double* p = r + (std::ptrdiff_t(iz) * m + iy) * row;
        for (int ix = 0; ix < m; ++ix)
          kernel::cross_in_place(p[ix], p[cd + ix], p[2 * cd + ix], p[3 * cd + ix],
                                 p[4 * cd + ix], p[5 * cd + ix]);
      }
    fftw_execute(fwd3_);
  }

  void post_transform(int s, double dt) override { post(s, dt, arr_); }

 private:
  void post(int s, double dt, const kernel::StageArrays<double>& arr) {
    const int m = g_.m, mxh = g_.mxh();
    const bool expl = p_.viscosity == Viscosity::explicit_rk4;
    if (passes_) return passes_->post(s, expl, p_.nu, dt, arr);
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads_)
    for (int iz = 0; iz < m; ++iz)
      for (int iy = 0; iy < m; ++iy)
        for (int ix = 0; ix < mxh; ++ix) kernel::post_mode(g_, s, expl, p_.nu, dt, ix, iy, iz, arr);
  }

  Params p_;
  Slab slab_;
  kernel::Geometry g_{};
  std::size_t nmodes_ = 0, pmodes_ = 0;
  int threads_ = 1;  // OpenMP and FFTW threads
  std::vector<C> u0_, acc_, a_;
  fftw_complex* work_ = nullptr;
  fftw_plan inv6_ = nullptr, fwd3_ = nullptr, invn_ = nullptr;
  kernel::StageArrays<double> arr_{};
  std::unique_ptr<SlabPasses> passes_;  // R > 1 ranks (or transforms = fused): the slab passes
};

}  // namespace

std::unique_ptr<Solver> make_cpu_solver(const Params& p, const Slab& s) {
  return std::make_unique<CpuSolver>(p, s);
}

}  // namespace vh::spectral
