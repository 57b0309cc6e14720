// The typed errors are base/error.h's (exit statuses there); this header adds the check of
// HDF5 calls.
#pragma once

#include "base/error.h"

/// Throws vh::LibraryError when the HDF5 call returns a negative value.
#define VH_CHECK_H5(call)                                                                     \
  do {                                                                                        \
    if ((call) < 0) throw ::vh::LibraryError("HDF5 call failed: " #call, __FILE__, __LINE__); \
  } while (0)
