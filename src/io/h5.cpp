#include "io/h5.h"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <system_error>
#include <type_traits>

#include "base/error.h"
#include "io/seal.h"

namespace vh::h5 {

static_assert(std::is_same_v<Id, hid_t>, "h5::Id must be hid_t (HDF5 >= 1.10)");

namespace {

// The innermost description on HDF5's error stack: says what actually went wrong ("unable
// to open file", "file locking failed"), which the failing call's name alone does not.
herr_t innermost(unsigned, const H5E_error2_t* e, void* out) {
  if (e->desc) *static_cast<std::string*>(out) = e->desc;
  return 0;
}

std::string hdf5_message() {
  std::string msg;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, innermost, &msg);
  H5Eclear2(H5E_DEFAULT);
  return msg.empty() ? std::string("no HDF5 message") : msg;
}

// Set while a reading helper runs (the outermost one): a failing HDF5 call there means a
// damaged or foreign input file, so it becomes an InputError naming the file and object.
struct ReadScope {
  Id loc;
  std::string path;
  const ReadScope* outer;
  ReadScope(Id l, std::string p);
  ~ReadScope();
  ReadScope(const ReadScope&) = delete;
  ReadScope& operator=(const ReadScope&) = delete;
};
thread_local const ReadScope* t_reading = nullptr;
ReadScope::ReadScope(Id l, std::string p) : loc(l), path(std::move(p)), outer(t_reading) {
  if (!outer) t_reading = this;
}
ReadScope::~ReadScope() {
  if (!outer) t_reading = nullptr;
}

[[noreturn]] void fail(const char* call, const char* file, int line) {
  const std::string msg = hdf5_message();
  if (t_reading) throw InputError(where(t_reading->loc, t_reading->path) + ": unreadable (" + msg + ")");
  throw LibraryError(std::string("HDF5 call failed: ") + call + " (" + msg + ")", file, line);
}

Id check_id(Id id, const char* call, const char* file, int line) {
  if (id < 0) fail(call, file, line);
  return id;
}

}  // namespace

// Checks an HDF5 call (a negative return is a failure): fail() throws with HDF5's own
// explanation in the message (InputError inside a reading helper, LibraryError elsewhere).
// H5_ID does the same for a call that returns an identifier and wraps it in a Handle.
#define H5_CHECK(call)                                \
  do {                                                \
    if ((call) < 0) fail(#call, __FILE__, __LINE__);  \
  } while (0)
#define H5_ID(call) Handle(check_id((call), #call, __FILE__, __LINE__))

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    close();
    id_ = o.id_;
    o.id_ = -1;
  }
  return *this;
}

void Handle::close() noexcept {
  if (id_ < 0) return;
  switch (H5Iget_type(id_)) {
    case H5I_FILE: H5Fclose(id_); break;
    case H5I_GROUP: H5Gclose(id_); break;
    case H5I_DATASET: H5Dclose(id_); break;
    case H5I_DATASPACE: H5Sclose(id_); break;
    case H5I_DATATYPE: H5Tclose(id_); break;
    case H5I_ATTR: H5Aclose(id_); break;
    case H5I_GENPROP_LST: H5Pclose(id_); break;
    case H5I_BADID: break;  // already closed with its file (H5F_CLOSE_STRONG)
    default: H5Idec_ref(id_); break;
  }
  H5Eclear2(H5E_DEFAULT);
  id_ = -1;
}

