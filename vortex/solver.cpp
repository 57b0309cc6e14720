#include "vortex/solver.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/diagnostics.h"
#include "core/error.h"
#include "core/fft.h"
#include "vortex/blobs.h"

namespace vh::vortex {
namespace {

/// The periodic velocity at the lattice points of blobs of core `sigma` sitting on the lattice
/// (docs/design.md, "Exact reference for tests"): with c_α(k) the coefficients of the strengths,
/// the sampled field has U(k) = h⁻³ Σ_a i q × c_α(k) exp(−σ²|q|²/2) / |q|², q = k + aN,
/// a ∈ {−2 … 2}³ (the ±2 aliases weigh < exp(−22) at σ ≥ h/√2), and zero mean.  Exact, so the
/// FMM evaluation it replaces agreed with it to the FMM tolerance.
void lattice_velocity(const Particles& p, const Grid& g, double sigma, SpectralVector& u) {
  const int n = g.n, nxh = n / 2 + 1;
  VectorField a(g);
  for (std::size_t i = 0; i < p.size(); ++i)
    for (int d = 0; d < 3; ++d) a.c[d][i] = p.alpha[i][d];
  Fft3d fft(n);
  SpectralVector ca;
  fft.forward(a, ca);
  u = SpectralVector(g);
  const double h3 = g.h() * g.h() * g.h();
#pragma omp parallel for collapse(2) schedule(static)
  for (int iz = 0; iz < n; ++iz)
    for (int iy = 0; iy < n; ++iy)
      for (int ix = 0; ix < nxh; ++ix) {
        const int k[3] = {ix, g.wavenumber(iy), g.wavenumber(iz)};
        if (k[0] == 0 && k[1] == 0 && k[2] == 0) continue;  // zero mean, as the FMM's
        const std::size_t m = g.mode_index(ix, iy, iz);
        const Complex c[3] = {ca.c[0][m], ca.c[1][m], ca.c[2][m]};
        Complex s[3] = {0.0, 0.0, 0.0};
        for (int az = -2; az <= 2; ++az)
          for (int ay = -2; ay <= 2; ++ay)
            for (int ax = -2; ax <= 2; ++ax) {
              const double q[3] = {double(k[0] + ax * n), double(k[1] + ay * n), double(k[2] + az * n)};
              const double q2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2];
              const double w = std::exp(-0.5 * sigma * sigma * q2) / q2;
              // i q × c
              s[0] += Complex(0, w) * (q[1] * c[2] - q[2] * c[1]);
              s[1] += Complex(0, w) * (q[2] * c[0] - q[0] * c[2]);
              s[2] += Complex(0, w) * (q[0] * c[1] - q[1] * c[0]);
            }
        for (int d = 0; d < 3; ++d) u.c[d][m] = s[d] / h3;
      }
}

}  // namespace

std::vector<OptionSpec> option_specs() {
  std::vector<OptionSpec> t = {
      {"vortex.init", "rbf|direct", "rbf", "",
       "initial strengths: RBF solve so the blobs reproduce omega at the lattice, or alpha = omega h^3"},
      {"vortex.overlap", "real", "1.0", "h", "core radius sigma0 = overlap * h"},
      {"vortex.field_core", "real", "1.0", "sigma0",
       "the solver's field is that of the blobs with core field_core * sigma0 (init reproduces omega with them, "
       "the grid velocity is theirs); 0.7071 is the field whose energy the blob dynamics conserves (vortex/solver.h)"},
      {"vortex.stretching", "classical|transpose", "classical", "",
       "stretching (alpha.grad)u, or (grad u)^T alpha which conserves sum(alpha)"},
      {"vortex.reinit_every", "int", "100", "steps", "RBF reinitialisation every this many steps (0: only by core ratio)"},
      {"vortex.max_core_ratio", "real", "1.5", "", "reinitialise as soon as sigma/sigma0 exceeds this"},
      {"vortex.blob_cutoff", "real", "7", "sigma", "blob sums at the lattice cut off at this many sigma"},
      {"vortex.rbf_solver", "fft|cg", "fft", "", "RBF solve: exact circulant solve by FFT, or conjugate gradients"},
      {"vortex.rbf_tol", "real", "1e-3", "", "cg: relative residual to reach"},
      {"vortex.rbf_max_iter", "int", "50", "", "cg: iteration limit"},
      {"vortex.rbf_symbol_floor", "real", "1e-3", "",
       "fft: Gaussian symbol S(k)/S(0) below this is capped (limits the near-Nyquist gain)"},
  };
  for (const auto& f : fmm::describe_params()) {
    if (f.key == "periodic") continue;  // the vortex solver is periodic by construction
    // 1e-5: two orders below the method's own error (the 64^3 study of bench/RESULTS.md sees no
    // change from p = 6 to 10 at 1e-4), and the single-precision GPU near field suffices.
    const std::string def = f.key == "tolerance" ? "1e-5" : f.default_value;
    t.push_back({"fmm." + f.key, f.type, def, "", f.help});
  }
  return t;
}

