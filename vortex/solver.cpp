#include "vortex/solver.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "core/diagnostics.h"
#include "core/error.h"
#include "core/fft.h"
#include "fmm/p2p_kernel.h"
#include "vortex/blobs.h"
#include "vortex/halo.h"
#include "vortex/update_kernel.h"
#ifdef VH_HAVE_CUDA
#include "vortex/solver_gpu.h"
#endif

namespace vh::vortex {
namespace {

/// The rates ds/dt of strengths s under the gradients G (vortex/update_kernel.h).
void stretch_all(const std::vector<Mat3>& G, const std::vector<Vec3>& s, bool classical, std::vector<Vec3>& out) {
  out.resize(s.size());
  const std::ptrdiff_t n = std::ptrdiff_t(s.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) stretching(&G[i][0][0], s[i].data(), classical, out[i].data());
}

std::vector<Vec3> scaled(const std::vector<Vec3>& v, double f) {
  std::vector<Vec3> out(v.size());
  const std::ptrdiff_t n = std::ptrdiff_t(v.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) out[i][d] = v[i][d] * f;
  return out;
}

double max_norm(const VectorField& f) {
  double m = 0;
  const std::ptrdiff_t n = std::ptrdiff_t(f.c[0].size());
#pragma omp parallel for schedule(static) reduction(max : m)
  for (std::ptrdiff_t i = 0; i < n; ++i)
    m = std::max(m, std::sqrt(f.c[0][i] * f.c[0][i] + f.c[1][i] * f.c[1][i] + f.c[2][i] * f.c[2][i]));
  return m;
}

}  // namespace

std::vector<OptionSpec> option_specs() {
  std::vector<OptionSpec> t = {
      {"vortex.reinit_from", "points|blobs", "points", "",
       "reinitialise from the vorticity the particles carry (their point strengths, interpolated by the lattice "
       "RBF's cardinal functions) or from the blob field sampled at the lattice (SC09; vortex/solver.h)"},
      {"vortex.reinit_every", "int", "1", "steps", "reinitialisation every this many steps (0: only by core ratio)"},
      {"vortex.diffusion", "auto|integrating-factor|lattice|core-spreading", "auto", "",
       "viscous diffusion: the exact factor exp(-nu k^2 dt) as an integrating factor along the particle paths, "
       "half before the step's stretching and half after, without splitting (needs reinit_every = 1 and "
       "reinit_from = points), the exact factor on the lattice field at each reinitialisation (a split step), or "
       "core spreading sigma^2 += 2 nu dt; auto: integrating-factor where it can run, else lattice "
       "(vortex/solver.h)"},
      {"vortex.project", "bool", "true", "", "project the reinitialised vorticity onto solenoidal fields"},
      {"vortex.filter", "cube|spherical|none", "cube", "",
       "modes the reinitialisation removes: |k| >= filter_fraction * N_p/2 (spherical), any |k_i| >= it (cube), or "
       "none"},
      {"vortex.filter_fraction", "real", "2/3", "N_p/2",
       "the filter's cut-off: the modes kept have |k| (spherical) or every |k_i| (cube) below it"},
      {"vortex.refine", "real", "1.5", "",
       "particles per grid spacing and direction (refine^3 per grid cell; refine * N an even integer). 1.5: the "
       "default filter keeps the N^3 grid's |k_i| <= N/2 - 1, as the spectral 3/2 rule does; 1 keeps |k_i| < N/3 at "
       "0.3x the cost, enough where k_max eta >= 1 at N/3 (vortex/README.md)"},
      {"vortex.init", "rbf|direct", "rbf", "",
       "initial blob strengths: RBF solve so the blobs reproduce omega at the lattice, or alpha = omega h^3"},
      {"vortex.overlap", "real", "1.0", "h_p", "core radius sigma0 = overlap * h_p"},
      {"vortex.field_core", "real", "1.0", "sigma0",
       "reinit_from = blobs: the solver's field is that of the blobs with core field_core * sigma0; 0.7071 is the "
       "field whose energy the blob dynamics conserves (vortex/solver.h)"},
      {"vortex.stretching", "classical|transpose", "classical", "",
       "stretching (alpha.grad)u, or (grad u)^T alpha which conserves sum(alpha)"},
      {"vortex.velocity", "fmm|lattice", "fmm", "",
       "u and grad u at the particles: the periodic FMM, or FFTs of the strengths while the particles sit on the "
       "lattice (the same sum, exact; needs reinit_every = 1: an ablation of the FMM; vortex/solver.h)"},
      {"vortex.max_core_ratio", "real", "1.5", "", "reinitialise as soon as sigma/sigma0 exceeds this"},
      {"vortex.blob_cutoff", "real", "6", "sigma", "blob sums at the lattice cut off at this many sigma"},
      {"vortex.rbf_solver", "fft|cg", "fft", "",
       "reinit_from = blobs: RBF solve by FFT (exact circulant solve) or conjugate gradients"},
      {"vortex.rbf_tol", "real", "1e-3", "", "cg: relative residual to reach"},
      {"vortex.rbf_max_iter", "int", "50", "", "cg: iteration limit"},
      {"vortex.rbf_symbol_floor", "real", "1e-3", "",
       "Gaussian lattice symbol S(k)/S(0) below this is capped (limits the near-Nyquist gain of the RBF solve)"},
  };
  for (const auto& f : fmm::describe_params()) {
    if (f.key == "periodic") continue;  // the vortex solver is periodic by construction
    // 1e-5: two orders below the method's own error (the 64^3 study of bench/RESULTS.md sees no
    // change from p = 6 to 10 at 1e-4), and the single-precision GPU near field suffices.
    // m2l fft: the particle lattice's tree is complete, and its uniform levels by FFTs took the
    // 256^3 step from 0.636 to 0.468 s on an H200, u as accurate (bench/RESULTS.md, 2026-11-29
    // "the uniform levels' M2L by FFTs"); the CPU path ignores it.
    const std::string def = f.key == "tolerance" ? "1e-5" : f.key == "m2l" ? "fft" : f.default_value;
    t.push_back({"fmm." + f.key, f.type, def, "", f.help});
  }
  return t;
}

Params params_from(const Options& o, double nu) {
  Params p;
  p.nu = nu;
  p.reinit_from = o.choice("vortex.reinit_from", {"points", "blobs"}) == "points" ? ReinitFrom::points : ReinitFrom::blobs;
  const std::string diffusion =
      o.choice("vortex.diffusion", {"auto", "integrating-factor", "lattice", "core-spreading"});  // auto: below
  p.project = o.boolean("vortex.project");
  const std::string filter = o.choice("vortex.filter", {"cube", "spherical", "none"});
  p.filter = filter == "none" ? Filter::none : filter == "cube" ? Filter::cube : Filter::spherical;
  p.filter_fraction = o.real("vortex.filter_fraction");
  if (!(p.filter_fraction > 0 && p.filter_fraction <= std::sqrt(3.0)))
    throw InputError(o.where("vortex.filter_fraction") + " is out of range (allowed: 0 < fraction <= sqrt(3))");
  p.refine = o.real("vortex.refine");
  if (!(p.refine >= 1 && p.refine <= 8)) throw InputError(o.where("vortex.refine") + " is out of range (allowed: 1 … 8)");
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
  p.velocity = o.choice("vortex.velocity", {"fmm", "lattice"}) == "lattice" ? Velocity::lattice : Velocity::fmm;
  if (p.velocity == Velocity::lattice && p.reinit_every != 1)
    throw InputError(o.where("vortex.velocity") + " = lattice needs vortex.reinit_every = 1 (the particles on the "
                     "lattice at every evaluation; reinit_every = " + std::to_string(every) + " needs velocity = fmm)");
  p.diffusion = diffusion == "auto"                 ? automatic_diffusion(p)
                : diffusion == "integrating-factor" ? Diffusion::integrating_factor
                : diffusion == "lattice"            ? Diffusion::lattice
                                                    : Diffusion::core_spreading;
  if (const std::string why = diffusion_conflict(p); !why.empty()) throw InputError(o.where("vortex.diffusion") + why);
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

std::string diffusion_conflict(const Params& p) {
  if (p.diffusion != Diffusion::integrating_factor || (p.reinit_every == 1 && p.reinit_from == ReinitFrom::points))
    return "";
  return " = integrating-factor needs vortex.reinit_every = 1 and vortex.reinit_from = points (the viscous "
         "increment of the lattice field at every step's start; reinit_every = " + std::to_string(p.reinit_every) +
         (p.reinit_from == ReinitFrom::points ? "" : ", reinit_from = blobs") +
         " needs diffusion = lattice or core-spreading)";
}

const char* diffusion_name(Diffusion d) {
  return d == Diffusion::integrating_factor ? "integrating-factor"
         : d == Diffusion::lattice          ? "lattice"
                                            : "core-spreading";
}

Diffusion automatic_diffusion(const Params& p) {
  Params q = p;
  q.diffusion = Diffusion::integrating_factor;
  return diffusion_conflict(q).empty() ? Diffusion::integrating_factor : Diffusion::lattice;
}

namespace {
/// refine·n when it is an even integer >= 8, else 0.
int lattice_points_or_zero(double refine, int n) {
  const double m = refine * n;
  const long r = std::lround(m);
  return std::abs(m - double(r)) > 1e-9 * m || r % 2 != 0 || r < 8 ? 0 : int(r);
}
std::string format_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}
}  // namespace

int lattice_points_per_direction(double refine, int n) {
  if (const int r = lattice_points_or_zero(refine, n)) return r;
  // Name the refines that do suit this n (the default 1.5 needs n divisible by 4).
  std::string suits;
  for (const double r : {1.0, 1.5, 2.0})
    if (lattice_points_or_zero(r, n)) suits += (suits.empty() ? "" : ", ") + format_number(r);
  throw InputError("vortex.refine = " + format_number(refine) + " with domain.n = " + std::to_string(n) +
                   " gives a particle lattice of " + format_number(refine * n) +
                   " points per direction (allowed: refine * n an even integer >= 8" +
                   (suits.empty() ? std::string() : "; for this n e.g. refine = " + suits) + ")");
}

double resolved_kmax(const Params& p, int n) {
  const Grid lattice{lattice_points_per_direction(p.refine, n)};
  double k = std::min(Grid{n}.kmax(), lattice.kmax());
  if (p.filter != Filter::none) k = std::min(k, p.filter_fraction * 0.5 * lattice.n);  // Lattice::filter's cut-off
  return k;
}

std::unique_ptr<SolverInterface> make_solver(const Params& p, const Grid& g) {
  return make_solver(p, Slab::whole_grid(g));
}

std::unique_ptr<SolverInterface> make_solver(const Params& p, const Slab& grid_slab) {
#ifdef VH_HAVE_CUDA
  if (p.use_gpu && p.reinit_from == ReinitFrom::points) return std::make_unique<GpuSolver>(p, grid_slab);
#endif
  return std::make_unique<Solver>(p, grid_slab);
}

void keep_carried_modes(const Params& p, SpectralSlab& u) {
  const Grid& g = u.slab.grid;
  const int np = lattice_points_per_direction(p.refine, g.n), half = std::min(g.n, np) / 2;
  const double kc = p.filter_fraction * 0.5 * np;
  for_each_mode(u.slab, [&](std::size_t m, int ix, int iy, int iz) {
    const int ky = g.wavenumber(iy), kz = g.wavenumber(iz);
    if (ix < half && std::abs(ky) < half && std::abs(kz) < half && kernel::kept(p.filter, kc, ix, ky, kz)) return;
    for (auto& a : u.c) a[m] = 0;
  });
}

Slab lattice_slab(const Params& p, int n, const Comm& comm) {
  const Grid gp{lattice_points_per_direction(p.refine, n)};
  // The ky the reinitialisation keeps first (core/slab.h orders them so that they balance).
  int kmax = gp.n / 2 - 1;
  if (p.filter != Filter::none) kmax = std::min(kmax, kernel::largest_kept(p.filter_fraction * 0.5 * gp.n));
  return Slab::make(gp, kmax, comm);
}

Solver::Solver(const Params& p, const Grid& g) : Solver(p, Slab::whole_grid(g)) {}

Solver::Solver(const Params& p, const Slab& grid_slab)
    : prm_(p),
      g_(grid_slab.grid),
      gp_{lattice_points_per_direction(p.refine, grid_slab.grid.n)},
      gs_(grid_slab),
      ls_(lattice_slab(p, grid_slab.grid.n, grid_slab.comm)),
      comm_(grid_slab.comm) {
  if (!gs_.whole()) {
    if (!points())
      throw InputError("vortex.reinit_from = blobs on " + std::to_string(comm_.size()) +
                       " ranks: the seeds' scheme runs on one rank (allowed on R > 1 ranks: points)");
    if (prm_.use_gpu)  // make_solver gives GpuSolver there
      throw std::invalid_argument("vortex::Solver on several ranks runs on the CPU (GpuSolver on their GPUs)");
  }
  if (const std::string why = diffusion_conflict(prm_); !why.empty()) throw InputError("vortex.diffusion" + why);
  prm_.fmm.periodic = true;
  prm_.fmm.use_gpu = prm_.use_gpu;
  sigma0_ = prm_.overlap * gp_.h();
  lattice_ = std::make_unique<Lattice>(ls_, sigma0_, prm_.rbf.symbol_floor, prm_.blob_cutoff, prm_.use_gpu);
}

Solver::~Solver() = default;

RbfResult Solver::set_velocity(const SpectralVector& u, double t) { return set_velocity(SpectralSlab::whole(u), t); }

RbfResult Solver::set_velocity(const SpectralSlab& u, double t) {
  SpectralSlab up(ls_);
  resample(u, up);  // the modes |k_i| < N/2, on any rank count and refine
  lattice_->filter(up, prm_.filter, prm_.filter_fraction);  // keep_carried_modes
  VectorField omega;
  vorticity(up, lattice_->fft(), omega);
  p_ = lattice_particles(gp_, sigma0_, ls_.z0, ls_.nz);
  RbfResult r;
  const double V = lattice_->volume();
  if (points()) {
    SpectralSlab w(ls_);
    for (int d = 0; d < 3; ++d) lattice_->fft().forward(omega.c[d].data(), w.c[d].data());
    lattice_->values(w, false, V, p_.gamma);
    if (prm_.init == Init::rbf) lattice_->values(w, true, 1.0, p_.alpha);
    else p_.alpha = p_.gamma;
  } else if (prm_.init == Init::rbf) {
    VectorField alpha;
    r = rbf_strengths(omega, prm_.field_core * sigma0_, prm_.rbf, alpha);
    for (std::size_t i = 0; i < p_.size(); ++i)
      for (int d = 0; d < 3; ++d) p_.alpha[i][d] = alpha.c[d][i];
  } else {
    for (std::size_t i = 0; i < p_.size(); ++i)
      for (int d = 0; d < 3; ++d) p_.alpha[i][d] = omega.c[d][i] * V;
  }
  t_ = t_reinit_ = t;
  have_history_ = rhs_valid_ = false;
  u_prev_.clear(), dalpha_prev_.clear(), dgamma_prev_.clear();
  since_reinit_ = 0;
  last_residual_ = r.residual;
  return r;
}

void Solver::evaluate_rhs() {
  // A state that has overflowed is the driver's to report (max|u| not finite: exit 3 with a
  // checkpoint), not the FMM's bad input.  Every rank takes the same way (the FMM is collective).
  bool finite = true;
  const std::ptrdiff_t np = std::ptrdiff_t(p_.size());
#pragma omp parallel for schedule(static) reduction(&& : finite)
  for (std::ptrdiff_t i = 0; i < np; ++i)
    for (int d = 0; d < 3; ++d) finite = finite && std::isfinite(p_.x[i][d]) && std::isfinite(p_.alpha[i][d]);
  if (comm_.any(!finite)) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    u_.assign(p_.size(), Vec3{nan, nan, nan});
    rhs_valid_ = true;
    return;
  }
  if (prm_.velocity == Velocity::lattice && since_reinit_ == 0) {
    lattice_rhs();
    timings_ = fmm::Timings{};
  } else {
    timings_ = fmm::evaluate_self(prm_.fmm, comm_, p_.x, p_.alpha, p_.sigma, u_, grad_);
  }
  const bool classical = prm_.stretching == Stretching::classical;
  stretch_all(grad_, p_.alpha, classical, dalpha_);
  if (points()) stretch_all(grad_, p_.gamma, classical, dgamma_);
  rhs_valid_ = true;
}

