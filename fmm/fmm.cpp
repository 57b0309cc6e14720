#include "fmm/fmm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <exception>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "base/comm.h"
#include "fmm/expansions.h"
#include "fmm/let.h"
#include "fmm/p2p.h"
#ifdef VH_FMM_HAVE_CUDA
#include "fmm/far_gpu.h"
#include "fmm/p2p_gpu.h"
#include "fmm/particles_gpu.h"
#include "fmm/traverse_gpu.h"
#endif
#include "fmm/partition.h"
#include "fmm/periodic.h"
#include "fmm/profile.h"
#include "fmm/traverse.h"
#include "fmm/tree.h"

namespace vh::fmm {

void Params::validate() const {
  auto fail = [](const std::string& m) { throw std::invalid_argument("fmm: " + m); };
  if (p != -1 && (p < 1 || p > kMaxOrder)) fail("p = " + std::to_string(p) + " must be in [1, 30] or auto");
  if (ncrit != -1 && ncrit < 1) fail("ncrit = " + std::to_string(ncrit) + " must be >= 1 or auto");
  if (theta != -1 && !(theta > 0 && theta < 1)) fail("theta = " + std::to_string(theta) + " must be in (0, 1) or auto");
  if (images < 0 || images > 12) fail("images = " + std::to_string(images) + " must be in [0, 12]");
  if (!(tolerance > 0 && tolerance <= 0.1)) fail("tolerance = " + std::to_string(tolerance) + " must be in (0, 0.1]");
  if (p2p_max_pairs < -1) fail("p2p_max_pairs = " + std::to_string(p2p_max_pairs) + " must be >= -1");
  if (precision != "single" && precision != "double" && precision != "auto")
    fail("precision = '" + precision + "' must be single, double or auto");
  if (m2l != "lists" && m2l != "fft") fail("m2l = '" + m2l + "' must be lists or fft");
#ifndef VH_FMM_HAVE_CUDA
  if (use_gpu) fail("use_gpu: this build has no CUDA (configure with -DVH_ENABLE_CUDA=ON for the GPU back end)");
#endif
  if (use_gpu && p > 20) fail("p = " + std::to_string(p) + ": the GPU back end takes p <= 20");
}

void Params::set(const std::string& key, const std::string& value) {
  auto bad = [&]() { throw std::invalid_argument("fmm." + key + ": cannot parse '" + value + "'"); };
  auto to_int = [&]() {
    std::size_t pos = 0;
    int v = 0;
    try { v = std::stoi(value, &pos); } catch (const std::exception&) { bad(); }
    if (pos != value.size()) bad();
    return v;
  };
  auto to_double = [&]() {
    std::size_t pos = 0;
    double v = 0;
    try { v = std::stod(value, &pos); } catch (const std::exception&) { bad(); }
    if (pos != value.size()) bad();
    return v;
  };
  if (key == "p") p = value == "auto" ? -1 : to_int();
  else if (key == "ncrit") ncrit = value == "auto" ? -1 : to_int();
  else if (key == "theta") theta = value == "auto" ? -1 : to_double();
  else if (key == "images") images = to_int();
  else if (key == "tolerance") tolerance = to_double();
  else if (key == "p2p_max_pairs") p2p_max_pairs = to_int();
  else if (key == "precision") {
    if (value != "single" && value != "double" && value != "auto") bad();
    precision = value;
  }
  else if (key == "m2l") {
    if (value != "lists" && value != "fft") bad();
    m2l = value;
  }
  else if (key == "periodic") {
    if (value == "true" || value == "1") periodic = true;
    else if (value == "false" || value == "0") periodic = false;
    else bad();
  } else {
    throw std::invalid_argument("fmm: unknown parameter '" + key + "'");
  }
}

// Measured on an NVIDIA H200 (2026-11-22, bench/RESULTS.md "fmm.tolerance table, off the
// lattice"): 64^3 particles, periodic, two vorticity fields (a turbulent k^4 exp one and a
// flat-spectrum one, --white, the harder), each on the lattice (error against the exact
// spectral sum) and moved off it by up to +-0.05 h and +-0.5 h (against a tight FMM, theta
// 0.25, p 16, double, itself within 4e-9 of the spectral sum), as the vortex solver's particles
// are between reinitialisations. Each row is the setting with the fastest GPU stages whose
// error is below the row's tolerance in all six cases (err_u: the worst). On the lattice alone
// theta 0.6, p 10 and theta 0.5, p 10 meet 1e-4 and 1e-5; off it they do not (1.9e-4, 4.0e-5).
// ncrit 128: the lattice's 4^3 leaves (64 points) stay leaves when points cross leaf faces (up
// to 5^3 = 125), where ncrit 64 splits half of them (2^24: 1.6 s against 0.86 s an evaluation).
// Below 1e-5 the single-precision near field floors at ~2e-6, so the last row is double.
const std::vector<AutoSetting>& auto_settings() {
  static const std::vector<AutoSetting> table = {
      {1e-3, 0.6, 8, 128, "single", 7.8e-4},
      {1e-4, 0.6, 12, 128, "single", 5.2e-5},
      {1e-5, 0.5, 12, 128, "single", 8.8e-6},
      {1e-6, 0.4, 14, 128, "double", 6.3e-8},
  };
  return table;
}

Params Params::resolved() const {
  const auto& t = auto_settings();
  const AutoSetting* row = &t.back();
  for (const auto& r : t)
    if (r.tolerance <= tolerance) {
      row = &r;
      break;
    }
  Params r = *this;
  if (r.p == -1) r.p = row->p;
  if (r.ncrit == -1) r.ncrit = row->ncrit;
  if (r.theta == -1) r.theta = row->theta;
  if (r.precision == "auto") r.precision = row->precision;
  return r;
}

std::vector<ParamInfo> describe_params() {
  const Params d;
  auto str = [](double v) { std::ostringstream s; s << v; return s.str(); };
  auto or_auto = [](const std::string& v) { return v == "-1" ? std::string("auto") : v; };
  return {
      {"p", "int|auto", or_auto(std::to_string(d.p)),
       "expansion order of the solid harmonics (1..30, at most 20 on the GPU); auto: from fmm.tolerance"},
      {"ncrit", "int|auto", or_auto(std::to_string(d.ncrit)),
       "maximum number of particles in a leaf cell; auto: from fmm.tolerance"},
      {"theta", "double|auto", or_auto(str(d.theta)),
       "multipole acceptance: (R_A + R_B) < theta * distance, in (0, 1); auto: from fmm.tolerance"},
      {"images", "int", std::to_string(d.images),
       "periodic far-lattice levels; each triples the summed lattice width (0..12)"},
      {"tolerance", "double", str(d.tolerance),
       "target relative L2 error of u: sets the auto p, ncrit, theta and precision (measured table, "
       "fmm/README.md), "
       "and the far field is used only where 1 - g(rho) is below it"},
      {"periodic", "bool", d.periodic ? "true" : "false",
       "periodic in [0, 2 pi)^3 (positions wrapped in) or free space"},
      {"p2p_max_pairs", "int", std::to_string(d.p2p_max_pairs),
       "accepted pairs with at most this many particle pairs (leaf target) are summed directly; -1: (p+1)^4/55"},
      {"precision", "single|double|auto", d.precision,
       "GPU back end: working precision of the near field (P2P) and of the M2L, auto: from fmm.tolerance; "
       "the CPU path, the other far-field stages and the expansions are double throughout"},
      {"m2l", "lists|fft", d.m2l,
       "GPU evaluator, periodic: fft takes a complete tree (every level full, every leaf on the last: "
       "the vortex solver's lattice) by its uniform levels, the M2L of levels 2 and below by FFTs in "
       "double precision (fmm/README.md); other trees, and lists, by the traversal's lists"},
  };
}

namespace {

// The periodic box [0, kBoxLength)³ as the trees' cube.
void periodic_cube(Vec3& center, double& half) {
  center = {0.5 * kBoxLength, 0.5 * kBoxLength, 0.5 * kBoxLength};
  half = 0.5 * kBoxLength;
}

using clock_type = std::chrono::steady_clock;
double seconds(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

bool finite3(const Vec3& v) { return std::isfinite(v[0]) && std::isfinite(v[1]) && std::isfinite(v[2]); }

void check_inputs(const std::vector<Vec3>& x, const std::vector<Vec3>& alpha, const std::vector<double>& sigma,
                  const std::vector<Vec3>* targets) {
  if (alpha.size() != x.size() || sigma.size() != x.size())
    throw std::invalid_argument("fmm: x, alpha and sigma must have the same length");
  // The first bad entry of each kind, found by all threads (serially, 0.2 s at 2^24 sources).
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(x.size());
  const std::ptrdiff_t nt = targets ? static_cast<std::ptrdiff_t>(targets->size()) : 0;
  std::ptrdiff_t bad_x = n, bad_a = n, bad_s = n, bad_t = nt;
#pragma omp parallel for schedule(static) reduction(min : bad_x, bad_a, bad_s)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    if (!finite3(x[i])) bad_x = std::min(bad_x, i);
    if (!finite3(alpha[i])) bad_a = std::min(bad_a, i);
    if (!(sigma[i] > 0) || !std::isfinite(sigma[i])) bad_s = std::min(bad_s, i);
  }
#pragma omp parallel for schedule(static) reduction(min : bad_t)
  for (std::ptrdiff_t i = 0; i < nt; ++i)
    if (!finite3((*targets)[i])) bad_t = std::min(bad_t, i);
  // The serial loop's message: the lowest index with any fault, position before strength
  // before core radius.
  const std::ptrdiff_t first = std::min({bad_x, bad_a, bad_s});
  if (first < n) {
    if (bad_x == first) throw std::invalid_argument("fmm: source position " + std::to_string(first) + " is not finite");
    if (bad_a == first) throw std::invalid_argument("fmm: strength " + std::to_string(first) + " is not finite");
    throw std::invalid_argument("fmm: core radius sigma[" + std::to_string(first) + "] must be > 0 and finite");
  }
  if (bad_t < nt) throw std::invalid_argument("fmm: target position " + std::to_string(bad_t) + " is not finite");
}

// P2M at the leaves, M2M level by level: the multipoles of every cell of src (3 ncoef(p) each),
// from the strengths in sorted order.
std::vector<cplx> upward(int p, const Tree& src, const std::vector<Vec3>& as) {
  const int nc = ncoef(p), ncs = static_cast<int>(src.cells.size());
  std::vector<cplx> M(static_cast<std::size_t>(ncs) * 3 * nc);
#pragma omp parallel for schedule(dynamic, 8)
  for (int c = 0; c < ncs; ++c) {
    const Cell& C = src.cells[c];
    if (!C.leaf()) continue;
    for (int i = C.begin; i < C.end; ++i)
      p2m(p, {src.x[i][0] - C.center[0], src.x[i][1] - C.center[1], src.x[i][2] - C.center[2]}, as[i],
          &M[std::size_t(c) * 3 * nc]);
  }
  for (int lev = static_cast<int>(src.levels.size()) - 2; lev >= 0; --lev) {
    const auto& cells = src.levels[lev];
#pragma omp parallel for schedule(dynamic, 4)
    for (int k = 0; k < static_cast<int>(cells.size()); ++k) {
      const int c = cells[k];
      const Cell& C = src.cells[c];
      for (int ch = C.child; ch < C.child + C.nchild; ++ch) {
        const Cell& H = src.cells[ch];
        m2m(p, {H.center[0] - C.center[0], H.center[1] - C.center[1], H.center[2] - C.center[2]},
            &M[std::size_t(ch) * 3 * nc], &M[std::size_t(c) * 3 * nc]);
      }
    }
  }
  return M;
}

// What the other ranks give this rank's targets (the Comm overloads, fmm/let.h): the sources of
// their LETs and the lists of the target cells that take them, and the far lattice's root
// multipole, the sum of every rank's root.
struct Remote {
  const LetSources& let;
  const LetLists& lists;
  const cplx* lattice_root;
};

// An interaction list sorted by source, then by image: each source's images in one run.
std::vector<Interaction> by_source(std::vector<Interaction> list) {
  std::sort(list.begin(), list.end(), [](const Interaction& a, const Interaction& b) {
    return a.source != b.source ? a.source < b.source : a.shift < b.shift;
  });
  return list;
}

// The end of the run of list[k]'s source in a list sorted by_source.
std::size_t source_run_end(const std::vector<Interaction>& list, std::size_t k) {
  const int j = list[k].source;
  while (k < list.size() && list[k].source == j) ++k;
  return k;
}

// T = the tables I_lm(c + s - x) of the images s of list[k0, k1) (one source, centre c) seen
// from x, summed in the list's order: M2L and M2P are linear in the table, so the images of one
// source share one contraction.
void image_table(int p, const std::vector<Interaction>& list, std::size_t k0, std::size_t k1, const Vec3& c,
                 const Vec3& x, const std::vector<Vec3>& shifts, cplx* T) {
  const int nc = ncoef(p);
  cplx I[kMaxCoef];
  std::fill(T, T + nc, cplx(0.0));
  for (std::size_t k = k0; k < k1; ++k) {
    const Vec3& s = shifts[list[k].shift];
    solid_harmonics({c[0] + s[0] - x[0], c[1] + s[1] - x[1], c[2] + s[2] - x[2]}, p, nullptr, I);
    for (int q = 0; q < nc; ++q) T[q] += I[q];
  }
}

// The M2Ls of one target cell (centre ca) from its list into L, the source j with centre
// centre(j) and multipole multipole(j): one M2L per (target, source) pair, with the summed table
// of the source's images.  Returns the number of images.
template <class Centre, class Multipole>
long long m2l_list(int p, const std::vector<Interaction>& unsorted, const Vec3& ca, const std::vector<Vec3>& shifts,
                   const Centre& centre, const Multipole& multipole, cplx* L) {
  const std::vector<Interaction> list = by_source(unsorted);
  cplx T[kMaxCoef];
  for (std::size_t k0 = 0, k1; k0 < list.size(); k0 = k1) {
    k1 = source_run_end(list, k0);
    const int j = list[k0].source;
    image_table(p, list, k0, k1, centre(j), ca, shifts, T);
    m2l_table(p, T, multipole(j), L);
  }
  return static_cast<long long>(list.size());
}

// Far field and near field on the CPU from the multipoles M of src: the periodic lattice, M2L,
// L2L/L2P, P2P, adding into u and grad (sorted target order) at every target; with `remote`
// also what the LET brought (M2L, the M2P at leaf targets, P2P) and the lattice of the global
// root.  Without it, the sums of the one-rank evaluation, in its order.
void evaluate_cpu(const Params& prm, const Tree& tgt, const Tree& src, bool self, const Lists& lists,
                  const std::vector<Vec3>& shifts, int r0, bool lattice, const std::vector<Vec3>& as,
                  const std::vector<double>& ss, const std::vector<cplx>& M, const Remote* remote,
                  std::vector<Vec3>& u, std::vector<Mat3>& grad, Timings& tm) {
  const int p = prm.p, nc = ncoef(p);
  const auto t0 = clock_type::now();
  const int nct = static_cast<int>(tgt.cells.size());
  std::vector<cplx> L(static_cast<std::size_t>(nct) * 3 * nc);
  std::vector<char> has_local(nct, 0);
  // Periodic far lattice into the target root's local expansion (both roots at the box centre).
  if (lattice) {
    lattice_m2l(p, r0, prm.images, remote ? remote->lattice_root : &M[0], &L[0]);
    has_local[0] = 1;
  }
  const auto t_up = clock_type::now();
  tm.p2m_m2m += seconds(t0, t_up);

  // --- M2L ----------------------------------------------------------------------------------
  long long n_m2l = 0, n_pairs = 0, n_m2p = 0;
#pragma omp parallel for schedule(dynamic, 4) reduction(+ : n_m2l)
  for (int i = 0; i < nct; ++i) {
    const Vec3& ca = tgt.cells[i].center;
    cplx* Li = &L[std::size_t(i) * 3 * nc];
    n_m2l += m2l_list(
        p, lists.m2l[i], ca, shifts, [&](int j) -> const Vec3& { return src.cells[j].center; },
        [&](int j) { return &M[std::size_t(j) * 3 * nc]; }, Li);
    if (!lists.m2l[i].empty()) has_local[i] = 1;
    if (remote && !remote->lists.m2l[i].empty()) {
      const LetSources& let = remote->let;
      n_m2l += m2l_list(
          p, remote->lists.m2l[i], ca, shifts, [&](int j) -> const Vec3& { return let.cells[j].center; },
          [&](int j) { return &let.M[std::size_t(let.cells[j].multipole) * 3 * nc]; }, Li);
      has_local[i] = 1;
    }
  }
  const auto t_m2l = clock_type::now();
  tm.m2l = seconds(t_up, t_m2l);

  // --- downward pass: L2L, then L2P at target leaves (and the LET's M2P) ----------------------
  for (int lev = 1; lev < static_cast<int>(tgt.levels.size()); ++lev) {
    const auto& cells = tgt.levels[lev];
#pragma omp parallel for schedule(dynamic, 4)
    for (int k = 0; k < static_cast<int>(cells.size()); ++k) {
      const int c = cells[k];
      const Cell& C = tgt.cells[c];
      if (!has_local[C.parent]) continue;
      const Cell& P = tgt.cells[C.parent];
      l2l(p, {C.center[0] - P.center[0], C.center[1] - P.center[1], C.center[2] - P.center[2]},
          &L[std::size_t(C.parent) * 3 * nc], &L[std::size_t(c) * 3 * nc]);
      has_local[c] = 1;
    }
  }
  auto add = [&](int i, const double r[12]) {
    for (int m = 0; m < 3; ++m) {
      u[i][m] += r[m];
      for (int l = 0; l < 3; ++l) grad[i][m][l] += r[3 + 3 * m + l];
    }
  };
#pragma omp parallel for schedule(dynamic, 8) reduction(+ : n_m2p)
  for (int c = 0; c < nct; ++c) {
    const Cell& C = tgt.cells[c];
    if (!C.leaf()) continue;
    if (has_local[c])
      for (int i = C.begin; i < C.end; ++i) {
        double dphi[3][3], h[3][3][3], r[12];
        l2p(p, {tgt.x[i][0] - C.center[0], tgt.x[i][1] - C.center[1], tgt.x[i][2] - C.center[2]},
            &L[std::size_t(c) * 3 * nc], dphi, h);
        velocity_from_potentials(dphi, h, r);  // fmm/expansions_kernel.h, as the GPU's L2P
        add(i, r);
      }
    if (!remote || remote->lists.m2p[c].empty()) continue;
    // The LET's multipoles this leaf is too close to take by M2L, at each target (fmm/let.h),
    // the images of one multipole in one table as the M2L's; each multipole folded once for all
    // the leaf's targets, which still take the multipoles in the list's order.
    const std::vector<Interaction> list = by_source(remote->lists.m2p[c]);
    const LetSources& let = remote->let;
    cplx T[kMaxCoef];
    FoldedMultipole F;
    for (std::size_t k0 = 0, k1; k0 < list.size(); k0 = k1) {
      k1 = source_run_end(list, k0);
      const LetCell& B = let.cells[list[k0].source];
      fold_multipole(p, &let.M[std::size_t(B.multipole) * 3 * nc], F);
      for (int i = C.begin; i < C.end; ++i) {
        image_table(p, list, k0, k1, B.center, tgt.x[i], shifts, T);
        double dphi[3][3], h[3][3][3], r[12];
        m2p_table(p, T, F, dphi, h);
        velocity_from_potentials(dphi, h, r);
        add(i, r);
      }
      n_m2p += static_cast<long long>(k1 - k0) * (C.end - C.begin);
    }
  }
  const auto t_down = clock_type::now();
  tm.l2l_l2p = seconds(t_m2l, t_down);

  // --- P2P ----------------------------------------------------------------------------------
#pragma omp parallel for schedule(dynamic, 4) reduction(+ : n_pairs)
  for (int c = 0; c < nct; ++c) {
    const Cell& A = tgt.cells[c];
    const int na = A.end - A.begin;
    for (const Interaction& in : lists.p2p[c]) {
      const Cell& B = src.cells[in.source];
      p2p(&tgt.x[A.begin], na, A.begin, &src.x[B.begin], &as[B.begin], &ss[B.begin], B.end - B.begin, B.begin,
          shifts[in.shift], self && in.shift == 0, &u[A.begin], &grad[A.begin]);
      n_pairs += static_cast<long long>(na) * (B.end - B.begin);
    }
    if (!remote) continue;
    const LetSources& let = remote->let;
    for (const Interaction& in : remote->lists.p2p[c]) {
      const LetCell& B = let.cells[in.source];
      p2p(&tgt.x[A.begin], na, A.begin, &let.x[B.first], &let.alpha[B.first], &let.sigma[B.first], B.count, 0,
          shifts[in.shift], false, &u[A.begin], &grad[A.begin]);
      n_pairs += static_cast<long long>(na) * B.count;
    }
  }
  tm.p2p = seconds(t_down, clock_type::now());
  tm.n_m2l = n_m2l;
  tm.n_m2p = n_m2p;
  tm.n_p2p_pairs = n_pairs;
}

#ifdef VH_FMM_HAVE_CUDA
// The whole evaluation on the GPU over the same trees, with the lists the GPU built
// (fmm/traverse_gpu.h; the lists of the CPU traversal entry for entry) and taken over by the
// near and the far field (fmm/p2p_gpu.h, fmm/far_gpu.h): P2M/M2M, then the near field on its
// own stream beside the far lattice, the M2L and the L2L, then the L2P, which adds the
// near-field sums and the periodic mean correction and writes in the targets' input order; one
// download, straight into u_out and grad_out.  Stage times from CUDA events; tm.upload is the
// host's set-up and uploads.
void evaluate_gpu(const Params& prm, const Tree& tgt, const Tree& src, const SortedSourcesGpu& sources, bool self,
                  GpuLists& lists, const std::vector<Vec3>& shifts, int r0, bool lattice, std::vector<Vec3>& u_out,
                  std::vector<Mat3>& grad_out, Timings& tm) {
  StepTimer st("gpu host");
  const auto t0 = clock_type::now();
  const long long p2p_pairs = lists.p2p_pairs;
  P2PGpu near(lists, prm.precision == "double" ? GpuPrecision::fp64 : GpuPrecision::fp32, prm.tolerance);
  st.mark("p2p set up");
  near.set_sources(sources);
  if (!self) near.set_targets(tgt.x);
  st.mark("p2p targets up");
  FarGpu far(tgt, src, self, lists, shifts, prm.p, &near);
  far.set_single_m2l(prm.precision == "single");
  far.set_strengths(sources);
  st.mark("far setup");
  const auto t1 = clock_type::now();
  tm.upload = seconds(t0, t1);
  far.upward();
  near.launch();
  st.mark("upward");
  far.downward(&near, prm.periodic, r0, lattice ? prm.images : 0);
  far.get(u_out, grad_out);
  st.mark("downward+get");
  const FarGpuTimes ft = far.times();
  tm.p2p = near.wait() * 1e-3;
  tm.p2m_m2m = ft.p2m_m2m * 1e-3;
  tm.m2l = ft.m2l * 1e-3;
  tm.l2l_l2p = ft.l2l_l2p * 1e-3;
  tm.n_m2l = far.n_m2l();
  tm.n_p2p_pairs = p2p_pairs;
  tm.lattice_leaves = ft.lattice_leaves;
  tm.lattice_levels = ft.lattice_levels;
}
#endif

// The traversal's settings (fmm/traverse.h): the near-image range and shifts, the acceptance
// test; throws when the largest core radius of all the sources, sigma_max, needs more images.
struct TraversalSettings {
  int r0 = 0;
  std::vector<Vec3> shifts;
  Acceptance mac;
};
TraversalSettings traversal_settings(const Params& prm, bool any_sources, double sigma_max) {
  TraversalSettings t;
  const double rcut_per_sigma = fmm::rcut_per_sigma(prm.tolerance);
  if (prm.periodic) {
    t.r0 = near_image_range(prm.theta);
    if (any_sources && t.r0 * kBoxLength < rcut_per_sigma * sigma_max)
      throw std::invalid_argument("fmm: sigma too large for the periodic box at this tolerance");
  }
  t.shifts = prm.periodic ? near_image_shifts(t.r0) : std::vector<Vec3>{{0, 0, 0}};
  // One M2L (~8 us at p = 10) costs about as much as 200-500 pair evaluations (15-40 ns).
  const long long p2p_max_pairs =
      prm.p2p_max_pairs >= 0 ? prm.p2p_max_pairs : static_cast<long long>(std::pow(prm.p + 1.0, 4) / 55);
  t.mac = Acceptance{prm.theta, rcut_per_sigma, p2p_max_pairs};
  return t;
}

// The strengths in the tree's sorted order.
std::vector<Vec3> sorted_strengths(const Tree& src, const std::vector<Vec3>& alpha_in) {
  const int ns = src.size();
  std::vector<Vec3> as(ns);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < ns; ++i) {
    if (i + 16 < ns) __builtin_prefetch(&alpha_in[src.perm[i + 16]]);
    as[i] = alpha_in[src.perm[i]];
  }
  return as;
}

// u and grad from the target tree's sorted order back to the caller's.
void to_input_order(const Tree& tgt, const std::vector<Vec3>& u, const std::vector<Mat3>& grad,
                    std::vector<Vec3>& u_out, std::vector<Mat3>& grad_out) {
  const int nt = tgt.size();
  u_out.assign(nt, Vec3{});
  grad_out.assign(nt, Mat3{});
#pragma omp parallel for schedule(static)
  for (int i = 0; i < nt; ++i) {
    u_out[tgt.perm[i]] = u[i];
    grad_out[tgt.perm[i]] = grad[i];
  }
}

// The sources [begin, end) of evaluate_self whose field a rank keeps (the Comm overloads' gather
// on the GPU path).
struct Share {
  int begin = 0, end = 0;
};

// evaluate_self (targets_in null) or evaluate_at on one rank; with `share` (the GPU path's
// gather, self only) u_out and grad_out are the field at the sources [share->begin, share->end)
// alone (the CPU path takes none).
Timings run(const Params& prm_in, const std::vector<Vec3>& x_in, const std::vector<Vec3>& alpha_in,
            const std::vector<double>& sigma_in, const std::vector<Vec3>* targets_in,
            [[maybe_unused]] const Share* share,
            std::vector<Vec3>& u_out, std::vector<Mat3>& grad_out) {
  prm_in.validate();
  const Params prm = prm_in.resolved();
  check_inputs(x_in, alpha_in, sigma_in, targets_in);
  Timings tm;
  const auto t_start = clock_type::now();
  StepTimer st("host");
  const bool self = targets_in == nullptr;

  // --- tree -------------------------------------------------------------------------------
  // Periodic: the trees wrap the positions into the box as they sort them (no copy here).
  Vec3 center;
  double half;
  if (prm.periodic) {
    periodic_cube(center, half);
  } else {
    bounding_cube(x_in, targets_in, center, half);
  }
  // With the GPU back end the sources are sorted on the device and stay there
  // (fmm/particles_gpu.h); the host keeps the tree.
  Tree src;
#ifdef VH_FMM_HAVE_CUDA
  std::unique_ptr<SortedSourcesGpu> gpu_sources;
  if (prm.use_gpu) {
    if (gpu_count() == 0) throw std::runtime_error("fmm: use_gpu is set but no CUDA device is visible");
    gpu_sources = std::make_unique<SortedSourcesGpu>(x_in, sigma_in, alpha_in, center, half, prm.periodic);
    src = gpu_sources->tree(prm.ncrit);
  }
#endif
  if (!prm.use_gpu) src = build_tree(x_in, sigma_in, center, half, prm.ncrit, TreeBuild{prm.periodic, false});
  Tree tgt_own;
  if (!self) tgt_own = build_tree(*targets_in, {}, center, half, prm.ncrit, TreeBuild{prm.periodic, prm.use_gpu});
  const Tree& tgt = self ? src : tgt_own;
  st.mark("trees");
  const int ns = src.size(), nt = tgt.size();
  const auto t_tree = clock_type::now();
  tm.tree = seconds(t_start, t_tree);

  // --- traversal ------------------------------------------------------------------------------
  const TraversalSettings trav = traversal_settings(prm, ns > 0, ns > 0 ? src.cells[0].sigma_max : 0.0);
  const int r0 = trav.r0;
  const std::vector<Vec3>& shifts = trav.shifts;
  // With the GPU back end the lists are built on the device, in the formats its kernels read.
  Lists lists;
#ifdef VH_FMM_HAVE_CUDA
  GpuLists gpu_lists;
  if (prm.use_gpu && nt > 0 && ns > 0) gpu_lists = build_lists_gpu(tgt, src, self, shifts, trav.mac);
#endif
  if (!prm.use_gpu) lists = build_lists(tgt, src, shifts, trav.mac);
  const auto t_trav = clock_type::now();
  st.mark("lists");
  tm.traverse = seconds(t_tree, t_trav);
  const bool lattice = prm.periodic && ns > 0 && nt > 0 && prm.images > 0;

  if (prm.use_gpu) {
#ifdef VH_FMM_HAVE_CUDA
    if (nt > 0 && ns > 0) {
      evaluate_gpu(prm, tgt, src, *gpu_sources, self, gpu_lists, shifts, r0, lattice, u_out, grad_out, tm);
      st.mark("gpu evaluation");
    } else {
      u_out.assign(nt, Vec3{});
      grad_out.assign(nt, Mat3{});
    }
    if (share) {  // every target was evaluated: keep the share's
      u_out = std::vector<Vec3>(u_out.begin() + share->begin, u_out.begin() + share->end);
      grad_out = std::vector<Mat3>(grad_out.begin() + share->begin, grad_out.begin() + share->end);
    }
#endif
  } else {
    const std::vector<Vec3> as = sorted_strengths(src, alpha_in);
    const auto t_up = clock_type::now();
    const std::vector<cplx> M = upward(prm.p, src, as);
    tm.p2m_m2m = seconds(t_up, clock_type::now());
    std::vector<Vec3> u(nt, Vec3{});
    std::vector<Mat3> grad(nt, Mat3{});
    evaluate_cpu(prm, tgt, src, self, lists, shifts, r0, lattice, as, src.sigma, M, nullptr, u, grad, tm);
    // --- periodic mean removal, back to input order ------------------------------------------
    if (prm.periodic) periodic_correction(mean_terms(src.x, as), tgt.x, u, grad);
    to_input_order(tgt, u, grad, u_out, grad_out);
  }
  tm.total = seconds(t_start, clock_type::now());
  return tm;
}

}  // namespace

