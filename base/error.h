// The error type of a failed library call and the CUDA check that throws it: one definition for
// src/core/ (which adds the other typed errors, src/core/error.h) and fmm/ (which may not include
// src/core/; base/CMakeLists.txt).
#pragma once

#include <stdexcept>
#include <string>

namespace vh {

/// A failure of a library call (HDF5, FFTW, CUDA, MPI) with the file:line where it was seen.
class LibraryError : public std::runtime_error {
 public:
  LibraryError(const std::string& what, const char* file, int line)
      : std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what) {}
};

}  // namespace vh

#ifdef __CUDACC__
/// Throws vh::LibraryError when a CUDA runtime call fails.
#define VH_CHECK_CUDA(call)                                                              \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess)                                                               \
      throw ::vh::LibraryError(std::string("CUDA: ") + cudaGetErrorString(e_) + " in " #call, \
                               __FILE__, __LINE__);                                      \
  } while (0)
#endif
