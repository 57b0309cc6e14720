#include "app/steppers.h"

#include <cmath>
#include <cstdio>

namespace vh::app {
namespace {

class SpectralStepper : public Stepper {
 public:
  SpectralStepper(const spectral::Params& p, const Grid& g, Backend b)
      : solver_(spectral::make_solver(p, g, b)) {}
  std::string name() const override { return "spectral"; }
  void start(const SpectralVector& u, double t) override { solver_->set_velocity(u, t); }
  void step(double dt) override {
    solver_->step(dt);
    ++steps_;
  }
  double max_velocity() override { return solver_->max_velocity(); }
  double time() const override { return solver_->time(); }
  long steps() const override { return steps_; }
  void velocity(SpectralVector& u) override { solver_->velocity(u); }

 private:
  std::unique_ptr<spectral::Solver> solver_;
  long steps_ = 0;
};

class VortexStepper : public Stepper {
 public:
  VortexStepper(const vortex::Params& p, const Grid& g) : solver_(p, g) {}
  std::string name() const override { return "vortex"; }
  void start(const SpectralVector& u, double t) override { init_ = solver_.set_velocity(u, t); }
  void step(double dt) override {
    const long before = solver_.reinits();
    solver_.step(dt);
    reinitialised_ = solver_.reinits() != before;
  }
  std::string event() override {
    if (!reinitialised_) return "";
    char buf[160];
    std::snprintf(buf, sizeof buf, "vortex   reinitialised at step %ld: sigma/sigma0 was %.3f, RBF residual %.2e",
                  solver_.steps(), solver_.core_ratio_at_reinit(), solver_.last_rbf_residual());
    return buf;
  }
  double max_velocity() override { return solver_.max_velocity(); }
  double time() const override { return solver_.time(); }
  long steps() const override { return solver_.steps(); }
  void velocity(SpectralVector& u) override { solver_.velocity(u); }
  std::vector<std::pair<std::string, double>> monitors() override {
    m_ = solver_.monitors();
    return {{"sum_alpha_x", m_.total_alpha[0]}, {"sum_alpha_y", m_.total_alpha[1]},
            {"sum_alpha_z", m_.total_alpha[2]}, {"max_div_omega", m_.max_div_omega},
            {"core_ratio", m_.core_ratio},      {"reinits", double(m_.reinits)},
            {"rbf_residual", m_.last_rbf_residual}};
  }
  std::string log_line() override {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "vortex   sum(alpha) (%.1e, %.1e, %.1e)  max|div w| %.2e  sigma/sigma0 %.3f  reinits %ld  "
                  "rbf residual %.1e",
                  m_.total_alpha[0], m_.total_alpha[1], m_.total_alpha[2], m_.max_div_omega, m_.core_ratio,
                  m_.reinits, m_.last_rbf_residual);
    return buf;
  }

 private:
  vortex::Solver solver_;
  vortex::RbfResult init_;
  vortex::Monitors m_;
  bool reinitialised_ = false;
};

}  // namespace

std::unique_ptr<Stepper> make_spectral(const spectral::Params& p, const Grid& g, Backend b) {
  return std::make_unique<SpectralStepper>(p, g, b);
}

std::unique_ptr<Stepper> make_vortex(const vortex::Params& p, const Grid& g) {
  return std::make_unique<VortexStepper>(p, g);
}

}  // namespace vh::app