void Solver::first_viscous_half(double dt) {
  // On the lattice (reinit_every = 1; set_state refuses particles off it): the change half the
  // step's viscous factor makes to the field the point strengths carry, exactly, as point (× V)
  // and blob strengths.
  SpectralSlab w;
  lattice_->modes(p_.gamma, 1.0 / lattice_->volume(), w);
  lattice_->diffusion_increment(w, 0.5 * prm_.nu * dt);
  lattice_->values(w, false, lattice_->volume(), visc_g_);
  lattice_->values(w, true, 1.0, visc_a_);
}

void Solver::lattice_rhs() {
  // The particles sit on this rank's lattice points, in its order, with σ₀.
  SpectralSlab c, f;
  lattice_->modes(p_.alpha, 1.0 / lattice_->volume(), c);
  const std::size_t n = p_.size();
  u_.resize(n);
  grad_.resize(n);
  VectorField v;
  for (int what = 0; what < 4; ++what) {
    lattice_->blob_velocity(c, sigma0_, what, f);
    lattice_->points(f, v);
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i)
      for (int m = 0; m < 3; ++m) (what == 0 ? u_[i][m] : grad_[i][m][what - 1]) = v.c[m][i];
  }
  // Less each particle's own blob, as evaluate_self leaves it out: G(0) ε·α in ∇u, nothing in u.
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i) {
    const double r[3] = {0, 0, 0};
    double u0[3] = {0, 0, 0}, g0[3][3] = {};
    fmm::p2p_pair(r, p_.alpha[i].data(), p_.sigma[i], u0, g0);
    for (int m = 0; m < 3; ++m)
      for (int k = 0; k < 3; ++k) grad_[i][m][k] -= g0[m][k];
  }
}

