#include "vortex/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "vortex/rbf.h"

namespace vh::vortex {
namespace {

std::string num(double v, int digits = 17) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

[[noreturn]] void refuse(const std::string& what) { throw InputError(what); }

// Positions lie in [0, 2π) to 1e-12 relative (wrap() can leave −1 ulp).
constexpr double kBox = 2.0 * kPi, kPositionSlack = 1e-12 * kBox;

/// Every component finite and, with `lo < hi`, in [lo, hi); v[i] is the state's element first + i.
/// The message is formed only for the value refused: formed for every value, it made a restart
/// at 256³ spend 159 s here (bench/RESULTS.md 2026-12-03 "the GPU vortex runs' host memory").
void check_vectors(const std::vector<Vec3>& v, std::size_t first, const char* name, double lo = 0, double hi = 0) {
  for (std::size_t i = 0; i < v.size(); ++i)
    for (int d = 0; d < 3; ++d) {
      const double x = v[i][d];
      const bool finite = std::isfinite(x), outside = lo < hi && !(x >= lo && x < hi);
      if (finite && !outside) continue;
      refuse(std::string(name) + "[" + std::to_string(first + i) + "][" + std::to_string(d) + "] = " + num(x) +
             (finite ? " is outside the box (allowed: 0 <= x < 2 pi)" : " is not finite"));
    }
}

/// |v[i]| ≤ bound for every i (the vectors are finite: check_vectors first).
void check_magnitudes(const std::vector<Vec3>& v, std::size_t first, const char* name, double bound,
                      const char* what) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double m = std::hypot(v[i][0], v[i][1], v[i][2]);
    if (!(m <= bound))
      refuse("|" + std::string(name) + "[" + std::to_string(first + i) + "]| = " + num(m, 3) + " is larger than " +
             what + " can hold (allowed: <= " + num(bound, 3) + ", vortex/validate.h)");
  }
}

void check_attribute(bool ok, const char* name, double value, const char* allowed) {
  if (!ok) refuse(std::string("attribute ") + name + " = " + num(value) + " is out of range (allowed: " + allowed + ")");
}

}  // namespace

Bounds bounds(const Grid& lattice, double sigma0, double speed) {
  Bounds b;
  if (!std::isfinite(speed)) return b;
  const std::vector<double> s1 = symbol_factors(lattice, sigma0);
  const double s_min = *std::min_element(s1.begin(), s1.end());
  const double n = lattice.n, k_max = std::sqrt(3.0) * n / 2, volume = std::pow(lattice.h(), 3);
  b.velocity = speed;
  b.vorticity = std::sqrt(n * n * n) * k_max * speed;
  b.gamma = volume * b.vorticity;
  b.alpha = b.gamma / (s_min * s_min * s_min);
  return b;
}

void validate_particles(const State& s, std::size_t first, const Bounds& b) {
  const Particles& p = s.particles;
  check_vectors(p.x, first, "x", -kPositionSlack, kBox + kPositionSlack);
  check_vectors(p.alpha, first, "alpha");
  check_vectors(p.gamma, first, "gamma");
  const char* field = "a field of the run's largest speed";
  check_magnitudes(p.alpha, first, "alpha", b.alpha, field);
  check_magnitudes(p.gamma, first, "gamma", b.gamma, field);
  for (std::size_t i = 0; i < p.sigma.size(); ++i)
    if (!(p.sigma[i] > 0 && p.sigma[i] < kBox))
      refuse("sigma[" + std::to_string(first + i) + "] = " + num(p.sigma[i]) +
             " is not a core radius (allowed: 0 < sigma < 2 pi)");
  check_vectors(s.u_prev, first, "u_prev");
  check_vectors(s.dalpha_prev, first, "dalpha_prev");
  check_vectors(s.dgamma_prev, first, "dgamma_prev");
  check_magnitudes(s.u_prev, first, "u_prev", b.velocity, field);
  check_magnitudes(s.dalpha_prev, first, "dalpha_prev", b.alpha * b.vorticity, field);
  check_magnitudes(s.dgamma_prev, first, "dgamma_prev", b.gamma * b.vorticity, field);
}

void validate_position_boxes(const std::vector<double>& box) {
  for (std::size_t b = 0; b + 6 <= box.size(); b += 6)
    for (int c = 0; c < 3; ++c) {
      const double lo = box[b + c], hi = box[b + 3 + c];
      if (!(lo >= -kPi - kPositionSlack && lo <= hi && hi < kBox + kPositionSlack))
        refuse("x_boxes[" + std::to_string(b / 6) + "][" + std::to_string(c) + "]: [" + num(lo) + ", " + num(hi) +
               "] is not an interval [lo, hi] with -pi <= lo <= hi < 2 pi");
    }
}

void validate_scalars(const State& s, bool history) {
  check_attribute(std::isfinite(s.t) && s.t >= 0, "t", s.t, "finite, >= 0");
  check_attribute(s.steps >= 0, "steps", double(s.steps), ">= 0");
  check_attribute((s.steps == 0) == (s.t == 0), "t", s.t, "0 exactly when steps = 0");
  check_attribute(std::isfinite(s.t_reinit) && s.t_reinit >= 0 && s.t_reinit <= s.t, "t_reinit", s.t_reinit,
                  "0 ... t");
  check_attribute(s.since_reinit >= 0 && s.since_reinit <= s.steps, "since_reinit", double(s.since_reinit),
                  "0 ... steps");
  check_attribute(s.reinits >= 0 && s.reinits <= s.steps, "reinits", double(s.reinits), "0 ... steps");
  check_attribute(std::isfinite(s.dt_prev) && (history ? s.dt_prev > 0 : s.dt_prev >= 0), "dt_prev", s.dt_prev,
                  history ? "finite, > 0 with an AB2 history" : "finite, >= 0");
  check_attribute(std::isfinite(s.last_residual) && s.last_residual >= 0, "last_residual", s.last_residual,
                  "finite, >= 0");
  check_attribute(std::isfinite(s.ratio_at_reinit) && s.ratio_at_reinit >= 0, "ratio_at_reinit",
                  s.ratio_at_reinit, "finite, >= 0");
  check_attribute(std::isfinite(s.div_removed) && s.div_removed >= 0, "div_removed", s.div_removed,
                  "finite, >= 0");
}

}  // namespace vh::vortex
