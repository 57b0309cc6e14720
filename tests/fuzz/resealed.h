// What fuzz_checkpoint and fuzz_run_file share: each input is written to a scratch file and
// read twice, as a restart would read it:
//  1. as it is: the integrity seal (io/seal.h) must refuse it unless it is intact;
//  2. resealed (the first 512 bytes replaced by a seal of the rest): HDF5, the readers and the
//     checks after the seal then see the fuzzed bytes, as from a buggy writer or another
//     program.
// Either read must end in a result or a vh::InputError (exit 2); anything else escapes to
// libFuzzer as a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.h"
#include "io/seal.h"

namespace vh::fuzz {

/// A scratch file for this process, in /dev/shm where there is one (no disk I/O).
inline std::string scratch_file(const std::string& stem) {
  const std::filesystem::path shm("/dev/shm");
  std::error_code ec;
  const auto dir = std::filesystem::is_directory(shm, ec) ? shm : std::filesystem::temp_directory_path();
  return (dir / (stem + "_" + std::to_string(::getpid()) + ".h5")).string();
}

/// Writes `data` to `path`, calls `read(path)` on it as it is and resealed, removes it.
template <class Read>
int as_written_and_resealed(const std::uint8_t* data, std::size_t size, const std::string& path, Read read) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), std::streamsize(size));
  try {
    read(path);
  } catch (const InputError&) {
  }
  if (size >= kSealSize) {
    seal_file(path);
    try {
      read(path);
    } catch (const InputError&) {
    }
  }
  std::filesystem::remove(path);  // nothing left behind in /dev/shm
  return 0;
}

}  // namespace vh::fuzz