Params params_from(const Options& o, double nu) {
  Params p;
  p.nu = nu;
  p.init = o.choice("vortex.init", {"rbf", "direct"}) == "rbf" ? Init::rbf : Init::direct;
  p.overlap = o.real("vortex.overlap");
  if (!(p.overlap >= 0.5 && p.overlap <= 4))
    throw InputError(o.where("vortex.overlap") + " is out of range (allowed: 0.5 … 4)");
  p.field_core = o.real("vortex.field_core");
  if (!(p.field_core >= 0.5 && p.field_core <= 1))
    throw InputError(o.where("vortex.field_core") + " is out of range (allowed: 0.5 … 1)");
  p.stretching = o.choice("vortex.stretching", {"classical", "transpose"}) == "classical"
                     ? Stretching::classical
                     : Stretching::transpose;
  const long every = o.integer("vortex.reinit_every");
  if (every < 0) throw InputError(o.where("vortex.reinit_every") + " is out of range (allowed: >= 0)");
  p.reinit_every = int(every);
  p.max_core_ratio = o.real("vortex.max_core_ratio");
  if (!(p.max_core_ratio > 1))
    throw InputError(o.where("vortex.max_core_ratio") + " is out of range (allowed: > 1)");
  p.blob_cutoff = o.real("vortex.blob_cutoff");
  if (!(p.blob_cutoff >= 3 && p.blob_cutoff <= 12))
    throw InputError(o.where("vortex.blob_cutoff") + " is out of range (allowed: 3 … 12)");
  p.rbf.solver = o.choice("vortex.rbf_solver", {"fft", "cg"}) == "fft" ? RbfSolver::fft : RbfSolver::cg;
  p.rbf.tol = o.real("vortex.rbf_tol");
  if (!(p.rbf.tol > 0 && p.rbf.tol < 1))
    throw InputError(o.where("vortex.rbf_tol") + " is out of range (allowed: 0 < tol < 1)");
  const long it = o.integer("vortex.rbf_max_iter");
  if (it < 1) throw InputError(o.where("vortex.rbf_max_iter") + " is out of range (allowed: >= 1)");
  p.rbf.max_iter = int(it);
  p.rbf.symbol_floor = o.real("vortex.rbf_symbol_floor");
  if (!(p.rbf.symbol_floor > 0 && p.rbf.symbol_floor < 1))
    throw InputError(o.where("vortex.rbf_symbol_floor") + " is out of range (allowed: 0 < floor < 1)");
  p.rbf.cutoff = p.blob_cutoff;
  for (const auto& f : fmm::describe_params()) {
    if (f.key == "periodic") continue;
    const std::string key = "fmm." + f.key;
    try {
      p.fmm.set(f.key, o.text(key));
    } catch (const std::invalid_argument& e) {
      throw InputError(o.where(key) + ": " + e.what());
    }
  }
  p.fmm.periodic = true;
  try {
    p.fmm.validate();
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string("fmm: ") + e.what());
  }
  return p;
}

