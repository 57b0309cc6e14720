// Small RAII layer over the HDF5 C API (serial HDF5 ≥ 1.10) for the run and fields files.
//
// This header does not include <hdf5.h>, so modules that only call these helpers need not
// see HDF5's include path: an `Id` is an hid_t (int64_t since HDF5 1.10; checked in h5.cpp).
//
// Errors: HDF5's automatic error printing is switched off the first time any function here
// runs. A failing library call throws vh::LibraryError (file:line plus HDF5's own message),
// except in the reading helpers: whatever fails there (a dataset, group or attribute missing,
// of the wrong type or shape, more values than the file can hold, or an HDF5 call refusing a
// damaged file) throws vh::InputError naming the file and the object ("run.h5:/deck"), as bad
// input files are user errors (exit status 2).
//
// Shapes are listed slowest index first, as HDF5 (and numpy/h5py) do: a field stored
// [z][y][x] has shape {N, N, N} with x varying fastest in memory.
//
// Strings are written as fixed-length UTF-8 scalars, NUL-padded (h5py: `.asstr()[()]`), not
// variable-length ones, whose global heap no checksum covers and HDF5 1.10 reads unsafely;
// the readers accept both, except variable-length ones in a sealed file (io/seal.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace vh::h5 {

using Id = std::int64_t;  ///< an hid_t
using Shape = std::vector<std::size_t>;