Timings evaluate_self(const Params& prm, const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                      const std::vector<double>& sigma, std::vector<Vec3>& u, std::vector<Mat3>& grad) {
  return run(prm, x, alpha, sigma, nullptr, nullptr, u, grad);
}

Timings evaluate_at(const Params& prm, const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                    const std::vector<double>& sigma, const std::vector<Vec3>& targets, std::vector<Vec3>& u,
                    std::vector<Mat3>& grad) {
  return run(prm, x, alpha, sigma, &targets, nullptr, u, grad);
}

namespace {

// Checks the parameters and this rank's inputs on every rank and agrees: when any rank fails,
// every rank throws before the first exchange (none waits in a collective the others left).
void check_on_every_rank(const Comm& comm, const Params& prm, const std::vector<Vec3>& x,
                         const std::vector<Vec3>& alpha, const std::vector<double>& sigma,
                         const std::vector<Vec3>* targets) {
  std::exception_ptr error;
  std::string message;
  try {
    prm.validate();
    check_inputs(x, alpha, sigma, targets);
    if (x.size() >= (std::size_t(1) << 31)) throw std::invalid_argument("fmm: more than 2^31 - 1 sources on a rank");
    if (targets && targets->size() >= (std::size_t(1) << 31))
      throw std::invalid_argument("fmm: more than 2^31 - 1 targets on a rank");
  } catch (const std::exception& e) {
    error = std::current_exception();
    message = e.what();
  }
  const std::vector<std::size_t> failed = comm.counts(error ? 1 : 0);
  const auto first = std::find(failed.begin(), failed.end(), std::size_t(1));
  if (first == failed.end()) return;
  const int root = static_cast<int>(first - failed.begin());
  comm.bcast(message, root);
  if (error) std::rethrow_exception(error);
  throw std::invalid_argument("rank " + std::to_string(root) + ": " + message);
}

// The Comm overloads on the CPU (fmm/let.h): this rank's trees over its own sources and targets
// in the cube all the ranks share, its own lists, the other ranks' LETs and this rank's
// traversals of them, the far lattice from the sum of the ranks' root multipoles and the mean
// terms of all the sources; then the evaluation at this rank's targets or, with `count`,
// received_sums() in its place (image_sums[1] the lattice's); u_out, grad_out in input order.
// Collective: every rank reaches the same collectives in the same order, whatever it holds.
Timings run_let(const Params& prm_in, const Comm& comm, const std::vector<Vec3>& x_in,
                const std::vector<Vec3>& alpha_in, const std::vector<double>& sigma_in,
                const std::vector<Vec3>* targets_in, bool count, std::vector<Vec3>& u_out,
                std::vector<Mat3>& grad_out) {
  const auto t_start = clock_type::now();
  check_on_every_rank(comm, prm_in, x_in, alpha_in, sigma_in, targets_in);
  const Params prm = prm_in.resolved();
  const bool self = targets_in == nullptr;
  Timings tm;
  StepTimer st("let");
  const std::vector<RankBox> boxes = allgather_boxes(comm, rank_box(x_in, sigma_in, targets_in, prm.periodic));
  long long ns_all = 0, nt_all = 0;
  double sigma_max = 0;
  Vec3 lo = {1e300, 1e300, 1e300}, hi = {-1e300, -1e300, -1e300};
  for (const RankBox& b : boxes) {
    ns_all += b.sources;
    nt_all += b.targets;
    sigma_max = std::max(sigma_max, b.sigma_max);
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::min({lo[d], b.source_lo[d], b.target_lo[d]});
      hi[d] = std::max({hi[d], b.source_hi[d], b.target_hi[d]});
    }
  }
  // The cube of the one-rank evaluation of all the ranks' sources (and targets).
  Vec3 center;
  double half;
  if (prm.periodic) {
    periodic_cube(center, half);
  } else {
    cube_of_box(lo, hi, center, half);
  }
  const TraversalSettings trav = traversal_settings(prm, ns_all > 0, sigma_max);  // the same on every rank
  const auto t_boxes = clock_type::now();
  st.mark("boxes");