Solver::Solver(const Params& p, const Grid& g) : prm_(p), g_(g) {
  prm_.fmm.periodic = true;
  prm_.fmm.use_gpu = prm_.use_gpu;
  sigma0_ = prm_.overlap * g.h();
}

RbfResult Solver::set_velocity(const SpectralVector& u, double t) {
  Fft3d fft(g_.n);
  VectorField omega;
  vorticity(u, fft, omega);
  VectorField alpha;
  RbfResult r;
  if (prm_.init == Init::rbf) {
    r = rbf_strengths(omega, prm_.field_core * sigma0_, prm_.rbf, alpha);
  } else {
    const double h3 = g_.h() * g_.h() * g_.h();
    alpha = omega;
    for (auto& c : alpha.c)
      for (double& v : c) v *= h3;
  }
  p_ = lattice_particles(g_, sigma0_);
  for (std::size_t i = 0; i < p_.size(); ++i)
    for (int d = 0; d < 3; ++d) p_.alpha[i][d] = alpha.c[d][i];
  t_ = t;
  have_history_ = rhs_valid_ = false;
  since_reinit_ = 0;
  last_residual_ = r.residual;
  return r;
}

void Solver::evaluate_rhs() {
  timings_ = fmm::evaluate_self(prm_.fmm, p_.x, p_.alpha, p_.sigma, u_, grad_);
  dalpha_.resize(p_.size());
  const bool classical = prm_.stretching == Stretching::classical;
  const std::ptrdiff_t n = std::ptrdiff_t(p_.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    const Mat3& G = grad_[i];
    const Vec3& a = p_.alpha[i];
    for (int m = 0; m < 3; ++m)
      dalpha_[i][m] = classical ? G[m][0] * a[0] + G[m][1] * a[1] + G[m][2] * a[2]
                                : G[0][m] * a[0] + G[1][m] * a[1] + G[2][m] * a[2];
  }
  rhs_valid_ = true;
}

void Solver::step(double dt) {
  if (!rhs_valid_) evaluate_rhs();
  // Variable-step AB2 weights; Euler when there is no history.
  double c0 = 1.0, c1 = 0.0;
  if (have_history_) {
    const double r = dt / dt_prev_;
    c0 = 1.0 + 0.5 * r;
    c1 = -0.5 * r;
  }
  const std::ptrdiff_t n = std::ptrdiff_t(p_.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) {
      const double up = have_history_ ? u_prev_[i][d] : 0.0;
      const double ap = have_history_ ? dalpha_prev_[i][d] : 0.0;
      p_.x[i][d] += dt * (c0 * u_[i][d] + c1 * up);
      p_.alpha[i][d] += dt * (c0 * dalpha_[i][d] + c1 * ap);
    }
  std::swap(u_prev_, u_);
  std::swap(dalpha_prev_, dalpha_);
  have_history_ = true;
  rhs_valid_ = false;
  dt_prev_ = dt;
  // Core spreading: the exact solution of the heat equation for a Gaussian blob.
  double smax = 0;
#pragma omp parallel for schedule(static) reduction(max : smax)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    double& s = p_.sigma[i];
    s = std::sqrt(s * s + 2.0 * prm_.nu * dt);
    smax = std::max(smax, s);
  }
  wrap(p_);
  t_ += dt;
  ++steps_;
  ++since_reinit_;
  const double ratio = smax / sigma0_;
  if ((prm_.reinit_every > 0 && since_reinit_ >= prm_.reinit_every) || ratio > prm_.max_core_ratio)
    reinitialise();
}

