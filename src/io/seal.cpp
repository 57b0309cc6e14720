#include "io/seal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/error.h"

namespace vh {
namespace {

const char kMagic[] = "vortexhit seal 1\n";

/// Closes a file descriptor on scope exit.
struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

std::string header_text(std::uint64_t hash, std::uint64_t size) {
  char b[128];
  std::snprintf(b, sizeof b, "%sxxh3-64 %016" PRIx64 "\nbytes %" PRIu64 "\n", kMagic, hash, size);
  return b;
}

/// Hash of bytes [offset, end) of the open file `fd`, read in 4 MiB pieces; std::system_error
/// when a read fails.
std::uint64_t hash_from(int fd, std::size_t offset, const std::string& path) {
  XXH3_state_t* st = XXH3_createState();
  if (!st) throw std::bad_alloc();
  XXH3_64bits_reset(st);
  std::vector<char> buf(std::size_t(4) << 20);
  off_t at = off_t(offset);
  for (;;) {
    const ssize_t got = ::pread(fd, buf.data(), buf.size(), at);
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      XXH3_freeState(st);
      throw std::system_error(err, std::generic_category(), "cannot read " + path);
    }
    if (got == 0) break;
    XXH3_64bits_update(st, buf.data(), std::size_t(got));
    at += got;
  }
  const std::uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

/// hash_from() for a file being read as input: a read error is the input's (InputError).
std::uint64_t input_hash(int fd, std::size_t offset, const std::string& path) {
  try {
    return hash_from(fd, offset, path);
  } catch (const std::system_error& e) {
    throw InputError(path + ": cannot read (" + e.code().message() + ")");
  }
}

}  // namespace

std::uint64_t file_hash(const std::string& path, std::size_t offset) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  return input_hash(f.fd, offset, path);
}

void seal_file(const std::string& path) {
  Fd f(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (f.fd < 0) throw std::system_error(errno, std::generic_category(), "cannot open " + path + " to seal it");
  struct stat s {};
  if (::fstat(f.fd, &s) != 0 || std::size_t(s.st_size) < kSealSize)
    throw LibraryError(path + ": too short to carry a seal (no user block reserved?)", __FILE__, __LINE__);
  const std::uint64_t h = hash_from(f.fd, kSealSize, path);
  std::vector<char> block(kSealSize, '\0');
  const std::string text = header_text(h, std::uint64_t(s.st_size));
  std::memcpy(block.data(), text.data(), text.size());
  if (::pwrite(f.fd, block.data(), block.size(), 0) != ssize_t(block.size()))
    throw std::system_error(errno ? errno : EIO, std::generic_category(), "cannot write the seal of " + path);
}

bool check_seal(const std::string& path) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  std::vector<char> block(kSealSize + 1, '\0');  // + 1: always a terminated string for sscanf
  const ssize_t got = ::pread(f.fd, block.data(), kSealSize, 0);
  if (got < 0) throw InputError(path + ": cannot read (" + std::strerror(errno) + ")");
  const std::size_t magic_len = sizeof kMagic - 1;
  if (std::size_t(got) < magic_len || std::memcmp(block.data(), kMagic, magic_len) != 0) return false;
  const std::string damaged = path + ": damaged: ";
  if (std::size_t(got) < kSealSize)
    throw InputError(damaged + "shorter than its integrity seal (" + std::to_string(got) + " bytes)");
  // The header must be exactly what seal_file() writes for the values it states.
  std::uint64_t hash = 0, size = 0;
  int used = 0;
  if (std::sscanf(block.data() + magic_len, "xxh3-64 %16" SCNx64 "\nbytes %20" SCNu64 "\n%n", &hash, &size,
                  &used) != 2 ||
      used == 0)
    throw InputError(damaged + "its integrity seal (the first 512 bytes) is unreadable");
  const std::string text = header_text(hash, size);
  bool exact = std::memcmp(block.data(), text.data(), text.size()) == 0;
  for (std::size_t i = text.size(); exact && i < kSealSize; ++i) exact = block[i] == '\0';
  if (!exact) throw InputError(damaged + "its integrity seal (the first 512 bytes) was altered");
  struct stat s {};
  if (::fstat(f.fd, &s) != 0) throw InputError(path + ": cannot stat (" + std::strerror(errno) + ")");
  if (std::uint64_t(s.st_size) != size)
    throw InputError(damaged + std::to_string(s.st_size) + " bytes, its integrity seal says " +
                     std::to_string(size) + " (truncated or extended after it was written)");
  const std::uint64_t actual = input_hash(f.fd, kSealSize, path);
  if (actual != hash) {
    char b[160];
    std::snprintf(b, sizeof b, "its bytes do not match its integrity seal (xxh3-64 %016" PRIx64 ", sealed %016" PRIx64
                  "): changed or corrupted after it was written", actual, hash);
    throw InputError(damaged + b);
  }
  return true;
}

}  // namespace vh
