// HDF5 I/O: run.h5 round trip and layout (docs/design.md "Files a run writes"), atomic writes,
// the integrity seal (io/seal.h), fields files' index order and their XDMF sidecars
// (docs/style.md "Fields for ParaView/VisIt").
// Layout checks open the files with the raw HDF5 C API, not through our own readers, so a
// bug shared by writer and reader cannot hide.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>

#include "base/error.h"
#include "io/fields_file.h"
#include "io/h5.h"
#include "io/run_file.h"
#include "io/seal.h"

namespace fs = std::filesystem;
using namespace vh;

namespace {

// A fresh folder per test under the system temp dir, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("vh_test_io_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

bool has_tmp(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".tmp") return true;
  return false;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Raw C API: dims of a dataset, empty when it does not exist.
std::vector<hsize_t> raw_dims(hid_t f, const std::string& path) {
  if (H5Lexists(f, path.c_str(), H5P_DEFAULT) <= 0) return {};
  hid_t d = H5Dopen2(f, path.c_str(), H5P_DEFAULT);
  hid_t s = H5Dget_space(d);
  std::vector<hsize_t> dims(std::size_t(H5Sget_simple_extent_ndims(s)));
  H5Sget_simple_extent_dims(s, dims.data(), nullptr);
  H5Sclose(s);
  H5Dclose(d);
  return dims;
}

// Existence of every prefix of an absolute path (H5Lexists needs the parents to exist).
bool raw_exists(hid_t f, const std::string& path) {
  std::size_t pos = 1;
  while (true) {
    const std::size_t next = path.find('/', pos);
    const std::string prefix = path.substr(0, next);
    if (H5Lexists(f, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (next == std::string::npos) return true;
    pos = next + 1;
  }
}

std::vector<double> raw_read(hid_t f, const std::string& path, std::size_t count) {
  std::vector<double> v(count);
  hid_t d = H5Dopen2(f, path.c_str(), H5P_DEFAULT);
  EXPECT_GE(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0) << path;
  H5Dclose(d);
  return v;
}

using Row = std::vector<std::pair<std::string, double>>;

Row standard_row(double t, double step) {
  Row r;
  for (std::size_t i = 0; i < kSeriesNames.size(); ++i)
    r.emplace_back(kSeriesNames[i], t * 10.0 + double(i) + 1.0 / 3.0);
  r[0].second = t;
  r[1].second = step;
  return r;
}

RunFile sample_run(const std::string& path) {
  RunFile rf(path);
  rf.set_deck("# quick deck, π and ε in UTF-8\n[case]\nname = quick\n[domain]\nN = 32\n");
  rf.set_meta({{"version", "0.1.0"}, {"git_hash", "abc123-dirty"}, {"ranks", "1"},
               {"argv", "vortexhit run inputs/quick.ini --domain.N=32"}});
  rf.append_series("initial", standard_row(0.0, 0.0));
  std::vector<double> E0(17);
  for (std::size_t n = 0; n < E0.size(); ++n) E0[n] = std::pow(double(n), 4) * std::exp(-0.5 * n);
  rf.append_spectrum("initial", 0.0, E0);
  for (int s = 0; s < 3; ++s) {
    Row r = standard_row(0.1 * s, 10.0 * s);
    r.emplace_back("enstrophy", 1e-3 * s + std::sqrt(2.0));  // a solver's extra column
    rf.append_series("spectral", r);
    std::vector<double> E = E0;
    for (auto& e : E) e *= std::exp(-0.3 * s);
    rf.append_spectrum("spectral", 0.1 * s, E);
  }
  return rf;
}

}  // namespace

// ---- run.h5 --------------------------------------------------------------------------------

TEST(RunFile, RoundTripIsExact) {
  TempDir dir;
  RunFile rf = sample_run(dir / "run.h5");
  // A blown-up run writes NaN; it must come back as NaN.
  rf.append_series("vortex", standard_row(0.0, 0.0));
  Row bad = standard_row(0.1, 1.0);
  bad[3].second = std::numeric_limits<double>::quiet_NaN();
  rf.append_series("vortex", bad);
  rf.write();
  const RunData back = RunFile::read(dir / "run.h5");
  EXPECT_TRUE(back == rf.data());
  EXPECT_EQ(back.deck, rf.data().deck);
  EXPECT_EQ(back.meta, rf.data().meta);
  ASSERT_EQ(back.solvers.count("spectral"), 1u);
  // Column order is the order appended, not alphabetical.
  std::vector<std::string> expect = kSeriesNames;
  expect.push_back("enstrophy");
  EXPECT_EQ(back.solvers.at("spectral").names, expect);
  EXPECT_EQ(back.solvers.at("spectral").outputs(), 3u);
  EXPECT_TRUE(std::isnan(back.solvers.at("vortex").series.at("K")[1]));
  EXPECT_TRUE(back.solvers.at("vortex").E.empty());
  EXPECT_FALSE(has_tmp(dir.path()));
}

TEST(RunFile, LayoutMatchesDesign) {
  TempDir dir;
  RunFile rf = sample_run(dir / "run.h5");
  rf.write();
  hid_t f = H5Fopen((dir / "run.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);

  // /deck: scalar string
  hid_t d = H5Dopen2(f, "/deck", H5P_DEFAULT);
  ASSERT_GE(d, 0);
  hid_t ty = H5Dget_type(d);
  EXPECT_EQ(H5Tget_class(ty), H5T_STRING);
  hid_t sp = H5Dget_space(d);
  EXPECT_EQ(H5Sget_simple_extent_type(sp), H5S_SCALAR);
  H5Sclose(sp);
  H5Tclose(ty);
  H5Dclose(d);

  // /meta: a group carrying string attributes
  hid_t meta = H5Gopen2(f, "/meta", H5P_DEFAULT);
  ASSERT_GE(meta, 0);
  for (const char* a : {"version", "git_hash", "ranks", "argv"}) {
    EXPECT_GT(H5Aexists(meta, a), 0) << a;
    hid_t at = H5Aopen(meta, a, H5P_DEFAULT);
    hid_t at_ty = H5Aget_type(at);
    EXPECT_EQ(H5Tget_class(at_ty), H5T_STRING) << a;
    H5Tclose(at_ty);
    H5Aclose(at);
  }
  H5Gclose(meta);

  // series: 1-D double, one entry per output
  for (const auto& name : kSeriesNames) {
    EXPECT_EQ(raw_dims(f, "/initial/series/" + name), std::vector<hsize_t>{1}) << name;
    EXPECT_EQ(raw_dims(f, "/spectral/series/" + name), std::vector<hsize_t>{3}) << name;
  }
  EXPECT_EQ(raw_dims(f, "/spectral/series/enstrophy"), std::vector<hsize_t>{3});
  EXPECT_FALSE(raw_exists(f, "/initial/series/enstrophy"));
  EXPECT_FALSE(raw_exists(f, "/vortex"));
  hid_t kd = H5Dopen2(f, "/spectral/series/K", H5P_DEFAULT);
  hid_t kt = H5Dget_type(kd);
  EXPECT_EQ(H5Tget_class(kt), H5T_FLOAT);
  EXPECT_EQ(H5Tget_size(kt), 8u);
  H5Tclose(kt);
  H5Dclose(kd);
  const auto step = raw_read(f, "/spectral/series/step", 3);
  EXPECT_EQ(step, (std::vector<double>{0, 10, 20}));

  // spectra: k 0..nmax, t per output, E [output][shell]
  EXPECT_EQ(raw_dims(f, "/spectral/spectra/k"), std::vector<hsize_t>{17});
  EXPECT_EQ(raw_dims(f, "/spectral/spectra/t"), std::vector<hsize_t>{3});
  EXPECT_EQ(raw_dims(f, "/spectral/spectra/E"), (std::vector<hsize_t>{3, 17}));
  EXPECT_EQ(raw_dims(f, "/initial/spectra/E"), (std::vector<hsize_t>{1, 17}));
  const auto k = raw_read(f, "/spectral/spectra/k", 17);
  for (int n = 0; n < 17; ++n) EXPECT_EQ(k[std::size_t(n)], double(n));
  const auto E = raw_read(f, "/spectral/spectra/E", 3 * 17);
  // Row 2, shell 5 must be the third spectrum's shell 5 (row-major output × shell).
  EXPECT_EQ(E[2 * 17 + 5], rf.data().solvers.at("spectral").E[2][5]);
  H5Fclose(f);
}

TEST(RunFile, AppendChecksConsistency) {
  RunFile rf("unused.h5");
  rf.append_series("spectral", {{"t", 0}, {"K", 1}});
  EXPECT_THROW(rf.append_series("spectral", {{"t", 1}}), std::logic_error);
  EXPECT_THROW(rf.append_series("spectral", {{"K", 1}, {"t", 0}}), std::logic_error);
  EXPECT_THROW(rf.append_series("spectral", {{"t", 1}, {"t", 2}}), std::logic_error);
  EXPECT_THROW(rf.append_series("fluid", {{"t", 0}}), std::logic_error);
  EXPECT_THROW(rf.append_series("vortex", {}), std::logic_error);
  rf.append_spectrum("vortex", 0.0, {0, 1, 2});
  EXPECT_THROW(rf.append_spectrum("vortex", 1.0, {0, 1}), std::logic_error);
  EXPECT_NO_THROW(rf.append_series("spectral", {{"t", 1}, {"K", 0.5}}));
  EXPECT_EQ(rf.data().solvers.at("spectral").outputs(), 2u);
}

TEST(RunFile, ReadRejectsMalformedFilesNamingFileAndDataset) {
  TempDir dir;
  auto message = [](const std::string& path) -> std::string {
    try {
      RunFile::read(path);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no InputError";
  };
  EXPECT_NE(message(dir / "missing.h5").find("missing.h5"), std::string::npos);
  {
    std::ofstream(dir / "text.h5") << "not hdf5\n";
  }
  EXPECT_NE(message(dir / "text.h5").find("not an HDF5 file"), std::string::npos);

  {  // no /deck
    h5::Handle f = h5::create_file(dir / "nodeck.h5");
    h5::create_group(f, "/meta");
  }
  std::string m = message(dir / "nodeck.h5");
  EXPECT_NE(m.find("nodeck.h5"), std::string::npos) << m;
  EXPECT_NE(m.find("/deck"), std::string::npos) << m;

  {  // series of unequal length
    h5::Handle f = h5::create_file(dir / "ragged.h5");
    h5::write_string(f, "/deck", "");
    h5::create_group(f, "/meta");
    h5::create_group(f, "/spectral/series", true);
    h5::write_doubles(f, "/spectral/series/t", std::vector<double>{0, 1, 2});
    h5::write_doubles(f, "/spectral/series/K", std::vector<double>{1, 0.9});
  }
  m = message(dir / "ragged.h5");
  EXPECT_NE(m.find("ragged.h5:/spectral/series/K"), std::string::npos) << m;

  {  // E not [len t][len k]
    h5::Handle f = h5::create_file(dir / "badE.h5");
    h5::write_string(f, "/deck", "");
    h5::create_group(f, "/meta");
    h5::write_doubles(f, "/vortex/spectra/k", std::vector<double>{0, 1, 2});
    h5::write_doubles(f, "/vortex/spectra/t", std::vector<double>{0, 1});
    h5::write_doubles_2d(f, "/vortex/spectra/E", std::vector<double>(6, 1.0), 3, 2);
  }
  m = message(dir / "badE.h5");
  EXPECT_NE(m.find("badE.h5:/vortex/spectra/E"), std::string::npos) << m;
  EXPECT_NE(m.find("[3 2]"), std::string::npos) << m;
}

// ---- atomic writes -------------------------------------------------------------------------

TEST(AtomicPath, ReplacesOnlyOnSuccessAndLeavesNoTemporary) {
  TempDir dir;
  const std::string path = dir / "run.h5";
  RunFile first = sample_run(path);
  first.write();

  // A writer that dies half-way (after writing HDF5 data) must leave the old file intact.
  EXPECT_THROW(h5::atomic_path(path,
                               [](const std::string& tmp) {
                                 h5::Handle f = h5::create_file(tmp);
                                 h5::write_string(f, "/deck", "half-written");
                                 f.close();
                                 throw std::runtime_error("crash");
                               }),
               std::runtime_error);
  EXPECT_FALSE(has_tmp(dir.path()));
  EXPECT_TRUE(RunFile::read(path) == first.data());

  // A GPU that fails while its state is copied into the file (vh::DeviceFault, a LibraryError)
  // stays a DeviceFault, for the run driver to report as one, not as a failed write.
  EXPECT_THROW(h5::atomic_path(path,
                               [](const std::string& tmp) {
                                 h5::Handle f = h5::create_file(tmp);
                                 f.close();
                                 throw vh::DeviceFault("unspecified launch failure in cudaMemcpy", __FILE__, __LINE__);
                               }),
               vh::DeviceFault);
  EXPECT_FALSE(has_tmp(dir.path()));
  EXPECT_TRUE(RunFile::read(path) == first.data());

  // A stale temporary from a crashed run is cleared, and a good write replaces the file.
  std::ofstream(path + ".tmp") << "junk";
  RunFile second(path, first.data());
  second.set_deck("second");
  second.append_series("initial", standard_row(1.0, 1.0));
  second.write();
  EXPECT_FALSE(has_tmp(dir.path()));
  EXPECT_TRUE(RunFile::read(path) == second.data());

  // An aborted job's temporaries go, and only they (remove_temporaries).
  std::ofstream(path + ".tmp") << "cut short";
  std::ofstream(dir / "checkpoint.h5.tmp") << "cut short";
  EXPECT_EQ(h5::remove_temporaries(dir.path().string()), 2);
  EXPECT_FALSE(has_tmp(dir.path()));
  EXPECT_TRUE(RunFile::read(path) == second.data());
  EXPECT_EQ(h5::remove_temporaries((dir.path() / "no").string()), 0);

  // Writing into a folder that does not exist fails, names the file and why, creates nothing.
  RunFile nowhere((dir.path() / "no" / "run.h5").string());
  try {
    nowhere.write();
    ADD_FAILURE() << "no WriteError";
  } catch (const WriteError& e) {
    EXPECT_EQ(e.path(), nowhere.path());
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.path() / "no"));

  h5::atomic_write_text(dir / "a.txt", "one");
  h5::atomic_write_text(dir / "a.txt", "two");
  EXPECT_EQ(slurp(dir / "a.txt"), "two");
  EXPECT_FALSE(has_tmp(dir.path()));
}

// ---- integrity seal ------------------------------------------------------------------------

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Seal, HashIsXxh3AndSealedRunFilesReadAsPlainHdf5) {
  TempDir dir;
  // XXH3-64 as the xxHash reference program computes it (xxhsum -H3 of the same bytes, Debian
  // package xxhash 0.8.1): an independent check that the seal is the published hash.
  write_bytes(dir / "a", "ab");  // offset 2: the empty string
  EXPECT_EQ(file_hash(dir / "a", 2), 0x2d06800538d394c2ull);
  write_bytes(dir / "b", "..vortexhit");
  EXPECT_EQ(file_hash(dir / "b", 2), 0x912cef098c441445ull);

  const std::string path = dir / "run.h5";
  sample_run(path).write();
  EXPECT_TRUE(check_seal(path));
  const std::string bytes = read_bytes(path);
  char head[80];
  std::snprintf(head, sizeof head, "vortexhit seal 1\nxxh3-64 %016llx\nbytes %zu\n",
                static_cast<unsigned long long>(file_hash(path, kSealSize)), bytes.size());
  EXPECT_EQ(bytes.substr(0, std::strlen(head)), head);
  // Any HDF5 reader skips the seal: it is the user block.
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  hid_t fcpl = H5Fget_create_plist(f);
  hsize_t ub = 0;
  H5Pget_userblock(fcpl, &ub);
  EXPECT_EQ(ub, kSealSize);
  EXPECT_EQ(raw_dims(f, "/spectral/series/t"), (std::vector<hsize_t>{3}));
  H5Pclose(fcpl);
  H5Fclose(f);
}

TEST(Seal, EveryDamageIsRefusedNamingTheFile) {
  TempDir dir;
  const std::string good = dir / "good.h5";
  sample_run(good).write();
  const std::string bytes = read_bytes(good);
  ASSERT_GT(bytes.size(), 8192u);
  auto refused = [&](const std::string& damaged, const std::string& what) {
    const std::string path = dir / "damaged.h5";
    write_bytes(path, damaged);
    try {
      RunFile::read(path);
      ADD_FAILURE() << what << ": read without complaint";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(path + ": damaged"), std::string::npos) << what << ": " << e.what();
    }
  };
  std::string b = bytes;
  b[bytes.size() / 2] ^= 0x01;
  refused(b, "one bit flipped in the HDF5 part");
  b = bytes;
  b[30] = b[30] == 'f' ? 'e' : 'f';  // a digit of the stored hash
  refused(b, "the stored hash altered");
  b = bytes;
  b[kSealSize - 1] = 'x';
  refused(b, "the seal's padding altered");
  refused(bytes.substr(0, bytes.size() - 1), "one byte cut off");
  refused(bytes + '\0', "one byte appended");
  b = bytes;
  std::fill(b.begin() + 4096, b.begin() + 8192, '\0');
  refused(b, "a 4 KiB block zeroed");
  refused(bytes.substr(0, 600), "cut after the seal");

  // No seal: read as any HDF5 file, unless the reader requires one (a restart does).
  const std::string plain = dir / "plain.h5";
  {
    h5::Handle f = h5::create_file(plain);
    h5::write_string(f, "/deck", "");
    h5::create_group(f, "/meta");
  }
  EXPECT_FALSE(check_seal(plain));
  EXPECT_NO_THROW(RunFile::read(plain));
  try {
    RunFile::read(plain, /*require_seal=*/true);
    ADD_FAILURE() << "an unsealed file passed a required seal";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(plain + ": no integrity seal"), std::string::npos) << e.what();
  }
}

// ---- h5 helpers ----------------------------------------------------------------------------

TEST(H5, ShapesLargerThanTheFileAreRefusedBeforeReading) {
  TempDir dir;
  const std::string path = dir / "huge.h5";
  {
    // A contiguous dataset's storage is allocated when written: declared, never written, it
    // claims 2^40 values in a file of a few KiB, as a damaged dataspace would.
    h5::Handle f = h5::create_file(path);
    h5::create_doubles(f, "/x", {std::size_t(1) << 20, std::size_t(1) << 20});
  }
  h5::Handle f = h5::open_file(path);
  try {
    h5::read_doubles(f, "/x");
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("huge.h5:/x: shape [1048576 1048576] holds more values than the file"),
              std::string::npos) << e.what();
  }
}