  // Each rank's trees reach at least the level of the leaves of all the ranks' points (a thin
  // slab's own count would stop them levels above, whole_set_leaf_level).
  Tree src = build_tree(x_in, sigma_in, center, half, prm.ncrit,
                        TreeBuild{prm.periodic, false, whole_set_leaf_level(ns_all, prm.ncrit)});
  Tree tgt_own;
  if (!self)
    tgt_own = build_tree(*targets_in, {}, center, half, prm.ncrit,
                         TreeBuild{prm.periodic, false, whole_set_leaf_level(nt_all, prm.ncrit)});
  const Tree& tgt = self ? src : tgt_own;
  const int nt = tgt.size(), nc = ncoef(prm.p);
  const auto t_tree = clock_type::now();
  tm.tree = seconds(t_boxes, t_tree);
  st.mark("trees");
  const Lists lists = build_lists(tgt, src, trav.shifts, trav.mac);
  const auto t_lists = clock_type::now();
  tm.traverse = seconds(t_tree, t_lists);
  st.mark("lists");
  const std::vector<Vec3> as = sorted_strengths(src, alpha_in);
  const std::vector<cplx> M = upward(prm.p, src, as);
  const auto t_up = clock_type::now();
  tm.p2m_m2m = seconds(t_lists, t_up);
  st.mark("upward");

