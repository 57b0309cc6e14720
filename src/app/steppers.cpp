#include "app/steppers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/vortex_checkpoint.h"
#include "base/error.h"
#include "io/h5.h"
#include "vortex/halo.h"

namespace vh::app {
namespace {

using vortex::Vec3;

/// The spectral state in a checkpoint: "u", double [3][N·N·(N/2+1)][2] (component, grid.h
/// mode index, re/im): the global array whatever the rank count, so any rank count restarts
/// from it. Written by rank 0 one kz-plane at a time as the ranks' parts arrive
/// (gather_plane); read by every rank, its own slots only (one hyperslab per run of
/// consecutive ky indices).
void save_coefficients(h5::Id grp, const SpectralSlab& u, RootErrors& err) {
  const Slab& s = u.slab;
  const std::size_t n = std::size_t(s.grid.n), row = n * (n / 2 + 1);
  h5::Handle d;
  err.run(s.comm, [&] { d = h5::create_doubles(grp, "u", {3, n * row, 2}); });
  std::vector<Complex> plane(s.comm.root() ? row : 0);
  for (int c = 0; c < 3; ++c)
    for (int iz = 0; iz < int(n); ++iz) {
      gather_plane(u, c, iz, s.comm.root() ? plane.data() : nullptr);
      err.run(s.comm, [&] {
        h5::write_block(d, {std::size_t(c), iz * row, 0}, {1, row, 2}, reinterpret_cast<const double*>(plane.data()));
      });
    }
}

/// Reads the spectral state into u; each coefficient is a mean of u e^{−ik·x} over the grid
/// (grid.h normalisation), so |u_k| ≤ max|u| ≤ `speed`.
void load_coefficients(h5::Id grp, SpectralSlab& u, double speed) {
  const Slab& s = u.slab;
  const std::size_t n = std::size_t(s.grid.n), nxh = n / 2 + 1, modes = n * n * nxh;
  const h5::Shape shape = h5::shape(grp, "u");
  if (shape.size() != 3 || shape[0] != 3 || shape[2] != 2 || shape[1] != modes) {
    std::size_t nf = 0;  // the N whose half layout has that many modes, if any
    for (std::size_t m = 2; shape.size() == 3 && m <= 8192 && nf == 0; m += 2)
      if (m * m * (m / 2 + 1) == shape[1]) nf = m;
    throw InputError(h5::where(grp, "u") + ": " +
                     (nf ? "coefficients of N = " + std::to_string(nf) : std::string("not [3][N*N*(N/2+1)][2]")) +
                     ", the run has domain.n = " + std::to_string(n) + " (allowed: the checkpoint's N)");
  }
  h5::Handle d = h5::open_dataset(grp, "u");
  // runs of slots with consecutive ky indices: one strided hyperslab over every kz-plane each
  const int sl = s.slots();
  for (int j0 = 0; j0 < sl;) {
    int j1 = j0 + 1;
    while (j1 < sl && s.ky_index(j1) == s.ky_index(j1 - 1) + 1) ++j1;
    const std::size_t len = std::size_t(j1 - j0) * nxh;
    for (int c = 0; c < 3; ++c)
      h5::read_strided(d, {std::size_t(c), std::size_t(s.ky_index(j0)) * nxh, 0}, {1, n * nxh, 2}, {1, n, 1},
                       {1, len, 2}, reinterpret_cast<double*>(u.c[c].data()), u.c[c].size() * 2,
                       2 * std::size_t(j0) * nxh, std::size_t(sl) * nxh * 2, len * 2);
    j0 = j1;
  }
  // Every rank checks its part; all refuse together (one rank alone would leave the others
  // waiting in the next collective).
  bool finite = true;
  for (const auto& c : u.c)
    for (const Complex& z : c) finite = finite && std::isfinite(z.real()) && std::isfinite(z.imag());
  if (s.comm.any(!finite)) throw InputError(h5::where(grp, "u") + ": holds values that are not finite");
  double largest = 0;
  for (const auto& c : u.c)
    for (const Complex& z : c) largest = std::max(largest, std::abs(z));
  largest = s.comm.max(largest);
  if (!(largest <= speed)) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  ": holds a coefficient |u_k| = %.3g, larger than a field of the run's largest speed can hold "
                  "(allowed: |u_k| <= max|u| <= %.3g, src/app/checkpoint.h)",
                  largest, speed);
    throw InputError(h5::where(grp, "u") + buf);
  }
}