TEST(H5, HelpersRoundTripAndCheckShapes) {
  TempDir dir;
  const std::string path = dir / "x.h5";
  {
    h5::Handle f = h5::create_file(path);
    h5::write_int64s(f, "/a/b/ints", {1, -2, std::int64_t(1) << 40});
    h5::write_doubles(f, "/a/nd", std::vector<double>(24, 0.5).data(), {2, 3, 4});
    h5::Handle g = h5::create_group(f, "/ordered", true);
    for (const char* n : {"z", "a", "m"}) h5::write_doubles(g, n, std::vector<double>{1});
    h5::write_attribute(g, "s", std::string("text"));
    h5::write_attribute(g, "d", 0.25);
    h5::write_attribute(g, "i", std::int64_t(7));
    h5::write_attribute(g, "d", 0.5);  // replaces
  }
  h5::Handle f = h5::open_file(path);
  EXPECT_EQ(h5::read_int64s(f, "/a/b/ints"), (std::vector<std::int64_t>{1, -2, std::int64_t(1) << 40}));
  EXPECT_EQ(h5::shape(f, "/a/nd"), (h5::Shape{2, 3, 4}));
  EXPECT_EQ(h5::read_doubles(f, "/a/nd", h5::Shape{2, 3, 4}).size(), 24u);
  EXPECT_THROW(h5::read_doubles(f, "/a/nd", h5::Shape{4, 3, 2}), InputError);
  EXPECT_THROW(h5::read_doubles(f, "/a/missing"), InputError);
  EXPECT_THROW(h5::read_doubles(f, "/a/b/ints/deeper"), InputError);
  EXPECT_THROW(h5::read_string(f, "/a/nd"), InputError);
  EXPECT_EQ(h5::children(f, "/ordered"), (std::vector<std::string>{"z", "a", "m"}));
  EXPECT_EQ(h5::children(f, "/a"), (std::vector<std::string>{"b", "nd"}));
  h5::Handle g = h5::open_group(f, "/ordered");
  EXPECT_EQ(h5::read_string_attribute(g, "s"), "text");
  EXPECT_EQ(h5::read_double_attribute(g, "d"), 0.5);
  EXPECT_EQ(h5::read_int64_attribute(g, "i"), 7);
  EXPECT_THROW(h5::read_double_attribute(g, "nope"), InputError);
  EXPECT_EQ(h5::read_string_attributes(g), (std::map<std::string, std::string>{{"s", "text"}}));
  EXPECT_TRUE(h5::exists(f, "/a/b/ints"));
  EXPECT_FALSE(h5::exists(f, "/a/b/ints/x"));
  EXPECT_FALSE(h5::exists(f, "/q/r"));
  EXPECT_EQ(h5::where(g, "z"), path + ":/ordered/z");
}