void silence_errors() {
  static std::once_flag once;
  std::call_once(once, [] {
    // A file whose close failed (disk full) stays half-open inside HDF5 1.10, and the
    // library's exit handler then crashes on it (SIGSEGV in H5F__close_cb, seen under a
    // file-size limit). Every file written is closed explicitly (close_file), so the end of
    // the process is left to the OS. Must precede the library's initialisation; where
    // something opened HDF5 earlier it fails harmlessly.
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

namespace {

std::size_t product(const Shape& s) {
  std::size_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

std::string shape_text(const Shape& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? " " : "") + std::to_string(s[i]);
  return t + "]";
}

Handle file_access() {
  Handle fapl = H5_ID(H5Pcreate(H5P_FILE_ACCESS));
  // Close everything with the file so the bytes are on disk before atomic_path's fsync.
  H5_CHECK(H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG));
  // No sieve buffer: raw data goes to the file inside H5Dwrite, whose status then says
  // whether it got there. Buffered, it is written when the dataset closes, where a full disk
  // is only seen by a destructor that cannot report it. Writes here are whole datasets or
  // whole planes, so the buffer saves nothing.
  H5_CHECK(H5Pset_sieve_buf_size(fapl, 0));
#if H5_VERSION_GE(1, 10, 7)
  // Files are written once under a temporary name and never updated in place, so locking
  // buys nothing and fails on file systems without flock (some NFS and Lustre mounts).
  H5_CHECK(H5Pset_file_locking(fapl, false, true));
#endif
  return fapl;
}

Handle link_create() {
  Handle lcpl = H5_ID(H5Pcreate(H5P_LINK_CREATE));
  H5_CHECK(H5Pset_create_intermediate_group(lcpl, 1));
  H5_CHECK(H5Pset_char_encoding(lcpl, H5T_CSET_UTF8));
  return lcpl;
}

// A fixed-length UTF-8 string type for `s` (at least one byte: HDF5 has no empty type), padded
// with NULs. Not variable-length: those live in HDF5's global heap, which no checksum covers
// and whose reader (H5HG_read, HDF5 1.10) overruns buffers on a crafted file (found by
// fuzz_checkpoint); the readers refuse them in sealed files (read_string_from).
Handle utf8_string(const std::string& s) {
  Handle t = H5_ID(H5Tcopy(H5T_C_S1));
  H5_CHECK(H5Tset_size(t, std::max<std::size_t>(1, s.size())));
  H5_CHECK(H5Tset_strpad(t, H5T_STR_NULLPAD));
  H5_CHECK(H5Tset_cset(t, H5T_CSET_UTF8));
  return t;
}

// Whether `loc`'s file has the user block of a seal (io/seal.h): written by this version,
// which writes no variable-length strings (open_file() has checked the seal itself).
bool sealed_file(Id loc) {
  Handle file = H5_ID(H5Iget_file_id(loc));
  Handle fcpl = H5_ID(H5Fget_create_plist(file));
  hsize_t block = 0;
  H5_CHECK(H5Pget_userblock(fcpl, &block));
  return block == kSealSize;
}

Handle simple_space(const Shape& s) {
  std::vector<hsize_t> d(s.begin(), s.end());
  return H5_ID(H5Screate_simple(int(d.size()), d.data(), nullptr));
}

Shape space_shape(Id space) {
  int rank = H5Sget_simple_extent_ndims(space);
  H5_CHECK(rank);
  std::vector<hsize_t> d(std::size_t(rank), 0);
  if (rank > 0) H5_CHECK(H5Sget_simple_extent_dims(space, d.data(), nullptr));
  return Shape(d.begin(), d.end());
}

[[noreturn]] void bad(Id loc, const std::string& path, const std::string& problem) {
  throw InputError(where(loc, path) + ": " + problem);
}

// Size of `loc`'s file in bytes.
hsize_t file_bytes(Id loc) {
  Handle file = H5_ID(H5Iget_file_id(loc));
  hsize_t bytes = 0;
  H5_CHECK(H5Fget_filesize(file, &bytes));
  return bytes;
}

// Refuses a shape of more values (of `value_size` bytes) than the file has bytes: these files
// are written uncompressed, so such a shape is damage, and reading it would allocate for it.
void check_fits(Id loc, const std::string& path, const Shape& s, std::size_t value_size) {
  const hsize_t bytes = file_bytes(loc);
  std::size_t n = 1;
  bool overflow = false;
  for (auto d : s) {
    if (d != 0 && n > SIZE_MAX / d) overflow = true;
    n *= d;
  }
  if (overflow || value_size == 0 || n > bytes / value_size)
    bad(loc, path, "shape " + shape_text(s) + " holds more values than the file has bytes (damaged)");
}

// Reads a string from a dataset or attribute of `loc`'s file: `read(memtype, buffer)` does
// the H5?read; `bad(problem)` throws naming the object.
template <class Read>
std::string read_string_from(Id loc, Id file_type, Id space, Read read,
                             const std::function<void(const std::string&)>& bad) {
  if (H5Sget_simple_extent_npoints(space) != 1) bad("expected one string");
  const H5T_cset_t cset = H5Tget_cset(file_type);
  if (H5Tis_variable_str(file_type) > 0) {
    // Never written so: refused before HDF5 reads its global heap.
    if (sealed_file(loc)) bad("a variable-length string in a sealed file (vortexhit writes fixed-length ones)");
    Handle mem = H5_ID(H5Tcopy(H5T_C_S1));
    H5_CHECK(H5Tset_size(mem, H5T_VARIABLE));
    H5_CHECK(H5Tset_cset(mem, cset));
    char* p = nullptr;
    H5_CHECK(read(mem.id(), static_cast<void*>(&p)));
    std::string s = p ? p : "";
    if (p) H5free_memory(p);
    return s;
  }
  const std::size_t n = H5Tget_size(file_type);
  if (n == 0 || n > file_bytes(loc)) bad("a string longer than its file (damaged)");
  Handle mem = H5_ID(H5Tcopy(H5T_C_S1));
  H5_CHECK(H5Tset_size(mem, n + 1));  // room for the terminator HDF5 adds
  H5_CHECK(H5Tset_cset(mem, cset));
  H5_CHECK(H5Tset_strpad(mem, H5T_STR_NULLTERM));
  std::vector<char> buf(n + 1, '\0');
  H5_CHECK(read(mem.id(), static_cast<void*>(buf.data())));
  return std::string(buf.data());
}

}  // namespace

// ---- files -------------------------------------------------------------------------------

Handle create_file(const std::string& path, bool sealed) {
  silence_errors();
  Handle fapl = file_access();
  Handle fcpl = H5_ID(H5Pcreate(H5P_FILE_CREATE));
  if (sealed) H5_CHECK(H5Pset_userblock(fcpl, kSealSize));
  const Id f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl, fapl);
  if (f < 0) throw LibraryError("cannot create HDF5 file " + path + " (" + hdf5_message() + ")",
                                __FILE__, __LINE__);
  return Handle(f);
}

namespace {
// The name `loc`'s file was opened or created under ("?" when HDF5 cannot say).
std::string file_name(Id loc) {
  const ssize_t n = H5Fget_name(loc, nullptr, 0);
  if (n <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return "?";
  }
  std::vector<char> b(std::size_t(n) + 1);
  H5Fget_name(loc, b.data(), b.size());
  return b.data();
}
}  // namespace

void close_file(Handle& file, bool seal) {
  const std::string name = file_name(file);
  if (H5Fclose(file.release()) < 0) fail("H5Fclose", __FILE__, __LINE__);
  if (seal) seal_file(name);
}

void check_file_seal(const std::string& path, Seal seal) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputError(path + ": no such file");
  if (seal != Seal::checked && !check_seal(path) && seal == Seal::required)
    throw InputError(path + ": no integrity seal (its first 512 bytes; written by another program or an "
                            "older vortexhit, or damaged there)");
}

