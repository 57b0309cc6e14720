// Typed errors of vortexhit and the checking macros that throw them.
//
// The top level (src/app/main.cpp) maps them to exit statuses:
//   InputError  -> 2  (bad deck, option or file: the message is one line naming file/key)
//   RunStopped  -> 3  (the run stopped itself after writing a checkpoint, or could not write
//                      one: see the message; a WriteError mid-run becomes one)
//   anything else -> 1
#pragma once

#include <stdexcept>
#include <string>

#include "base/error.h"  // vh::LibraryError and VH_CHECK_CUDA, shared with fmm/

namespace vh {

/// Bad user input: deck, command-line option or input file. Exit status 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A run that stopped itself (NaN, CFL, signal) after writing a checkpoint. Exit status 3.
class RunStopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A file that could not be written (no space, file too large, permission, folder removed).
/// Thrown by h5::atomic_path after it removed its temporary: the file under `path()` is the
/// previous complete one, or none. The run driver turns it into RunStopped (exit 3).
class WriteError : public std::runtime_error {
 public:
  WriteError(const std::string& path, const std::string& reason)
      : std::runtime_error("cannot write " + path + " (" + reason + ")"), path_(path), reason_(reason) {}
  const std::string& path() const { return path_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string path_, reason_;
};

}  // namespace vh

/// Throws vh::LibraryError when the HDF5 call returns a negative value.
#define VH_CHECK_H5(call)                                                         \
  do {                                                                            \
    if ((call) < 0) throw ::vh::LibraryError("HDF5 call failed: " #call, __FILE__, __LINE__); \
  } while (0)

/// Throws vh::LibraryError when `cond` is false.
#define VH_CHECK(cond, msg)                                                       \
  do {                                                                            \
    if (!(cond)) throw ::vh::LibraryError(std::string(msg) + " (" #cond ")", __FILE__, __LINE__); \
  } while (0)

#ifdef __CUDACC__
/// Throws vh::LibraryError when a cuFFT call fails.
#define VH_CHECK_CUFFT(call)                                                             \
  do {                                                                                   \
    int e_ = int(call);                                                                  \
    if (e_ != 0)                                                                         \
      throw ::vh::LibraryError("cuFFT error " + std::to_string(e_) + " in " #call, __FILE__, __LINE__); \
  } while (0)
#endif
