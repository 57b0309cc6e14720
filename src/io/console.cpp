#include "io/console.h"

#include <cmath>
#include <cstdio>
#include <iostream>

namespace vh {

void Console::open_log(const std::string& path) { log_.open(path, std::ios::app); }

void Console::line(const std::string& s) {
  if (!quiet_) std::cout << s << std::endl;
  if (log_) log_ << s << "\n" << std::flush;
}

void Console::reset_rate() {
  history_.clear();
  last_print_ = {};
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-:--:--";
  const long s = long(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

void Console::progress(const std::string& solver, long step, double t, double T, double dt,
                       double K_over_K0, double Re_lambda, double kmax_eta, double t_end, bool force) {
  const auto now = clock::now();
  history_.push_back({now, {step, t}});
  // The rate is a moving average over the last ~20 samples; the first sample (warm-up:
  // plans, allocations) drops out once there are more.
  while (history_.size() > 20) history_.pop_front();
  if (!force && std::chrono::duration<double>(now - last_print_).count() < interval_s) return;
  last_print_ = now;
  double steps_per_s = NAN, eta = NAN;
  if (history_.size() >= 2) {
    const double span = std::chrono::duration<double>(history_.back().first - history_.front().first).count();
    const long dsteps = history_.back().second.first - history_.front().second.first;
    const double dtime = history_.back().second.second - history_.front().second.second;
    if (span > 0 && dsteps > 0) {
      steps_per_s = dsteps / span;
      if (dtime > 0) eta = (t_end - t) / (dtime / span);
    }
  }
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%-8s step %6ld  t %.3e  t/T %5.2f  dt %.1e  K/K0 %.4f  Re_l %6.1f  kmax_eta %5.2f  steps/s %6.1f  "
                "ETA %s",
                solver.c_str(), step, t, t / T, dt, K_over_K0, Re_lambda, kmax_eta, steps_per_s,
                format_duration(eta).c_str());
  line(buf);
}

}  // namespace vh