  // --- the exchanges: LETs, root multipoles, mean terms -------------------------------------
  const LetSources let = exchange_let(comm, boxes, src, M, as, prm.p, trav.shifts, trav.mac, tm.let_sent,
                                      tm.let_received);
  std::vector<cplx> roots(std::size_t(comm.size()) * 3 * nc), root(3 * nc, cplx(0.0));
  comm.allgather(M.data(), 3 * nc * sizeof(cplx), roots.data());
  for (int r = 0; r < comm.size(); ++r)
    for (int c = 0; c < 3 * nc; ++c) root[c] += roots[std::size_t(r) * 3 * nc + c];
  MeanTerms mean;
  if (prm.periodic) {
    std::vector<MeanTerms> means(comm.size());
    const MeanTerms mine = mean_terms(src.x, as);
    comm.allgather(&mine, sizeof(MeanTerms), means.data());
    for (const MeanTerms& m : means)
      for (int d = 0; d < 3; ++d) {
        mean.Q[d] += m.Q[d];
        mean.D[d] += m.D[d];
      }
  }
  const auto t_exchange = clock_type::now();
  tm.exchange = seconds(t_start, t_boxes) + seconds(t_up, t_exchange);
  st.mark("exchange");
  const RankBox& box = boxes[comm.rank()];
  const LetLists let_lists_here = let_lists(tgt, let, box.target_lo, box.target_hi, trav.shifts, trav.mac);
  const auto t_let_lists = clock_type::now();
  tm.traverse += seconds(t_exchange, t_let_lists);
  st.mark("let lists");