class SpectralStepper : public Stepper {
 public:
  SpectralStepper(const spectral::Params& p, const Slab& s, Backend b)
      : slab_(s), solver_(spectral::make_solver(p, s, b)), kmax_(spectral::resolved_kmax(p, s.grid.n)),
        dealias_(p.dealias) {}
  std::string name() const override { return "spectral"; }
  double kmax() const override { return kmax_; }
  std::string resolution_advice() const override {
    return dealias_ == spectral::Dealias::two_thirds
               ? "raise domain.n (or spectral.dealias = 3/2: k_max N/2 - 1 instead of N/3)"
               : "raise domain.n";
  }
  void start(const SpectralSlab& u, double t) override { solver_->set_velocity(u, t); }
  void step(double dt) override {
    solver_->step(dt);
    solver_->synchronize();  // so the phase table books the GPU's time to the steps
    ++steps_;
  }
  double max_velocity() override { return solver_->max_velocity(); }
  double time() const override { return solver_->time(); }
  long steps() const override { return steps_; }
  void velocity(SpectralSlab& u) override { solver_->velocity(u); }
  bool statistics_in_place(double nu, Statistics& s, std::vector<double>& E) override {
#ifdef VH_HAVE_CUDA
    const void* d[3] = {solver_->device_velocity(0), solver_->device_velocity(1), solver_->device_velocity(2)};
    // Collective on R ranks: every rank's solver keeps its state on its GPU, or none does.
    if (d[0] == nullptr) return false;
    s = stats_(d, nu, E);
    return true;
#else
    (void)nu, (void)s, (void)E;
    return false;
#endif
  }
  void save(h5::Id grp) override {
    RootErrors err;
    save(grp, err, Comm());
    err.rethrow(Comm());
  }
  void save(h5::Id grp, RootErrors& err, const Comm& comm) override {
    SpectralSlab u;
    solver_->velocity(u);
    save_coefficients(grp, u, err);
    err.run(comm, [&] {
      h5::write_attribute(grp, "t", solver_->time());
      h5::write_attribute(grp, "steps", std::int64_t(steps_));
    });
  }
  void load(h5::Id grp, double speed) override {
    SpectralSlab u(slab_);
    load_coefficients(grp, u, speed);
    const double t = h5::read_double_attribute(grp, "t");
    const long steps = long(h5::read_int64_attribute(grp, "steps"));
    if (!(std::isfinite(t) && t >= 0 && steps >= 0 && (steps == 0) == (t == 0)))
      throw InputError(h5::where(grp, ".") + ": attributes t = " + std::to_string(t) + ", steps = " +
                       std::to_string(steps) + " are out of range (allowed: t >= 0 finite, steps >= 0, t = 0 "
                       "exactly when steps = 0)");
    solver_->set_velocity(u, t);
    steps_ = steps;
  }

 private:
  Slab slab_;
  std::unique_ptr<spectral::Solver> solver_;
  double kmax_;
  spectral::Dealias dealias_;
  long steps_ = 0;
#ifdef VH_HAVE_CUDA
  DeviceStatistics stats_{slab_};  // statistics_in_place
#endif
};

