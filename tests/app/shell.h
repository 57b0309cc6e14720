// Running a command line from a test: its exit status and its output (stdout and stderr).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace vh::test {

struct Result {
  int status = -1;     ///< exit status, -1 when the command did not exit normally
  std::string output;  ///< stdout and stderr together
};

inline Result shell(const std::string& cmd) {
  Result r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), int(buf.size()), p)) r.output += buf.data();
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

/// Whether the programs under test carry AddressSanitizer (the sanitizer build, VH_SANITIZE):
/// its shadow memory reserves terabytes of address space (under ulimit -v it cannot start) and
/// its redzones and quarantine inflate the resident set, so limits on memory and peak RSS have
/// nothing to measure there.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

/// The vortexhit program (VH_EXE, set by tests/app/CMakeLists.txt) with `args`.
inline Result vortexhit(const std::string& args) { return shell(std::string(VH_EXE) + " " + args); }

}  // namespace vh::test