// ---- fields files and XDMF -----------------------------------------------------------------

namespace {

// Distinct, exactly representable values that encode (component, i, j, k).
double code(int c, int i, int j, int k, double offset) {
  return offset + c + 10.0 * i + 1000.0 * j + 100000.0 * k;
}

struct SolverFields {
  VectorField u, w;
  ScalarField q;
  SolverFields(int n, double offset) : u(Grid{n}), w(Grid{n}), q(Grid{n}) {
    const Grid g{n};
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
          for (int c = 0; c < 3; ++c) {
            u.c[std::size_t(c)][g.index(i, j, k)] = code(c, i, j, k, offset);
            w.c[std::size_t(c)][g.index(i, j, k)] = -code(c, i, j, k, offset);
          }
          q.v[g.index(i, j, k)] = code(5, i, j, k, offset);
        }
  }
  FieldSet set(std::int64_t step) const { return FieldSet{&u, &w, &q, step}; }
};

struct DataRef {
  std::string dims, file, path;
};

// Every <DataItem ... Format="HDF">file:/path</DataItem> of an XDMF text.
std::vector<DataRef> hdf_items(const std::string& xml) {
  std::vector<DataRef> out;
  static const std::regex item(R"(<DataItem([^>]*)>([^<]*)</DataItem>)");
  static const std::regex dims(R"re(Dimensions="([^"]*)")re");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), item); it != std::sregex_iterator(); ++it) {
    const std::string attrs = (*it)[1], text = (*it)[2];
    if (attrs.find("Format=\"HDF\"") == std::string::npos) continue;
    std::smatch m;
    EXPECT_TRUE(std::regex_search(attrs, m, dims)) << attrs;
    const auto colon = text.find(':');
    out.push_back({m[1], text.substr(0, colon), text.substr(colon + 1)});
  }
  return out;
}

std::vector<std::string> matches(const std::string& xml, const std::string& re) {
  std::vector<std::string> out;
  const std::regex r(re);
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), r); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

