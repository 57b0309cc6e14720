// Host-step timer of the FMM driver: with VH_FMM_PROFILE=1 in the environment, each StepTimer
// prints one line to stderr when it goes out of scope, "fmm <what>: step a 0.012, step b 0.340 s",
// the wall time between consecutive mark() calls.  Without the variable it costs a clock read
// per mark.  Host steps only; the GPU stages have their own CUDA-event times (fmm::Timings).
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace vh::fmm {

inline bool profile_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("VH_FMM_PROFILE");
    return e && *e == '1';
  }();
  return on;
}

class StepTimer {
 public:
  explicit StepTimer(const char* what) : what_(what), last_(std::chrono::steady_clock::now()) {}
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;
  /// Ends the step `step` (started at the previous mark or at construction).
  void mark(const char* step) {
    const auto now = std::chrono::steady_clock::now();
    if (profile_enabled()) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s%s %.3f", line_.empty() ? "" : ", ", step,
                    std::chrono::duration<double>(now - last_).count());
      line_ += buf;
    }
    last_ = now;
  }
  ~StepTimer() {
    if (profile_enabled() && !line_.empty()) std::fprintf(stderr, "fmm %s: %s s\n", what_, line_.c_str());
  }

 private:
  const char* what_;
  std::chrono::steady_clock::time_point last_;
  std::string line_;
};

}  // namespace vh::fmm