  const bool lattice = prm.periodic && ns_all > 0 && nt > 0 && prm.images > 0;
  std::vector<Vec3> u(nt, Vec3{});
  std::vector<Mat3> grad(nt, Mat3{});
  if (count) {
    const double w = 2.0 * lattice_half_width(trav.r0, prm.images) + 1, w0 = 2.0 * trav.r0 + 1;
    const Vec3 root_alpha = {root[0].real(), root[nc].real(), root[2 * nc].real()};  // monopoles
    received_sums(tgt, src, self, lists, as, M, let, let_lists_here, prm.p, lattice ? w * w * w - w0 * w0 * w0 : 0.0,
                  root_alpha, u, grad);
  } else {
    const Remote remote{let, let_lists_here, root.data()};
    evaluate_cpu(prm, tgt, src, self, lists, trav.shifts, trav.r0, lattice, as, src.sigma, M, &remote, u, grad, tm);
    if (prm.periodic) periodic_correction(mean, tgt.x, u, grad);
  }
  to_input_order(tgt, u, grad, u_out, grad_out);
  tm.total = seconds(t_start, clock_type::now());
  return tm;
}

#ifdef VH_FMM_HAVE_CUDA
// Every rank's sources, one after the other in rank order (fmm.h: the GPU path's gather), and
// where this rank's start.
struct Gathered {
  std::vector<Vec3> x, alpha;
  std::vector<double> sigma;
  Share mine;
};