void Solver::step(double dt) {
  t_reinit_ -= step_lead(prm_, dt, dt_prev_, have_history_);
  if (!rhs_valid_) evaluate_rhs();
  const bool integrating_factor = prm_.diffusion == Diffusion::integrating_factor;
  if (integrating_factor) first_viscous_half(dt);
  const Ab2Weights w = ab2_weights(dt, dt_prev_, have_history_);
  const bool with_gamma = points();
  const std::ptrdiff_t n = std::ptrdiff_t(p_.size());
  static const Vec3 zero{0, 0, 0};
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    ab2_update(p_.x[i].data(), u_[i].data(), (have_history_ ? u_prev_[i] : zero).data(), dt, w);
    ab2_update(p_.alpha[i].data(), dalpha_[i].data(), (have_history_ ? dalpha_prev_[i] : zero).data(), dt, w);
    if (with_gamma)
      ab2_update(p_.gamma[i].data(), dgamma_[i].data(), (have_history_ ? dgamma_prev_[i] : zero).data(), dt, w);
    if (integrating_factor) {  // its first half, formed above
      add_increment(p_.gamma[i].data(), visc_g_[i].data());
      add_increment(p_.alpha[i].data(), visc_a_[i].data());
    }
  }
  std::swap(u_prev_, u_);
  std::swap(dalpha_prev_, dalpha_);
  std::swap(dgamma_prev_, dgamma_);
  have_history_ = true;
  rhs_valid_ = false;
  dt_prev_ = dt;
  double smax = sigma0_;
  if (prm_.diffusion == Diffusion::core_spreading) {
    // Core spreading: the exact solution of the heat equation for a Gaussian blob.
#pragma omp parallel for schedule(static) reduction(max : smax)
    for (std::ptrdiff_t i = 0; i < n; ++i) {
      double& s = p_.sigma[i];
      s = spread_core(s, prm_.nu, dt);
      smax = std::max(smax, s);
    }
    smax = comm_.max(smax);  // every rank decides alike
  }
  wrap(p_);
  t_ += dt;
  ++steps_;
  ++since_reinit_;
  const double ratio = smax / sigma0_;
  if ((prm_.reinit_every > 0 && since_reinit_ >= prm_.reinit_every) || ratio > prm_.max_core_ratio)
    reinitialise();
  else if (!ls_.whole())  // moved particles go to the rank of their lattice plane, with their history
    migrated_ += migrate(ls_, p_, {&u_prev_, &dalpha_prev_, &dgamma_prev_});
}