/// Owns one HDF5 identifier (file, group, dataset, dataspace, datatype, attribute, property
/// list) and closes it with the matching H5?close when destroyed. Move-only.
class Handle {
 public:
  Handle() = default;
  explicit Handle(Id id) : id_(id) {}
  Handle(Handle&& o) noexcept : id_(o.id_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { close(); }

  Id id() const { return id_; }
  operator Id() const { return id_; }  // NOLINT: lets a Handle go straight into H5 calls
  bool valid() const { return id_ >= 0; }
  void close() noexcept;  ///< closes now (errors ignored: nothing to do about them here)
  /// Gives up ownership: returns the identifier, which the caller must close.
  Id release() noexcept {
    const Id id = id_;
    id_ = -1;
    return id;
  }

 private:
  Id id_ = -1;
};

/// Switches HDF5's error printing off (idempotent; every function here calls it).
void silence_errors();

// ---- files -------------------------------------------------------------------------------

/// Creates (truncates) `path` for writing; `sealed` reserves the user block for an integrity
/// seal (io/seal.h), to be written by close_file(…, true).
Handle create_file(const std::string& path, bool sealed = false);
/// Closes a file being written, throwing vh::LibraryError if HDF5 cannot flush it (it writes
/// its metadata at close: a full disk often shows here first), then with `seal` writes its
/// integrity seal. Handle::close() ignores errors: files written for keeps end with this.
void close_file(Handle& file, bool seal = false);

/// Whether open_file() requires an integrity seal (io/seal.h), checks one when present, or
/// leaves it to a check_file_seal() made before (`checked`: a pass over the whole file once,
/// not at every open; a restart's ranks open the checkpoint that rank 0 checked).
enum class Seal { if_present, required, checked };
/// The seal check of open_file(): InputError naming `path` when it is missing, when its seal
/// is broken, or (Seal::required) when it has none.
void check_file_seal(const std::string& path, Seal seal);
/// Opens an existing file read-only; InputError naming `path` when missing, not HDF5, or when
/// its seal is broken (or missing, with Seal::required). The seal is checked before HDF5
/// parses anything.
Handle open_file(const std::string& path, Seal seal = Seal::if_present);

/// Writes a file under `path` crash-safely: `write(tmp)` produces `<path>.tmp` (and must
/// close it), which is fsync'ed and renamed over `path`, then the folder is fsync'ed. If
/// anything fails, the temporary is removed, `path` is left as it was and vh::WriteError
/// names `path` and the reason (no space, file too large, permission, folder gone); a logic
/// error of `write` (std::invalid_argument, ...) propagates as it is. rename(2) replaces
/// atomically, so readers see the old or the new file, never a part.
void atomic_path(const std::string& path, const std::function<void(const std::string& tmp)>& write);
/// Why a write failed, in words a user can act on: the system's text for the error ("No space
/// left on device", "File too large", "Permission denied"), which HDF5 puts in its message as
/// "errno = 28"; else the message itself.
std::string write_failure(const std::exception& e);
/// atomic_path() for a text file.
void atomic_write_text(const std::string& path, const std::string& text);
/// Removes the files of folder `dir` named `*.tmp` (atomic_path's temporaries) and returns how
/// many: for a rank that ends an R-rank job (MPI_Abort) while rank 0 may be inside a collective
/// write, which the abort cuts short before atomic_path can remove its temporary. Errors (no
/// such folder, a file already gone or renamed by its writer) are ignored.
int remove_temporaries(const std::string& dir);

// ---- groups and links --------------------------------------------------------------------

/// Creates group `path` below `loc`, intermediate groups included. With `track_order` the
/// group records link creation order, so children() lists them in the order written.
Handle create_group(Id loc, const std::string& path, bool track_order = false);
/// Opens an existing group; InputError when missing.
Handle open_group(Id loc, const std::string& path);
/// Opens an existing dataset; InputError when missing.
Handle open_dataset(Id loc, const std::string& path);
/// Whether every link along `path` (relative or absolute) exists below `loc`.
bool exists(Id loc, const std::string& path);
/// Names of the links in group `path` of `loc`: creation order when the group tracks it,
/// alphabetical otherwise.
std::vector<std::string> children(Id loc, const std::string& path = ".");
/// "file.h5:/abs/path" of `path` below `loc`, for messages.
std::string where(Id loc, const std::string& path);

// ---- writing (datasets are contiguous, native little-endian types; intermediate groups
// are created) -------------------------------------------------------------------------

/// Double dataset of any rank: `data` holds prod(shape) values, last index fastest.
void write_doubles(Id loc, const std::string& path, const double* data, const Shape& shape);
/// 1-D double dataset.
void write_doubles(Id loc, const std::string& path, const std::vector<double>& v);
/// 2-D double dataset rows × cols from row-major `v` (v.size() == rows·cols).
void write_doubles_2d(Id loc, const std::string& path, const std::vector<double>& v,
                      std::size_t rows, std::size_t cols);
/// 1-D int64 dataset.
void write_int64s(Id loc, const std::string& path, const std::vector<std::int64_t>& v);
/// Scalar variable-length UTF-8 string dataset.
void write_string(Id loc, const std::string& path, const std::string& s);

/// Creates an uninitialised double dataset of `shape`, to be filled by write_rows().
Handle create_doubles(Id loc, const std::string& path, const Shape& shape);
/// Writes rows [first, first+count) along the slowest index of `dataset`: `data` holds
/// count · (product of the other extents) values. Lets large fields go out slab by slab.
void write_rows(Id dataset, std::size_t first, std::size_t count, const double* data);

/// Attributes on an object (file, group or dataset); an existing one is replaced.
void write_attribute(Id obj, const std::string& name, const std::string& value);
void write_attribute(Id obj, const std::string& name, double value);
void write_attribute(Id obj, const std::string& name, std::int64_t value);

// ---- reading (InputError naming file and object on anything missing or malformed) ----------

/// Shape of dataset `path`.
Shape shape(Id loc, const std::string& path);
/// A numeric dataset of any rank as doubles (integers converted); `shape_out` gets its shape.
std::vector<double> read_doubles(Id loc, const std::string& path, Shape* shape_out = nullptr);
/// The same, requiring exactly `expected` as shape.
std::vector<double> read_doubles(Id loc, const std::string& path, const Shape& expected);
/// A 1-D integer dataset as int64.
std::vector<std::int64_t> read_int64s(Id loc, const std::string& path);
/// A numeric dataset of exactly `expected` as shape, opened for read_rows() (a large array read
/// in parts); InputError as read_doubles() gives.
Handle open_doubles(Id loc, const std::string& path, const Shape& expected);
/// Rows [first, first+count) along the slowest index of an open double dataset.
void read_rows(Id dataset, std::size_t first, std::size_t count, double* data);

/// Writes the block [start, start + count) of an open double dataset from `data`
/// (prod(count) values, last index fastest).
void write_block(Id dataset, const Shape& start, const Shape& count, const double* data);
/// Reads the file selection of H5Sselect_hyperslab(start, stride, count, block) of an open
/// double dataset into `mem` (an array of mem_size values): the selection's values, in file
/// order, go in runs of mem_block to mem_first + i · mem_stride. For parts of a global array
/// (a rank's slab of a checkpoint).
void read_strided(Id dataset, const Shape& start, const Shape& stride, const Shape& count, const Shape& block,
                  double* mem, std::size_t mem_size, std::size_t mem_first, std::size_t mem_stride,
                  std::size_t mem_block);
/// A scalar string dataset.
std::string read_string(Id loc, const std::string& path);

bool has_attribute(Id obj, const std::string& name);
std::string read_string_attribute(Id obj, const std::string& name);
double read_double_attribute(Id obj, const std::string& name);
std::int64_t read_int64_attribute(Id obj, const std::string& name);
/// Every string attribute of `obj` (others are skipped), by name.
std::map<std::string, std::string> read_string_attributes(Id obj);

}  // namespace vh::h5