Gathered gather_sources(const Comm& comm, const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                        const std::vector<double>& sigma) {
  const std::vector<std::size_t> counts = comm.counts(x.size());
  std::size_t total = 0, before = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (r == comm.rank()) before = total;
    total += counts[r];
  }
  if (total >= (std::size_t(1) << 31)) throw std::invalid_argument("fmm: more than 2^31 - 1 sources in all");
  Gathered g;
  g.x.resize(total);
  g.alpha.resize(total);
  g.sigma.resize(total);
  comm.allgatherv(x.data(), x.size(), g.x.data(), counts, sizeof(Vec3));
  comm.allgatherv(alpha.data(), alpha.size(), g.alpha.data(), counts, sizeof(Vec3));
  comm.allgatherv(sigma.data(), sigma.size(), g.sigma.data(), counts, sizeof(double));
  g.mine = Share{static_cast<int>(before), static_cast<int>(before + x.size())};
  return g;
}

// The GPU path of the Comm overloads: every rank gathers all the sources and evaluates them on
// its GPU at its own targets (targets_in) or, for evaluate_self, at its own share.
Timings run_gathered(const Params& prm, const Comm& comm, const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                     const std::vector<double>& sigma, const std::vector<Vec3>* targets, std::vector<Vec3>& u,
                     std::vector<Mat3>& grad) {
  const auto t0 = clock_type::now();
  check_on_every_rank(comm, prm, x, alpha, sigma, targets);
  const Gathered g = gather_sources(comm, x, alpha, sigma);
  const double exchange = seconds(t0, clock_type::now());
  Timings tm;
  if (targets) {
    tm = run(prm, g.x, g.alpha, g.sigma, targets, nullptr, u, grad);
  } else if (g.mine.begin < g.mine.end) {
    tm = run(prm, g.x, g.alpha, g.sigma, nullptr, &g.mine, u, grad);
  } else {  // nothing of this rank's to evaluate
    u.clear();
    grad.clear();
  }
  tm.exchange = exchange;
  tm.total += exchange;
  return tm;
}
#endif

}  // namespace