namespace {
/// Every step reinitialises from the points with the exact viscous factor: the Lie splitting whose
/// ends output_nu_tau() and step_lead() make Strang's.
bool strang_ends(const Params& p) {
  return p.reinit_from == ReinitFrom::points && p.diffusion == Diffusion::lattice && p.reinit_every == 1;
}
}  // namespace

double pending_nu_tau(const Params& p, double t, double t_reinit) {
  return p.diffusion == Diffusion::lattice ? p.nu * (t - t_reinit) : 0.0;
}

double arrival_nu_tau(const Params& p, double t, double t_reinit) {
  return p.diffusion == Diffusion::integrating_factor ? 0.5 * p.nu * (t - t_reinit) : pending_nu_tau(p, t, t_reinit);
}

double output_nu_tau(const Params& p, double t, double t_reinit, double dt_prev) {
  if (strang_ends(p) && t == t_reinit) return p.nu * (-0.5 * dt_prev);  // right after a reinitialisation
  return pending_nu_tau(p, t, t_reinit);
}

double step_lead(const Params& p, double dt, double dt_prev, bool history) {
  return strang_ends(p) ? 0.5 * (dt - (history ? dt_prev : 0.0)) : 0.0;
}

double Solver::max_sigma() const {
  double m = 0;
  for (double s : p_.sigma) m = std::max(m, s);
  return comm_.max(m);
}