/// The vortex solver behind vortex::make_solver: the GPU-resident one (vortex/solver_gpu.h) on
/// the GPU back end with reinit_from = points, vortex::Solver otherwise (on R ranks: each rank
/// its particles, vortex/halo.h).
class VortexStepper : public Stepper {
 public:
  VortexStepper(const vortex::Params& p, const Slab& s)
      : grid_(s.grid),
        lattice_{vortex::lattice_points_per_direction(p.refine, s.grid.n)},
        lattice_slab_(vortex::lattice_slab(p, s.grid.n, s.comm)),
        sigma0_(p.overlap * lattice_.h()),
        solver_(vortex::make_solver(p, s)),
        max_core_ratio_(p.max_core_ratio),
        kmax_(vortex::resolved_kmax(p, s.grid.n))
#ifdef VH_HAVE_CUDA
        ,
        stats_(s)
#endif
  {
  }
  std::string name() const override { return "vortex"; }
  double kmax() const override { return kmax_; }
  std::string resolution_advice() const override {
    // The filter's cube grows with the lattice up to the grid's N/2 - 1 (refine 1.5 with the 2/3 filter).
    return kmax_ < grid_.kmax()
               ? "raise domain.n (or vortex.refine: the filter keeps |k_i| < filter_fraction * refine * N/2, "
                 "up to the grid's N/2 - 1)"
               : "raise domain.n";
  }
  void start(const SpectralSlab& u, double t) override { init_ = solver_->set_velocity(u, t); }
  void step(double dt) override {
    const long before = solver_->reinits();
    solver_->step(dt);
    reinitialised_ = solver_->reinits() != before;
  }
  std::string event() override {
    if (!reinitialised_) return "";
    // Every step may reinitialise (vortex.reinit_every = 1): only the core-ratio ones are news.
    if (solver_->core_ratio_at_reinit() <= max_core_ratio_) return "";
    char buf[160];
    std::snprintf(buf, sizeof buf, "vortex   reinitialised at step %ld: sigma/sigma0 was %.3f, RBF residual %.2e",
                  solver_->steps(), solver_->core_ratio_at_reinit(), solver_->last_rbf_residual());
    return buf;
  }
  double max_velocity() override { return solver_->max_velocity(); }
  double max_gradient() override { return solver_->max_gradient(); }
  double time() const override { return solver_->time(); }
  long steps() const override { return solver_->steps(); }
  void velocity(SpectralSlab& u) override { solver_->velocity(u); }
  bool statistics_in_place(double nu, Statistics& s, std::vector<double>& E) override {
#ifdef VH_HAVE_CUDA
    const void* d[3];
    if (!solver_->device_velocity(d)) return false;  // the state is on the host
    s = stats_(d, nu, E);
    return true;
#else
    (void)nu, (void)s, (void)E;
    return false;
#endif
  }
  std::vector<std::pair<std::string, double>> monitors() override {
    m_ = solver_->monitors();
    return {{"sum_strength_x", m_.total_strength[0]},
            {"sum_strength_y", m_.total_strength[1]},
            {"sum_strength_z", m_.total_strength[2]},
            {"max_div_omega", m_.max_div_omega},
            {"max_omega", m_.max_omega},
            {"div_omega_rel", m_.max_omega > 0 ? m_.max_div_omega / m_.max_omega : 0.0},
            {"div_removed", m_.div_removed},
            {"core_ratio", m_.core_ratio},
            {"reinits", double(m_.reinits)},
            {"rbf_residual", m_.last_rbf_residual}};
  }
  /// The state as global arrays (app/vortex_checkpoint.h), so any rank count restarts from it.
  void save(h5::Id grp) override {
    RootErrors err;
    save(grp, err, Comm());
    err.rethrow(Comm());
  }
  void save(h5::Id grp, RootErrors& err, const Comm& comm) override {
    save_vortex_state(grp, solver_->state(), err, comm);
  }
  /// Every rank reads the state a chunk at a time and keeps its own particles (vortex::owner_of:
  /// the rank of each particle's nearest lattice plane), reading the chunks near its planes.
  void load(h5::Id grp, double speed) override {
    KeepParticle own;
    KeepBox near;
    if (!lattice_slab_.whole()) {
      own = [this](const Vec3& x) { return vortex::owner_of(lattice_slab_, x[2]) == lattice_slab_.rank; };
      near = [this](const Vec3& lo, const Vec3& hi) { return vortex::owns_any(lattice_slab_, lo[2], hi[2]); };
    }
    solver_->set_state(load_vortex_state(grp, lattice_, vortex::bounds(lattice_, sigma0_, speed), own, near,
                                         lattice_slab_.local_points(), lattice_slab_.comm));
  }
  std::string log_line() override {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "vortex   sum(strength) (%.1e, %.1e, %.1e)  max|div w|/max|w| %.2e  projected %.1e  "
                  "sigma/sigma0 %.3f  reinits %ld",
                  m_.total_strength[0], m_.total_strength[1], m_.total_strength[2],
                  m_.max_omega > 0 ? m_.max_div_omega / m_.max_omega : 0.0, m_.div_removed, m_.core_ratio,
                  m_.reinits);
    return buf;
  }

 private:
  Grid grid_;
  Grid lattice_;  ///< the particle lattice, refine·N per direction: a checkpoint's particle count
  Slab lattice_slab_;  ///< this rank's slab of it
  double sigma0_;  ///< the lattice particles' core, overlap · h_p
  std::unique_ptr<vortex::SolverInterface> solver_;
  vortex::RbfResult init_;
  vortex::Monitors m_;
  double max_core_ratio_;
  double kmax_;
  bool reinitialised_ = false;
#ifdef VH_HAVE_CUDA
  DeviceStatistics stats_;  // statistics_in_place: on this rank's slab of the grid
#endif
};

}  // namespace

std::unique_ptr<Stepper> make_spectral(const spectral::Params& p, const Slab& s, Backend b) {
  return std::make_unique<SpectralStepper>(p, s, b);
}

std::unique_ptr<Stepper> make_vortex(vortex::Params p, const Slab& s, Backend b) {
  p.use_gpu = b == Backend::gpu;
  return std::make_unique<VortexStepper>(p, s);
}

}  // namespace vh::app