RbfResult Solver::reinitialise() {
  ratio_at_reinit_ = *std::max_element(p_.sigma.begin(), p_.sigma.end()) / sigma0_;
  VectorField omega, alpha;
  vorticity_on_lattice(p_, g_, prm_.blob_cutoff, omega, prm_.use_gpu);
  const RbfResult r = rbf_strengths(omega, sigma0_, prm_.rbf, alpha);
  p_ = lattice_particles(g_, sigma0_);
  for (std::size_t i = 0; i < p_.size(); ++i)
    for (int d = 0; d < 3; ++d) p_.alpha[i][d] = alpha.c[d][i];
  have_history_ = rhs_valid_ = false;
  since_reinit_ = 0;
  ++reinits_;
  last_residual_ = r.residual;
  return r;
}

State Solver::state() const {
  State s;
  s.particles = p_;
  if (have_history_) {
    s.u_prev = u_prev_;
    s.dalpha_prev = dalpha_prev_;
  }
  s.t = t_;
  s.dt_prev = dt_prev_;
  s.last_residual = last_residual_;
  s.ratio_at_reinit = ratio_at_reinit_;
  s.steps = steps_;
  s.since_reinit = since_reinit_;
  s.reinits = reinits_;
  return s;
}

void Solver::set_state(const State& s) {
  VH_CHECK(s.particles.size() == g_.points() || !s.particles.x.empty(), "vortex state without particles");
  p_ = s.particles;
  have_history_ = !s.u_prev.empty();
  u_prev_ = s.u_prev;
  dalpha_prev_ = s.dalpha_prev;
  t_ = s.t;
  dt_prev_ = s.dt_prev;
  last_residual_ = s.last_residual;
  ratio_at_reinit_ = s.ratio_at_reinit;
  steps_ = s.steps;
  since_reinit_ = s.since_reinit;
  reinits_ = s.reinits;
  rhs_valid_ = false;
}

double Solver::max_velocity() {
  if (!rhs_valid_) evaluate_rhs();
  double m = 0;
  const std::ptrdiff_t n = std::ptrdiff_t(u_.size());
#pragma omp parallel for schedule(static) reduction(max : m)
  for (std::ptrdiff_t i = 0; i < n; ++i) m = std::max({m, std::abs(u_[i][0]), std::abs(u_[i][1]), std::abs(u_[i][2])});
  return m;
}

void Solver::velocity(SpectralVector& u) {
  if (since_reinit_ == 0 && !p_.x.empty()) {
    // Just (re)initialised: lattice particles with σ₀, whose velocity at the lattice points is
    // known exactly and costs three FFTs instead of an FMM evaluation.
    lattice_velocity(p_, g_, prm_.field_core * sigma0_, u);
    return;
  }
  std::vector<Vec3> ug;
  std::vector<Mat3> gg;
  if (prm_.field_core == 1.0) {
    fmm::evaluate_at(prm_.fmm, p_.x, p_.alpha, p_.sigma, lattice_points(g_), ug, gg);
  } else {
    // The field's core: f·σ₀ on new particles, growing with core spreading at the full rate.
    const double shrink = (1.0 - prm_.field_core * prm_.field_core) * sigma0_ * sigma0_;
    std::vector<double> sigma(p_.sigma);
    for (double& s : sigma) s = std::sqrt(s * s - shrink);
    fmm::evaluate_at(prm_.fmm, p_.x, p_.alpha, sigma, lattice_points(g_), ug, gg);
  }
  VectorField f(g_);
  for (std::size_t i = 0; i < ug.size(); ++i)
    for (int d = 0; d < 3; ++d) f.c[d][i] = ug[i][d];
  Fft3d fft(g_.n);
  fft.forward(f, u);
}

Monitors Solver::monitors() {
  Monitors m;
  m.total_alpha = total_strength(p_);
  ScalarField div;
  divergence_on_lattice(p_, g_, prm_.blob_cutoff, div, prm_.use_gpu);
  for (double v : div.v) m.max_div_omega = std::max(m.max_div_omega, std::abs(v));
  m.core_ratio = *std::max_element(p_.sigma.begin(), p_.sigma.end()) / sigma0_;
  m.reinits = reinits_;
  m.last_rbf_residual = last_residual_;
  m.core_ratio_at_reinit = ratio_at_reinit_;
  return m;
}

}  // namespace vh::vortex