void Solver::points_field(SpectralSlab& w) {
  if (since_reinit_ == 0) {
    lattice_->modes(p_.gamma, 1.0 / lattice_->volume(), w);  // on the lattice: exact, no sums
  } else {
    const Halo halo(ls_, p_.x, p_.sigma, prm_.blob_cutoff);
    std::vector<Vec3> xb, gb;
    std::vector<double> sb;
    lattice_->field(halo.gather(p_.x, xb), halo.gather(p_.gamma, gb), halo.gather(p_.sigma, sb), w);
  }
  lattice_->diffuse(w, output_nu_tau(prm_, t_, t_reinit_, dt_prev_));
}

void Solver::spectral_steps(SpectralSlab& w, double nu_tau, bool record) {
  lattice_->diffuse(w, nu_tau);
  if (prm_.project) {
    const double removed = lattice_->project(w);
    if (record) div_removed_ = removed;
  }
  lattice_->filter(w, prm_.filter, prm_.filter_fraction);
}

RbfResult Solver::reinitialise() {
  ratio_at_reinit_ = max_sigma() / sigma0_;
  const double V = lattice_->volume();
  RbfResult r;
  if (points()) {
    SpectralSlab w, uh, wh;
    const double nu_tau = pending_nu_tau(prm_, t_, t_reinit_);
    // The particles whose stencils reach this rank's planes (one rank: its own, no copies).
    const Halo halo(ls_, p_.x, p_.sigma, prm_.blob_cutoff);
    ghosts_ = halo.received();
    std::vector<Vec3> xb, qb;
    std::vector<double> sb;
    const std::vector<Vec3>& x = halo.gather(p_.x, xb);
    const std::vector<double>& sigma = halo.gather(p_.sigma, sb);
    lattice_->field(x, halo.gather(p_.gamma, qb), sigma, w);
    spectral_steps(w, arrival_nu_tau(prm_, t_, t_reinit_), true);
    if (have_history_) {
      // fⁿ⁻¹ carried by the particles to where they are now: the history along the paths that
      // end at the new lattice points. Not projected: neither the stretching rate (ω·∇)u nor
      // u at the departure points is solenoidal, and AB2 needs them as they are. The rate takes
      // the viscous factor of the step, as AB2 with an integrating factor does (its history
      // term is exp(−ν|k|²Δt) fⁿ⁻¹); without it the splitting is first order.
      lattice_->field(x, halo.gather(scaled(u_prev_, V), qb), sigma, uh);
      lattice_->filter(uh, prm_.filter, prm_.filter_fraction);
      lattice_->field(x, halo.gather(dgamma_prev_, qb), sigma, wh);
      lattice_->diffuse(wh, nu_tau);
      lattice_->filter(wh, prm_.filter, prm_.filter_fraction);
    }
    p_ = lattice_particles(gp_, sigma0_, ls_.z0, ls_.nz);
    lattice_->values(w, false, V, p_.gamma);
    lattice_->values(w, true, 1.0, p_.alpha);
    if (have_history_) {
      lattice_->values(uh, false, 1.0, u_prev_);
      lattice_->values(wh, false, V, dgamma_prev_);
      lattice_->values(wh, true, 1.0, dalpha_prev_);
    }
  } else {
    VectorField omega, alpha;
    vorticity_on_lattice(p_, gp_, prm_.blob_cutoff, omega, prm_.use_gpu);
    const double nu_tau = pending_nu_tau(prm_, t_, t_reinit_);
    if (prm_.project || nu_tau > 0 || prm_.filter != Filter::none) {
      SpectralSlab w(ls_);
      for (int d = 0; d < 3; ++d) lattice_->fft().forward(omega.c[d].data(), w.c[d].data());
      spectral_steps(w, nu_tau, true);
      lattice_->points(w, omega);
    }
    r = rbf_strengths(omega, sigma0_, prm_.rbf, alpha);
    p_ = lattice_particles(gp_, sigma0_);
    for (std::size_t i = 0; i < p_.size(); ++i)
      for (int d = 0; d < 3; ++d) p_.alpha[i][d] = alpha.c[d][i];
    have_history_ = false;  // the seeds' scheme: Euler after every reinitialisation
    u_prev_.clear(), dalpha_prev_.clear(), dgamma_prev_.clear();
  }
  rhs_valid_ = false;
  since_reinit_ = 0;
  t_reinit_ = t_;
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
    s.dgamma_prev = dgamma_prev_;
  }
  s.t = t_;
  s.t_reinit = t_reinit_;
  s.dt_prev = dt_prev_;
  s.last_residual = last_residual_;
  s.ratio_at_reinit = ratio_at_reinit_;
  s.div_removed = div_removed_;
  s.steps = steps_;
  s.since_reinit = since_reinit_;
  s.reinits = reinits_;
  return s;
}