bool have_xmllint() { return std::system("command -v xmllint >/dev/null 2>&1") == 0; }

// Well-formed, and every HDF path exists (relative to the xdmf) with the stated dimensions.
void check_xdmf(const std::string& xdmf, std::size_t expected_items) {
  SCOPED_TRACE(xdmf);
  if (have_xmllint()) {
    EXPECT_EQ(std::system(("xmllint --noout '" + xdmf + "'").c_str()), 0);
  }
  const std::string xml = slurp(xdmf);
  const auto items = hdf_items(xml);
  EXPECT_EQ(items.size(), expected_items);
  for (const auto& r : items) {
    EXPECT_EQ(r.file.find('/'), std::string::npos) << "path not relative: " << r.file;
    const fs::path h5 = fs::path(xdmf).parent_path() / r.file;
    hid_t f = H5Fopen(h5.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(f, 0) << h5;
    std::string dims;
    for (auto d : raw_dims(f, r.path)) dims += (dims.empty() ? "" : " ") + std::to_string(d);
    EXPECT_EQ(dims, r.dims) << r.file << ":" << r.path;
    H5Fclose(f);
  }
  EXPECT_EQ(xml.find("Center=\"Cell\""), std::string::npos);
}

}  // namespace

TEST(Fields, ValueOfPointIJKComponentCLandsAtKJIC) {
  TempDir dir;
  const int n = 8;
  const SolverFields spectral(n, 0.0), vortex(n, 0.5);
  const std::string h5 = write_fields(dir.path().string(), 3, 1.25,
                                      {{"spectral", spectral.set(40)}, {"vortex", vortex.set(20)}});
  EXPECT_EQ(h5, dir / "fields_0003.h5");
  EXPECT_FALSE(has_tmp(dir.path()));

  hid_t f = H5Fopen(h5.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hsize_t N = n;
  for (const char* s : {"spectral", "vortex"}) {
    const std::string g = std::string("/") + s;
    ASSERT_EQ(raw_dims(f, g + "/velocity"), (std::vector<hsize_t>{N, N, N, 3}));
    ASSERT_EQ(raw_dims(f, g + "/vorticity"), (std::vector<hsize_t>{N, N, N, 3}));
    ASSERT_EQ(raw_dims(f, g + "/Q"), (std::vector<hsize_t>{N, N, N}));
  }
  const auto u = raw_read(f, "/vortex/velocity", std::size_t(n) * n * n * 3);
  const auto w = raw_read(f, "/spectral/vorticity", std::size_t(n) * n * n * 3);
  const auto q = raw_read(f, "/spectral/Q", std::size_t(n) * n * n);
  int wrong = 0;
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        const std::size_t p = (std::size_t(k) * n + j) * n + i;  // [k][j][i]
        for (int c = 0; c < 3; ++c) {
          wrong += u[3 * p + std::size_t(c)] != code(c, i, j, k, 0.5);
          wrong += w[3 * p + std::size_t(c)] != -code(c, i, j, k, 0.0);
        }
        wrong += q[p] != code(5, i, j, k, 0.0);
      }
  EXPECT_EQ(wrong, 0);
  // Spot checks spelled out: point (i, j, k) = (1, 2, 3), component y, and (7, 0, 5) in z.
  EXPECT_EQ(u[3 * ((3 * 8 + 2) * 8 + 1) + 1], 0.5 + 1 + 10 + 2000 + 300000);
  EXPECT_EQ(u[3 * ((5 * 8 + 0) * 8 + 7) + 2], 0.5 + 2 + 70 + 0 + 500000);

  // Attributes t and step per solver.
  for (auto [s, step] : {std::pair<const char*, std::int64_t>{"spectral", 40}, {"vortex", 20}}) {
    hid_t g = H5Gopen2(f, s, H5P_DEFAULT);
    double t = 0;
    std::int64_t st = 0;
    hid_t a = H5Aopen(g, "t", H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_DOUBLE, &t);
    H5Aclose(a);
    a = H5Aopen(g, "step", H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_INT64, &st);
    H5Aclose(a);
    H5Gclose(g);
    EXPECT_EQ(t, 1.25) << s;
    EXPECT_EQ(st, step) << s;
  }
  H5Fclose(f);

  // Our readers invert the writer.
  const VectorField back = read_vector_field(h5, "vortex", "velocity");
  EXPECT_EQ(back.grid.n, n);
  EXPECT_EQ(back.c, vortex.u.c);
  EXPECT_EQ(read_scalar_field(h5, "spectral").v, spectral.q.v);
  EXPECT_EQ(fields_solvers(h5), (std::map<std::string, double>{{"spectral", 1.25}, {"vortex", 1.25}}));
  EXPECT_THROW(read_vector_field(h5, "spectral", "Q"), InputError);
  EXPECT_THROW(read_scalar_field(h5, "initial"), InputError);
}