Timings evaluate_self(const Params& prm, const Comm& comm, const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                      const std::vector<double>& sigma, std::vector<Vec3>& u, std::vector<Mat3>& grad) {
  if (comm.size() == 1) return evaluate_self(prm, x, alpha, sigma, u, grad);
#ifdef VH_FMM_HAVE_CUDA
  if (prm.use_gpu) return run_gathered(prm, comm, x, alpha, sigma, nullptr, u, grad);
#endif
  return run_let(prm, comm, x, alpha, sigma, nullptr, false, u, grad);
}

Timings evaluate_at(const Params& prm, const Comm& comm, const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                    const std::vector<double>& sigma, const std::vector<Vec3>& targets, std::vector<Vec3>& u,
                    std::vector<Mat3>& grad) {
  if (comm.size() == 1) return evaluate_at(prm, x, alpha, sigma, targets, u, grad);
#ifdef VH_FMM_HAVE_CUDA
  if (prm.use_gpu) return run_gathered(prm, comm, x, alpha, sigma, &targets, u, grad);
#endif
  return run_let(prm, comm, x, alpha, sigma, &targets, false, u, grad);
}

Timings count_received(const Params& prm, const Comm& comm, const std::vector<Vec3>& x, const std::vector<Vec3>& alpha,
                       const std::vector<double>& sigma, const std::vector<Vec3>* targets, std::vector<Vec3>& sums,
                       std::vector<Mat3>& image_sums) {
  Params p = prm;
  p.use_gpu = false;
  return run_let(p, comm, x, alpha, sigma, targets, true, sums, image_sums);
}

}  // namespace vh::fmm
