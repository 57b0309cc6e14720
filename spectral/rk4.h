// Classical RK4 driver shared by the back ends (scheme: rhs_kernel.h, rk4_mode()).
//
// A step is four evaluations of the nonlinear term; each is (1) the 6 inverse transforms of
// the stage input û and ω̂ = i k × û, already in the transform buffers, (2) u × ω on the
// grid and its 3 forward transforms, (3) one fused per-mode pass that projects, truncates,
// updates the RK4 accumulator and writes the next stage input (and its curl) into the
// transform buffers. The last stage writes the new state and the first input of the next
// step, so consecutive steps need no extra pass.
#pragma once

#include "spectral/solver.h"

namespace vh::spectral {

class Rk4Solver : public Solver {
 public:
  void step(double dt) final {
    if (!inputs_ready_) load_state_inputs();
    for (int s = 1; s <= 4; ++s) {
      nonlinear_transforms();
      post_transform(s, dt);
    }
    inputs_ready_ = true;
    max_valid_ = false;
    t_ += dt;
  }
  double time() const final { return t_; }

 protected:
  /// Transform buffers ← û and ω̂ of the state (zero outside the retained set).
  virtual void load_state_inputs() = 0;
  /// 6 inverse transforms, u × ω on the grid, 3 forward transforms.
  virtual void nonlinear_transforms() = 0;
  /// The fused per-mode pass of stage s (1 … 4) with step dt; see rhs_kernel.h.
  virtual void post_transform(int s, double dt) = 0;

  double t_ = 0;
  bool inputs_ready_ = false;  ///< buffers hold the first stage input of the next step
  bool max_valid_ = false;     ///< cached max_velocity() is current
  double max_cache_ = 0;
};

}  // namespace vh::spectral