void check_state_scheme(const Params& p, const State& s) {
  if (p.diffusion == Diffusion::integrating_factor && s.since_reinit != 0)
    throw InputError("vortex state: " + std::to_string(s.since_reinit) + " steps since its last reinitialisation "
                     "(particles off the lattice); vortex.diffusion = integrating-factor continues only a state on the "
                     "lattice (allowed: diffusion = lattice or core-spreading for this checkpoint)");
}

void Solver::set_state(const State& s) {
  check_state_scheme(prm_, s);
  VH_CHECK(s.particles.size() == gp_.points() || !s.particles.x.empty(), "vortex state without particles");
  p_ = s.particles;
  if (p_.gamma.size() != p_.size()) p_.gamma.assign(p_.size(), Vec3{0, 0, 0});
  have_history_ = !s.u_prev.empty();
  u_prev_ = s.u_prev;
  dalpha_prev_ = s.dalpha_prev;
  dgamma_prev_ = s.dgamma_prev;
  if (have_history_ && dgamma_prev_.size() != p_.size()) dgamma_prev_.assign(p_.size(), Vec3{0, 0, 0});
  t_ = s.t;
  t_reinit_ = s.t_reinit;
  dt_prev_ = s.dt_prev;
  last_residual_ = s.last_residual;
  ratio_at_reinit_ = s.ratio_at_reinit;
  div_removed_ = s.div_removed;
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
  return comm_.max(m);
}