TEST(Fields, XdmfSidecarsReferenceExistingDatasets) {
  TempDir dir;
  const int n = 8;
  const SolverFields init(n, 0.0), spectral(n, 1.0), vortex(n, 2.0);
  write_fields(dir.path().string(), 0, 0.0, {{"initial", init.set(0)}});
  // Second output: two solvers; the vortex solver has no vorticity this time.
  FieldSet v = vortex.set(7);
  v.vorticity = nullptr;
  write_fields(dir.path().string(), 1, 0.5, {{"spectral", spectral.set(14)}, {"vortex", v}});
  EXPECT_FALSE(has_tmp(dir.path()));

  check_xdmf(dir / "fields_0000.xdmf", 3);
  check_xdmf(dir / "fields_0001.xdmf", 5);
  check_xdmf(dir / "fields.xdmf", 8);

  const std::string one = slurp(dir / "fields_0001.xdmf");
  EXPECT_EQ(matches(one, R"re(TopologyType="3DCoRectMesh" Dimensions="([^"]*)")re"),
            (std::vector<std::string>{"8 8 8", "8 8 8"}));
  EXPECT_EQ(matches(one, R"re(GeometryType="([^"]*)")re"),
            (std::vector<std::string>{"ORIGIN_DXDYDZ", "ORIGIN_DXDYDZ"}));
  EXPECT_EQ(matches(one, R"re(<Grid Name="([^"]*)" GridType="Uniform")re"),
            (std::vector<std::string>{"spectral", "vortex"}));
  EXPECT_NE(one.find("CollectionType=\"Spatial\""), std::string::npos);
  EXPECT_NE(one.find(">fields_0001.h5:/spectral/velocity<"), std::string::npos);
  EXPECT_EQ(one.find("/vortex/vorticity"), std::string::npos);
  // Origin 0 and spacing h = 2π/N in every direction.
  const auto origin = matches(one, R"(<DataItem Name="Origin"[^>]*>([^<]*)<)");
  ASSERT_EQ(origin.size(), 2u);
  EXPECT_EQ(origin[0], "0 0 0");
  for (const auto& s : matches(one, R"(<DataItem Name="Spacing"[^>]*>([^<]*)<)")) {
    std::istringstream in(s);
    double h[3] = {0, 0, 0};
    in >> h[0] >> h[1] >> h[2];
    for (double x : h) EXPECT_DOUBLE_EQ(x, 2.0 * kPi / n);
  }
  // Vectors are Vector attributes of N N N 3, scalars of N N N, all on nodes.
  EXPECT_EQ(matches(one, R"re(<Attribute Name="velocity" AttributeType="([^"]*)" Center="Node")re"),
            (std::vector<std::string>{"Vector", "Vector"}));
  EXPECT_EQ(matches(one, R"re(<Attribute Name="Q" AttributeType="([^"]*)" Center="Node")re"),
            (std::vector<std::string>{"Scalar", "Scalar"}));

  // The temporal collection runs over both files in order of time.
  const std::string all = slurp(dir / "fields.xdmf");
  EXPECT_NE(all.find("CollectionType=\"Temporal\""), std::string::npos);
  EXPECT_EQ(matches(all, R"re(<Time Value="([^"]*)")re"), (std::vector<std::string>{"0", "0.5"}));
  EXPECT_EQ(matches(all, R"re(<Grid Name="([^"]*)" GridType="Collection" CollectionType="Spatial")re"),
            (std::vector<std::string>{"fields_0000", "fields_0001"}));

  // Rewriting an index replaces that entry, never duplicates it.
  write_fields(dir.path().string(), 1, 0.75, {{"spectral", spectral.set(21)}});
  const std::string again = slurp(dir / "fields.xdmf");
  EXPECT_EQ(matches(again, R"re(<Time Value="([^"]*)")re"), (std::vector<std::string>{"0", "0.75"}));
  check_xdmf(dir / "fields.xdmf", 6);
}

TEST(Fields, StemAndBadArguments) {
  EXPECT_EQ(fields_stem(7), "fields_0007");
  EXPECT_EQ(fields_stem(12345), "fields_12345");
  TempDir dir;
  EXPECT_THROW(write_fields(dir.path().string(), 0, 0.0, {}), std::invalid_argument);
  const SolverFields a(8, 0.0), b(10, 0.0);
  EXPECT_THROW(write_fields(dir.path().string(), 0, 0.0, {{"spectral", FieldSet{&a.u, nullptr, &b.q, 0}}}),
               std::invalid_argument);
  EXPECT_FALSE(fs::exists(dir / "fields_0000.h5"));
}
