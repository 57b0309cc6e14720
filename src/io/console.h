// Console and log: a banner, a fixed-column progress line at most every few seconds, a
// final line; everything also goes to RUN_DIR/log.txt. `quiet` silences all but errors.
#pragma once

#include <chrono>
#include <deque>
#include <fstream>
#include <string>

namespace vh {

class Console {
 public:
  explicit Console(bool quiet) : quiet_(quiet) {}
  /// Starts copying every line to `path` (appending).
  void open_log(const std::string& path);
  /// One line to the console (unless quiet) and the log.
  void line(const std::string& s);

  /// A progress line, printed when `force` or at least `interval_s` since the last one:
  /// step, t, t/T, dt, K/K0, Re_λ, k_max η, steps/s (moving average) and ETA to `t_end`.
  void progress(const std::string& solver, long step, double t, double T, double dt, double K_over_K0,
                double Re_lambda, double kmax_eta, double t_end, bool force = false);
  /// Forgets the step-rate history (e.g. when a new solver starts).
  void reset_rate();

  double interval_s = 3.0;

 private:
  using clock = std::chrono::steady_clock;
  bool quiet_;
  std::ofstream log_;
  clock::time_point last_print_{};
  std::deque<std::pair<clock::time_point, std::pair<long, double>>> history_;  // (when, (step, t))
};

/// "1:02:03" from seconds.
std::string format_duration(double seconds);

}  // namespace vh
