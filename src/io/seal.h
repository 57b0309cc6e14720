// Integrity seal of the files a restart reads back (checkpoint.h5, run.h5): a hash of every
// byte of the file after a 512-byte header, written into that header once the file is
// complete and checked before anything parses the file.
//
//   bytes 0 … 511   "vortexhit seal 1\nxxh3-64 <16 hex digits>\nbytes <file size>\n", then
//                   zeros up to byte 512 (checked too)
//   bytes 512 …     the HDF5 file proper: the header is HDF5's user block
//                   (h5::create_file(path, true)), which every HDF5 reader skips, so h5py,
//                   h5dump and ParaView read a sealed file like any other
//
// The hash is XXH3-64 (xxHash 0.8, Debian's libxxhash-dev, used header-only): 64 bits, so a
// damaged file passes with probability 2⁻⁶⁴, at memory speed (a 2 GB checkpoint adds well under
// a second to a restart).
//
// Why a stored hash of the whole file and not HDF5's Fletcher32 filter on chunked datasets:
// Fletcher32 covers only the raw data of chunked datasets. A checkpoint's scalars (t, steps,
// field_index) are attributes and its deck a variable-length string in the global heap, which
// no HDF5 checksum covers; in the default (1.8-compatible) file format no metadata is
// checksummed either, and HDF5 1.10 can crash or loop on a damaged object header or B-tree
// before any filter runs. The seal is checked before HDF5 sees a byte, covers data, metadata
// and attributes alike, and needs one function for both files. Its one weakness: it names the
// file, not the damaged dataset (the state checks after a good seal name the dataset).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace vh {

/// Size of the header, = the HDF5 user block of a sealed file.
constexpr std::size_t kSealSize = 512;

/// Writes the seal of `path`, a complete file whose first kSealSize bytes are reserved for it
/// (h5::create_file(path, /*sealed=*/true) reserves them). Throws vh::LibraryError on I/O
/// failure (the caller, h5::atomic_path, then removes the file).
void seal_file(const std::string& path);

/// Checks the seal of `path`: false when the file has none (its first bytes are not a seal
/// header); throws vh::InputError naming the file when it is shorter or longer than the seal
/// says, its bytes do not hash to the sealed value, or the header is damaged.
bool check_seal(const std::string& path);

/// XXH3-64 of bytes [offset, end) of `path` (exposed for tests). InputError when unreadable.
std::uint64_t file_hash(const std::string& path, std::size_t offset);

}  // namespace vh
