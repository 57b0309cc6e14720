// Where the published reference data of validation/data/ are (validation/data/README.md says
// what each file is): $VH_DATA_DIR when it is set and not empty, so a build carried to another
// machine finds the carried tree's copy (scripts/device-check.sh sets it), else the source
// tree's validation/data, compiled in by CMake (VH_DATA_DIR, target vh_reference_data).
#pragma once

#include <cstdlib>
#include <string>

namespace vh::validation {

/// The folder holding the reference data, without a trailing slash.
inline std::string data_dir() {
  if (const char* d = std::getenv("VH_DATA_DIR"); d != nullptr && *d != '\0') return d;
  return VH_DATA_DIR;
}

}  // namespace vh::validation