Handle open_file(const std::string& path, Seal seal) {
  silence_errors();
  // Before HDF5 parses a byte: a damaged file never reaches it.
  check_file_seal(path, seal);
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(path + ": not an HDF5 file (or unreadable)");
  }
  Handle fapl = file_access();
  const Id f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
  if (f < 0) throw InputError(path + ": cannot open (" + hdf5_message() + ")");
  return Handle(f);
}

namespace {

[[noreturn]] void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), O_RDONLY | (directory ? O_DIRECTORY : 0));
  if (fd < 0) throw_errno(errno, "cannot open " + path + " to fsync");
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot fsync a directory (EINVAL); the rename is still atomic there.
  if (rc != 0 && !(directory && (err == EINVAL || err == EBADF))) throw_errno(err, "fsync " + path);
}

}  // namespace

std::string write_failure(const std::exception& e) {
  if (const auto* se = dynamic_cast<const std::system_error*>(&e)) return se->code().message();
  const std::string m = e.what();
  const auto at = m.find("errno = ");
  if (at != std::string::npos) {
    const int err = std::atoi(m.c_str() + at + 8);
    if (err > 0) return std::strerror(err);
  }
  return m;
}

void atomic_path(const std::string& path, const std::function<void(const std::string&)>& write) {
  namespace fs = std::filesystem;
  const std::string tmp = path + ".tmp";
  std::error_code ec;
  fs::remove(tmp, ec);  // a leftover from a crashed run
  try {
    write(tmp);
    fsync_path(tmp, false);
    fs::rename(tmp, path);  // rename(2): atomic replacement on one file system
    fs::path dir = fs::path(path).parent_path();
    fsync_path(dir.empty() ? std::string(".") : dir.string(), true);
  } catch (const WriteError&) {
    fs::remove(tmp, ec);
    throw;
  } catch (const DeviceFault&) {  // the GPU failed while its state was copied: not a failed write
    fs::remove(tmp, ec);
    throw;
  } catch (const std::system_error& e) {  // file system calls, including std::filesystem's
    fs::remove(tmp, ec);
    throw WriteError(path, write_failure(e));
  } catch (const LibraryError& e) {  // HDF5 could not write, flush or close the file
    fs::remove(tmp, ec);
    throw WriteError(path, write_failure(e));
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
}

void atomic_write_text(const std::string& path, const std::string& text) {
  atomic_path(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw_errno(errno, "cannot create " + tmp);
    out << text;
    out.close();
    if (!out) throw_errno(errno ? errno : EIO, "cannot write " + tmp);
  });
}