double Solver::max_gradient() {
  if (!rhs_valid_) evaluate_rhs();
  double m = 0;
  const std::ptrdiff_t n = std::ptrdiff_t(grad_.size());
#pragma omp parallel for schedule(static) reduction(max : m)
  for (std::ptrdiff_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) m = std::max(m, std::abs(grad_[i][a][b]));
  return comm_.max(m);
}

void Solver::velocity(SpectralVector& u) {
  SpectralSlab s(Slab::whole_grid(g_));
  velocity(s);
  u = std::move(s).to_vector();
}

void Solver::velocity(SpectralSlab& u) {
  SpectralSlab up(ls_);
  if (points()) {
    SpectralSlab w;
    points_field(w);
    lattice_->biot_savart(w, up);
  } else if (since_reinit_ == 0 && !p_.x.empty()) {
    // Just (re)initialised: lattice particles, whose velocity at the lattice points is known
    // exactly and costs three FFTs instead of an FMM evaluation.
    SpectralSlab c;
    lattice_->modes(p_.alpha, 1.0 / lattice_->volume(), c);
    lattice_->blob_velocity(c, prm_.field_core * sigma0_, 0, up);
  } else {
    std::vector<Vec3> ug;
    std::vector<Mat3> gg;
    if (prm_.field_core == 1.0) {
      fmm::evaluate_at(prm_.fmm, p_.x, p_.alpha, p_.sigma, lattice_points(gp_), ug, gg);
    } else {
      // The field's core: f·σ₀ on new particles, growing with core spreading at the full rate.
      const double shrink = (1.0 - prm_.field_core * prm_.field_core) * sigma0_ * sigma0_;
      std::vector<double> sigma(p_.sigma);
      for (double& s : sigma) s = std::sqrt(s * s - shrink);
      fmm::evaluate_at(prm_.fmm, p_.x, p_.alpha, sigma, lattice_points(gp_), ug, gg);
    }
    lattice_->modes(ug, 1.0, up);
  }
  // To the grid's modes |k_i| < N/2 (resample), also where the grid is the lattice (refine 1): the
  // particles' sums off the lattice fill the lattice's modes at N/2 too, which R ranks' resampling
  // between the slab layouts never carried (1e-2 of the velocity in test_vortex_mpi's ten steps).
  if (u.slab.grid.n != g_.n || u.slab.ranks() != gs_.ranks()) u = SpectralSlab(gs_);
  resample(up, u);
}

