// The project's typed errors and the checks that throw them: one definition for every module
// (base/CMakeLists.txt says why it lives below all of them).
//
// The top level (src/app/main.cpp) maps them to exit statuses:
//   InputError    -> 2  (bad deck, option or input file: the message is one line naming it)
//   RunStopped    -> 3  (the run stopped itself after writing a checkpoint, or could not write
//                        one: see the message; a WriteError mid-run becomes one)
//   OutOfMemory   -> 2 before the run's first step (the run does not fit), 3 after it (the
//                        run stops, naming its last good checkpoint): src/app/run.cpp
//   DeviceFault   -> 3 after the run's first step (as OutOfMemory: the GPU's state is lost,
//                        the last good checkpoint is named), 1 before it
//   anything else -> 1  (LibraryError: a failed library call, with the file:line it was seen at)
// CUDA and cuFFT calls are checked by base/cuda_check.h, MPI calls inside base/comm.cpp and
// HDF5 calls by src/io/h5.h.
#pragma once

#include <stdexcept>
#include <string>

namespace vh {

/// A failure of a library call (HDF5, FFTW, CUDA, MPI, NCCL) with the file:line where it was seen.
class LibraryError : public std::runtime_error {
 public:
  LibraryError(const std::string& what, const char* file, int line)
      : std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what) {}
};

/// An allocation that the machine refused (GPU memory, page-locked host memory, a cuFFT work
/// area): the memory check admitted the run, so other processes took the memory since, or the
/// run needed more than its estimate. Thrown by base/cuda_check.h's checks, with the device's
/// free memory at the failure.
class OutOfMemory : public LibraryError {
 public:
  using LibraryError::LibraryError;
};

/// A GPU that can no longer run this process's work: a sticky CUDA error (a kernel that
/// faulted, an uncorrectable ECC or NVLink error, a GPU fallen off the bus or taken away). The
/// process's CUDA context is unusable, so nothing more can be read from the GPU. Thrown by
/// base/cuda_check.h's checks.
class DeviceFault : public LibraryError {
 public:
  using LibraryError::LibraryError;
};

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

/// Throws vh::LibraryError when `cond` is false.
#define VH_CHECK(cond, msg)                                                                          \
  do {                                                                                               \
    if (!(cond)) throw ::vh::LibraryError(std::string(msg) + " (" #cond ")", __FILE__, __LINE__); \
  } while (0)