int remove_temporaries(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  int removed = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".tmp" && fs::remove(it->path(), ec)) ++removed;
  return removed;
}

// ---- groups and links --------------------------------------------------------------------

Handle create_group(Id loc, const std::string& path, bool track_order) {
  silence_errors();
  Handle lcpl = link_create();
  Handle gcpl = H5_ID(H5Pcreate(H5P_GROUP_CREATE));
  if (track_order)
    H5_CHECK(H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED));
  return H5_ID(H5Gcreate2(loc, path.c_str(), lcpl, gcpl, H5P_DEFAULT));
}

bool exists(Id loc, const std::string& path) {
  silence_errors();
  std::string prefix = (!path.empty() && path[0] == '/') ? "/" : "";
  std::size_t pos = 0;
  while (pos <= path.size()) {
    std::size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    const std::string part = path.substr(pos, next - pos);
    pos = next + 1;
    if (part.empty() || part == ".") continue;
    prefix += (prefix.empty() || prefix.back() == '/' ? "" : "/") + part;
    // Negative when an ancestor is not a group: the path does not exist either way.
    if (H5Lexists(loc, prefix.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
  }
  // Every link exists; make sure the last one resolves (no dangling soft link).
  const htri_t ok = H5Oexists_by_name(loc, path.empty() ? "." : path.c_str(), H5P_DEFAULT);
  H5Eclear2(H5E_DEFAULT);
  return ok > 0;
}

Handle open_group(Id loc, const std::string& path) {
  if (!exists(loc, path)) bad(loc, path, "group missing");
  const Id g = H5Gopen2(loc, path.c_str(), H5P_DEFAULT);
  if (g < 0) bad(loc, path, "not a group");
  return Handle(g);
}

Handle open_dataset(Id loc, const std::string& path) {
  if (!exists(loc, path)) bad(loc, path, "dataset missing");
  const Id d = H5Dopen2(loc, path.c_str(), H5P_DEFAULT);
  if (d < 0) bad(loc, path, "not a dataset");
  Handle h(d);
  // HDF5 1.10 reads a compact dataset (data in its header) without checking that the header's
  // buffer holds as many bytes as the dataset has (newer versions check): on a damaged header it
  // copies from a null or short buffer (found by fuzz_checkpoint). vortexhit writes no compact
  // datasets; other programs' must match.
  Handle dcpl = H5_ID(H5Dget_create_plist(h));
  if (H5Pget_layout(dcpl) == H5D_COMPACT) {
    Handle type = H5_ID(H5Dget_type(h));
    Handle space = H5_ID(H5Dget_space(h));
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    if (H5Tget_class(type) != H5T_VLEN && H5Tis_variable_str(type) <= 0 &&
        (n < 0 || H5Dget_storage_size(h) != hsize_t(n) * H5Tget_size(type)))
      bad(loc, path, "a compact dataset whose stored bytes do not match its size (damaged)");
  }
  return h;
}

namespace {
herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> children(Id loc, const std::string& path) {
  const ReadScope scope(loc, path);
  Handle g = open_group(loc, path);
  Handle gcpl = H5_ID(H5Gget_create_plist(g));
  unsigned flags = 0;
  H5_CHECK(H5Pget_link_creation_order(gcpl, &flags));
  const H5_index_t index =
      (flags & H5P_CRT_ORDER_INDEXED) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
  std::vector<std::string> names;
  hsize_t idx = 0;
  H5_CHECK(H5Literate(g, index, H5_ITER_INC, &idx, collect_name, &names));
  return names;
}

std::string where(Id loc, const std::string& path) {
  const std::string file = file_name(loc);
  std::string obj = "/";
  const ssize_t no = H5Iget_name(loc, nullptr, 0);
  if (no > 0) {
    std::vector<char> b(std::size_t(no) + 1);
    H5Iget_name(loc, b.data(), b.size());
    obj = b.data();
  }
  H5Eclear2(H5E_DEFAULT);
  std::string full;
  if (!path.empty() && path[0] == '/') full = path;
  else if (path.empty() || path == ".") full = obj;
  else full = obj + (obj.back() == '/' ? "" : "/") + path;
  return file + ":" + full;
}

// ---- writing -------------------------------------------------------------------------------

void write_doubles(Id loc, const std::string& path, const double* data, const Shape& shape) {
  Handle d = create_doubles(loc, path, shape);
  if (product(shape) > 0)
    H5_CHECK(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
}

void write_doubles(Id loc, const std::string& path, const std::vector<double>& v) {
  write_doubles(loc, path, v.data(), {v.size()});
}

void write_doubles_2d(Id loc, const std::string& path, const std::vector<double>& v,
                      std::size_t rows, std::size_t cols) {
  VH_CHECK(v.size() == rows * cols, "write_doubles_2d: size is not rows*cols for " + path);
  write_doubles(loc, path, v.data(), {rows, cols});
}

void write_int64s(Id loc, const std::string& path, const std::vector<std::int64_t>& v) {
  silence_errors();
  Handle space = simple_space({v.size()});
  Handle lcpl = link_create();
  Handle d = H5_ID(H5Dcreate2(loc, path.c_str(), H5T_STD_I64LE, space, lcpl, H5P_DEFAULT,
                              H5P_DEFAULT));
  if (!v.empty())
    H5_CHECK(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
}

void write_string(Id loc, const std::string& path, const std::string& s) {
  silence_errors();
  Handle type = utf8_string(s);
  Handle space = H5_ID(H5Screate(H5S_SCALAR));
  Handle lcpl = link_create();
  Handle d = H5_ID(H5Dcreate2(loc, path.c_str(), type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT));
  H5_CHECK(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.empty() ? "" : s.data()));
}

Handle create_doubles(Id loc, const std::string& path, const Shape& shape) {
  silence_errors();
  Handle space = simple_space(shape);
  Handle lcpl = link_create();
  return H5_ID(H5Dcreate2(loc, path.c_str(), H5T_IEEE_F64LE, space, lcpl, H5P_DEFAULT,
                          H5P_DEFAULT));
}

namespace {
// File and memory dataspaces for rows [first, first+count) along the slowest index.
std::pair<Handle, Handle> row_spaces(Id dataset, std::size_t first, std::size_t count) {
  Handle file_space = H5_ID(H5Dget_space(dataset));
  Shape s = space_shape(file_space);
  VH_CHECK(!s.empty() && first + count <= s[0], "row range outside the dataset");
  std::vector<hsize_t> start(s.size(), 0), n(s.begin(), s.end());
  start[0] = first;
  n[0] = count;
  H5_CHECK(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start.data(), nullptr, n.data(),
                               nullptr));
  Handle mem_space = H5_ID(H5Screate_simple(int(n.size()), n.data(), nullptr));
  return {std::move(file_space), std::move(mem_space)};
}
}  // namespace

void write_rows(Id dataset, std::size_t first, std::size_t count, const double* data) {
  if (count == 0) return;
  auto [file_space, mem_space] = row_spaces(dataset, first, count);
  H5_CHECK(H5Dwrite(dataset, H5T_NATIVE_DOUBLE, mem_space, file_space, H5P_DEFAULT, data));
}

namespace {
Handle replace_attribute(Id obj, const std::string& name, Id type, Id space) {
  silence_errors();
  const htri_t e = H5Aexists(obj, name.c_str());
  H5_CHECK(e);
  if (e > 0) H5_CHECK(H5Adelete(obj, name.c_str()));
  Handle acpl = H5_ID(H5Pcreate(H5P_ATTRIBUTE_CREATE));
  H5_CHECK(H5Pset_char_encoding(acpl, H5T_CSET_UTF8));
  return H5_ID(H5Acreate2(obj, name.c_str(), type, space, acpl, H5P_DEFAULT));
}
}  // namespace

void write_attribute(Id obj, const std::string& name, const std::string& value) {
  silence_errors();
  Handle type = utf8_string(value);
  Handle space = H5_ID(H5Screate(H5S_SCALAR));
  Handle a = replace_attribute(obj, name, type, space);
  H5_CHECK(H5Awrite(a, type, value.empty() ? "" : value.data()));
}

void write_attribute(Id obj, const std::string& name, double value) {
  silence_errors();
  Handle space = H5_ID(H5Screate(H5S_SCALAR));
  Handle a = replace_attribute(obj, name, H5T_IEEE_F64LE, space);
  H5_CHECK(H5Awrite(a, H5T_NATIVE_DOUBLE, &value));
}

void write_attribute(Id obj, const std::string& name, std::int64_t value) {
  silence_errors();
  Handle space = H5_ID(H5Screate(H5S_SCALAR));
  Handle a = replace_attribute(obj, name, H5T_STD_I64LE, space);
  H5_CHECK(H5Awrite(a, H5T_NATIVE_INT64, &value));
}

// ---- reading -------------------------------------------------------------------------------

Shape shape(Id loc, const std::string& path) {
  const ReadScope scope(loc, path);
  Handle d = open_dataset(loc, path);
  Handle space = H5_ID(H5Dget_space(d));
  return space_shape(space);
}

namespace {
/// Dataset `path` of `loc`, numeric and with data; its shape, checked against the file's size.
Handle open_numeric(Id loc, const std::string& path, Shape& s) {
  Handle d = open_dataset(loc, path);
  Handle type = H5_ID(H5Dget_type(d));
  const H5T_class_t cls = H5Tget_class(type);
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) bad(loc, path, "not a numeric dataset");
  Handle space = H5_ID(H5Dget_space(d));
  if (H5Sget_simple_extent_type(space) != H5S_SIMPLE && H5Sget_simple_extent_type(space) != H5S_SCALAR)
    bad(loc, path, "has no data");
  s = space_shape(space);
  check_fits(loc, path, s, H5Tget_size(type));
  return d;
}
}  // namespace

std::vector<double> read_doubles(Id loc, const std::string& path, Shape* shape_out) {
  const ReadScope scope(loc, path);
  Shape s;
  Handle d = open_numeric(loc, path, s);
  std::vector<double> v(product(s));
  if (!v.empty())
    H5_CHECK(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
  if (shape_out) *shape_out = s;
  return v;
}

Handle open_doubles(Id loc, const std::string& path, const Shape& expected) {
  const ReadScope scope(loc, path);
  // Check the shape before anything else (cheap refusal of a wrong large field).
  const Shape s0 = shape(loc, path);
  if (s0 != expected) bad(loc, path, "shape " + shape_text(s0) + ", expected " + shape_text(expected));
  Shape s;
  return open_numeric(loc, path, s);
}

std::vector<double> read_doubles(Id loc, const std::string& path, const Shape& expected) {
  const ReadScope scope(loc, path);
  Handle d = open_doubles(loc, path, expected);
  std::vector<double> v(product(expected));
  if (!v.empty())
    H5_CHECK(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
  return v;
}

std::vector<std::int64_t> read_int64s(Id loc, const std::string& path) {
  const ReadScope scope(loc, path);
  Handle d = open_dataset(loc, path);
  Handle type = H5_ID(H5Dget_type(d));
  if (H5Tget_class(type) != H5T_INTEGER) bad(loc, path, "not an integer dataset");
  Handle space = H5_ID(H5Dget_space(d));
  Shape s = space_shape(space);
  if (s.size() != 1) bad(loc, path, "shape " + shape_text(s) + ", expected 1-D");
  check_fits(loc, path, s, H5Tget_size(type));
  std::vector<std::int64_t> v(s[0]);
  if (!v.empty())
    H5_CHECK(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
  return v;
}

void read_rows(Id dataset, std::size_t first, std::size_t count, double* data) {
  if (count == 0) return;
  const ReadScope scope(dataset, ".");
  auto [file_space, mem_space] = row_spaces(dataset, first, count);
  H5_CHECK(H5Dread(dataset, H5T_NATIVE_DOUBLE, mem_space, file_space, H5P_DEFAULT, data));
}

void write_block(Id dataset, const Shape& start, const Shape& count, const double* data) {
  if (product(count) == 0) return;
  Handle file_space = H5_ID(H5Dget_space(dataset));
  const std::vector<hsize_t> s(start.begin(), start.end()), c(count.begin(), count.end());
  H5_CHECK(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, s.data(), nullptr, c.data(), nullptr));
  Handle mem_space = H5_ID(H5Screate_simple(int(c.size()), c.data(), nullptr));
  H5_CHECK(H5Dwrite(dataset, H5T_NATIVE_DOUBLE, mem_space, file_space, H5P_DEFAULT, data));
}

void read_strided(Id dataset, const Shape& start, const Shape& stride, const Shape& count, const Shape& block,
                  double* mem, std::size_t mem_size, std::size_t mem_first, std::size_t mem_stride,
                  std::size_t mem_block) {
  const std::size_t blocks = product(count);
  if (blocks == 0 || product(block) == 0) return;
  const ReadScope scope(dataset, ".");
  VH_CHECK(mem_block == product(block) && mem_first + (blocks - 1) * mem_stride + mem_block <= mem_size,
           "read_strided: memory selection does not match the file's");
  Handle file_space = H5_ID(H5Dget_space(dataset));
  const std::vector<hsize_t> s0(start.begin(), start.end()), st(stride.begin(), stride.end()),
      c(count.begin(), count.end()), b(block.begin(), block.end());
  H5_CHECK(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, s0.data(), st.data(), c.data(), b.data()));
  const hsize_t msize = mem_size, mstart = mem_first, mstride = mem_stride, mcount = blocks, mblock = mem_block;
  Handle mem_space = H5_ID(H5Screate_simple(1, &msize, nullptr));
  H5_CHECK(H5Sselect_hyperslab(mem_space, H5S_SELECT_SET, &mstart, &mstride, &mcount, &mblock));
  H5_CHECK(H5Dread(dataset, H5T_NATIVE_DOUBLE, mem_space, file_space, H5P_DEFAULT, mem));
}

std::string read_string(Id loc, const std::string& path) {
  const ReadScope scope(loc, path);
  Handle d = open_dataset(loc, path);
  Handle type = H5_ID(H5Dget_type(d));
  if (H5Tget_class(type) != H5T_STRING) bad(loc, path, "not a string dataset");
  Handle space = H5_ID(H5Dget_space(d));
  return read_string_from(
      loc, type, space,
      [&](Id mem, void* buf) { return H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf); },
      [&](const std::string& problem) { bad(loc, path, problem); });
}

bool has_attribute(Id obj, const std::string& name) {
  silence_errors();
  const htri_t e = H5Aexists(obj, name.c_str());
  H5Eclear2(H5E_DEFAULT);
  return e > 0;
}

namespace {
Handle open_attribute(Id obj, const std::string& name) {
  if (!has_attribute(obj, name)) bad(obj, ".", "attribute '" + name + "' missing");
  return H5_ID(H5Aopen(obj, name.c_str(), H5P_DEFAULT));
}

template <class T>
T read_numeric_attribute(Id obj, const std::string& name, Id mem_type) {
  const ReadScope scope(obj, ".");
  Handle a = open_attribute(obj, name);
  Handle type = H5_ID(H5Aget_type(a));
  const H5T_class_t cls = H5Tget_class(type);
  Handle space = H5_ID(H5Aget_space(a));
  if ((cls != H5T_FLOAT && cls != H5T_INTEGER) || H5Sget_simple_extent_npoints(space) != 1)
    bad(obj, ".", "attribute '" + name + "' is not one number");
  T v{};
  H5_CHECK(H5Aread(a, mem_type, &v));
  return v;
}
}  // namespace

std::string read_string_attribute(Id obj, const std::string& name) {
  const ReadScope scope(obj, ".");
  Handle a = open_attribute(obj, name);
  Handle type = H5_ID(H5Aget_type(a));
  if (H5Tget_class(type) != H5T_STRING) bad(obj, ".", "attribute '" + name + "' is not a string");
  Handle space = H5_ID(H5Aget_space(a));
  return read_string_from(
      obj, type, space, [&](Id mem, void* buf) { return H5Aread(a, mem, buf); },
      [&](const std::string& problem) { bad(obj, ".", "attribute '" + name + "': " + problem); });
}

double read_double_attribute(Id obj, const std::string& name) {
  return read_numeric_attribute<double>(obj, name, H5T_NATIVE_DOUBLE);
}

std::int64_t read_int64_attribute(Id obj, const std::string& name) {
  return read_numeric_attribute<std::int64_t>(obj, name, H5T_NATIVE_INT64);
}

namespace {
herr_t collect_attr(hid_t, const char* name, const H5A_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}
}  // namespace

std::map<std::string, std::string> read_string_attributes(Id obj) {
  silence_errors();
  const ReadScope scope(obj, ".");
  std::vector<std::string> names;
  hsize_t idx = 0;
  H5_CHECK(H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_attr, &names));
  std::map<std::string, std::string> out;
  for (const auto& n : names) {
    Handle a = H5_ID(H5Aopen(obj, n.c_str(), H5P_DEFAULT));
    Handle type = H5_ID(H5Aget_type(a));
    if (H5Tget_class(type) == H5T_STRING) out[n] = read_string_attribute(obj, n);
  }
  return out;
}

}  // namespace vh::h5
