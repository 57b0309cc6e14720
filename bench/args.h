// The command line of a benchmark, an option at a time, for the programs under bench/:
//
//   for (vh::bench::Args a(argc, argv); a.next();) {
//     if (a.is("--n")) o.n = a.integers();
//     else if (a.is("--steps")) o.steps = a.integer();
//     else if (a.is("--csv")) o.csv = true;
//     else a.unknown();
//   }
//
// A value that is missing or not a number throws std::invalid_argument naming the option
// ("--steps: 'x' is not a whole number"); the program prints it as its one line and exits 2.
// Header-only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace vh::bench {

class Args {
 public:
  Args(int argc, char** argv) : argc_(argc), argv_(argv) {}

  /// Moves to the next option; false after the last.
  bool next() {
    if (++i_ >= argc_) return false;
    option_ = argv_[i_];
    return true;
  }
  bool is(const char* name) const { return option_ == name; }
  const std::string& option() const { return option_; }

  /// The value after the option (the next argument, whatever it is).
  std::string value() {
    if (i_ + 1 >= argc_) throw std::invalid_argument("missing value after " + option_);
    return argv_[++i_];
  }
  int integer() { return whole(value()); }
  long long integer64() { return number<long long>(value(), "a whole number"); }
  double real() { return number<double>(value(), "a number"); }
  /// A comma-separated value: "128,256" is {"128", "256"}.
  std::vector<std::string> list() {
    std::vector<std::string> out;
    const std::string v = value();
    for (std::size_t b = 0; b <= v.size();) {
      const std::size_t e = std::min(v.find(',', b), v.size());
      out.push_back(v.substr(b, e - b));
      b = e + 1;
    }
    return out;
  }
  std::vector<int> integers() {
    std::vector<int> out;
    for (const std::string& s : list()) out.push_back(whole(s));
    return out;
  }

  /// The option is none of the program's.
  [[noreturn]] void unknown() const { throw std::invalid_argument("unknown option " + option_); }

 private:
  template <class T>
  T number(const std::string& s, const char* what) const {
    std::size_t used = 0;
    T v{};
    try {
      if constexpr (std::is_same_v<T, double>) v = std::stod(s, &used);
      else v = std::stoll(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (s.empty() || used != s.size()) throw std::invalid_argument(option_ + ": '" + s + "' is not " + what);
    return v;
  }
  int whole(const std::string& s) const {
    const long long v = number<long long>(s, "a whole number");
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      throw std::invalid_argument(option_ + ": " + s + " is too large");
    return static_cast<int>(v);
  }

  int argc_;
  char** argv_;
  int i_ = 0;
  std::string option_;
};

}  // namespace vh::bench