Monitors Solver::monitors() {
  Monitors m;
  const Vec3 sum = total_strength(points() ? p_.gamma : p_.alpha);
  std::vector<double> sums(sum.begin(), sum.end());
  comm_.sum(sums);
  m.total_strength = {sums[0], sums[1], sums[2]};
  ScalarField div;
  VectorField omega;
  if (ls_.whole()) {
    divergence_on_lattice(p_, gp_, prm_.blob_cutoff, div, prm_.use_gpu);
  } else {
    const Halo halo(ls_, p_.x, p_.sigma, prm_.blob_cutoff);
    std::vector<Vec3> xb, ab;
    std::vector<double> sb;
    divergence_on_lattice(halo.gather(p_.x, xb), halo.gather(p_.alpha, ab), halo.gather(p_.sigma, sb), gp_,
                          prm_.blob_cutoff, ls_.z0, ls_.nz, div);
  }
  for (double v : div.v) m.max_div_omega = std::max(m.max_div_omega, std::abs(v));
  m.max_div_omega = comm_.max(m.max_div_omega);
  if (points()) {
    SpectralSlab w;
    points_field(w);
    lattice_->points(w, omega);
  } else {
    vorticity_on_lattice(p_, gp_, prm_.blob_cutoff, omega, prm_.use_gpu);
  }
  m.max_omega = comm_.max(max_norm(omega));
  m.div_removed = div_removed_;
  m.core_ratio = max_sigma() / sigma0_;
  m.reinits = reinits_;
  m.last_rbf_residual = last_residual_;
  m.core_ratio_at_reinit = ratio_at_reinit_;
  return m;
}

}  // namespace vh::vortex
