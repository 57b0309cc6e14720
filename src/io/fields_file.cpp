#include "io/fields_file.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "base/error.h"
#include "core/slab.h"
#include "io/h5.h"

namespace vh {

namespace fs = std::filesystem;

std::string fields_stem(int index) {
  std::ostringstream s;
  s << "fields_" << std::setw(4) << std::setfill('0') << index;
  return s.str();
}

namespace {

std::string number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

/// Field `name` of `group` streamed to rank 0 one z-plane at a time: the rank that holds
/// plane k (core/slab.h) packs it ([y][x][component] for a vector, so a 256³ field needs an
/// extra 1.5 MB, not a second copy of 400 MB) and sends it; rank 0 writes it as row k.
/// Collective; rank 0's I/O errors go to `err` and the planes are still taken off the
/// senders, so that no rank is left waiting.
void write_planes(h5::Id group, const std::string& name, const std::vector<const std::vector<double>*>& comps,
                  const Slab& s, RootErrors& err) {
  const std::size_t n = std::size_t(s.grid.n), plane = n * n, nc = comps.size();
  for (const auto* c : comps)
    if (c->size() != s.local_points())
      throw std::invalid_argument("write_fields: " + name + " has the wrong number of points");
  h5::Handle d;
  err.run(s.comm, [&] { d = h5::create_doubles(group, name, nc == 1 ? h5::Shape{n, n, n} : h5::Shape{n, n, n, nc}); });
  std::vector<double> buf(plane * nc);
  for (int k = 0; k < int(n); ++k) {
    const int owner = block_owner(int(n), s.ranks(), k);
    if (owner == s.rank) {
      const std::size_t z = std::size_t(k - s.z0);
      for (std::size_t p = 0; p < plane; ++p)
        for (std::size_t c = 0; c < nc; ++c) buf[nc * p + c] = (*comps[c])[z * plane + p];
      if (!s.comm.root()) s.comm.send(buf.data(), buf.size() * sizeof(double), 0, k);
    } else if (s.comm.root()) {
      s.comm.recv(buf.data(), buf.size() * sizeof(double), owner, k);
    }
    err.run(s.comm, [&] { h5::write_rows(d, std::size_t(k), 1, buf.data()); });
  }
}

// One grid of a fields file as the .h5 holds it: the xdmf is derived from this, so every
// path it names exists with the dimensions it states.
struct GridInfo {
  std::string solver;
  std::size_t n = 0;
  std::vector<std::pair<std::string, bool>> fields;  ///< dataset name, is a vector
};

struct FileInfo {
  double t = 0;
  std::vector<GridInfo> grids;
};

FileInfo describe(const std::string& h5_path) {
  h5::Handle f = h5::open_file(h5_path);
  FileInfo info;
  info.t = h5::read_double_attribute(f, "t");
  for (const auto& solver : h5::children(f, "/")) {
    GridInfo g;
    g.solver = solver;
    for (const auto& name : h5::children(f, "/" + solver)) {
      const h5::Shape s = h5::shape(f, "/" + solver + "/" + name);
      const bool cube = s.size() >= 3 && s[0] == s[1] && s[1] == s[2] && s[0] > 0;
      const bool vec = cube && s.size() == 4 && s[3] == 3, scalar = cube && s.size() == 3;
      if (!vec && !scalar) continue;  // not a grid field: ParaView has nothing to show
      if (g.n != 0 && g.n != s[0])
        throw InputError(h5::where(f, "/" + solver + "/" + name) + ": other N than the rest");
      g.n = s[0];
      g.fields.emplace_back(name, vec);
    }
    if (!g.fields.empty()) info.grids.push_back(std::move(g));
  }
  return info;
}

// One <Grid> per solver. XDMF lists dimensions slowest first (z y x), as HDF5 does, and
// ORIGIN_DXDYDZ's values in the same z y x order (all equal here).
void grid_xml(std::ostream& o, const GridInfo& g, const std::string& h5_name,
              const std::string& indent) {
  const std::string n = std::to_string(g.n), dims = n + " " + n + " " + n;
  const std::string h = number(2.0 * kPi / double(g.n));
  const std::string i1 = indent + "  ", i2 = i1 + "  ";
  o << indent << "<Grid Name=\"" << g.solver << "\" GridType=\"Uniform\">\n"
    << i1 << "<Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"" << dims << "\"/>\n"
    << i1 << "<Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n"
    << i2 << "<DataItem Name=\"Origin\" Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" "
             "Format=\"XML\">0 0 0</DataItem>\n"
    << i2 << "<DataItem Name=\"Spacing\" Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" "
             "Format=\"XML\">"
    << h << " " << h << " " << h << "</DataItem>\n"
    << i1 << "</Geometry>\n";
  for (const auto& [name, vec] : g.fields) {
    o << i1 << "<Attribute Name=\"" << name << "\" AttributeType=\""
      << (vec ? "Vector" : "Scalar") << "\" Center=\"Node\">\n"
      << i2 << "<DataItem Dimensions=\"" << dims << (vec ? " 3" : "")
      << "\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">" << h5_name << ":/"
      << g.solver << "/" << name << "</DataItem>\n"
      << i1 << "</Attribute>\n";
  }
  o << indent << "</Grid>\n";
}

// A spatial collection of the solvers' grids at one time.
void step_xml(std::ostream& o, const FileInfo& info, const std::string& name,
              const std::string& h5_name, const std::string& indent) {
  o << indent << "<Grid Name=\"" << name << "\" GridType=\"Collection\" CollectionType=\"Spatial\">\n"
    << indent << "  <Time Value=\"" << number(info.t) << "\"/>\n";
  for (const auto& g : info.grids) grid_xml(o, g, h5_name, indent + "  ");
  o << indent << "</Grid>\n";
}

const char* kHead = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<Xdmf Version=\"3.0\">\n  <Domain>\n";
const char* kTail = "  </Domain>\n</Xdmf>\n";

}  // namespace

std::string fields_xdmf(const std::string& h5_path, const std::string& h5_name) {
  const FileInfo info = describe(h5_path);
  std::ostringstream o;
  o << kHead;
  step_xml(o, info, fs::path(h5_name).stem().string(), h5_name, "    ");
  o << kTail;
  return o.str();
}

void write_fields_collection(const std::string& dir) {
  static const std::regex pattern(R"(fields_(\d+)\.h5)");
  std::vector<std::pair<long, std::string>> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && std::regex_match(name, m, pattern))
      files.emplace_back(std::stol(m[1].str()), name);
  }
  std::sort(files.begin(), files.end());
  std::ostringstream o;
  o << kHead << "    <Grid Name=\"fields\" GridType=\"Collection\" CollectionType=\"Temporal\">\n";
  for (const auto& [index, name] : files) {
    FileInfo info;
    try {
      info = describe((fs::path(dir) / name).string());
    } catch (const std::exception&) {
      continue;  // a foreign or damaged file must not stop the run's own output
    }
    step_xml(o, info, fs::path(name).stem().string(), name, "      ");
  }
  o << "    </Grid>\n" << kTail;
  h5::atomic_write_text((fs::path(dir) / "fields.xdmf").string(), o.str());
}

std::string write_fields(const std::string& dir, int index, double t,
                         const std::map<std::string, FieldSet>& solvers) {
  int n = 0;
  for (const auto& [solver, fields] : solvers)
    for (const Grid* g : {fields.velocity ? &fields.velocity->grid : nullptr,
                          fields.vorticity ? &fields.vorticity->grid : nullptr, fields.q ? &fields.q->grid : nullptr})
      if (g && n == 0) n = g->n;
  return write_fields(dir, index, t, solvers, Slab::whole_grid(Grid{n}));
}

std::string write_fields(const std::string& dir, int index, double t, const std::map<std::string, FieldSet>& solvers,
                         const Slab& slab) {
  if (solvers.empty()) throw std::invalid_argument("write_fields: no solver fields given");
  for (const auto& [solver, fields] : solvers) {
    int n = 0;
    for (const Grid* g : {fields.velocity ? &fields.velocity->grid : nullptr,
                          fields.vorticity ? &fields.vorticity->grid : nullptr,
                          fields.q ? &fields.q->grid : nullptr}) {
      if (!g) continue;
      if (n != 0 && g->n != n)
        throw std::invalid_argument("write_fields: fields of " + solver + " on different grids");
      n = g->n;
    }
    if (n != slab.grid.n) throw std::invalid_argument("write_fields: fields of " + solver + " not on the slab's grid");
  }
  const std::string stem = fields_stem(index);
  const std::string h5_path = (fs::path(dir) / (stem + ".h5")).string();
  const Comm& comm = slab.comm;
  RootErrors err;
  auto write_all = [&](const std::string& tmp) {
    h5::Handle f;
    err.run(comm, [&] {
      f = h5::create_file(tmp);
      h5::write_attribute(f, "t", t);
    });
    for (const auto& entry : solvers) {
      // Not a structured binding: C++17 lambdas cannot capture one (Clang refuses it).
      const std::string& solver = entry.first;
      const FieldSet& fields = entry.second;
      h5::Handle g;
      err.run(comm, [&] {
        g = h5::create_group(f, solver);
        h5::write_attribute(g, "t", t);
        h5::write_attribute(g, "step", fields.step);
      });
      if (fields.velocity) write_planes(g, "velocity", {&fields.velocity->c[0], &fields.velocity->c[1], &fields.velocity->c[2]}, slab, err);
      if (fields.vorticity) write_planes(g, "vorticity", {&fields.vorticity->c[0], &fields.vorticity->c[1], &fields.vorticity->c[2]}, slab, err);
      if (fields.q) write_planes(g, "Q", {&fields.q->v}, slab, err);
    }
    err.run(comm, [&] { h5::close_file(f); });
    // err.run skips its work once an error was caught: abandon the file here, so that
    // atomic_path removes it instead of putting it under the final name.
    if (comm.root() && err.failed()) throw std::runtime_error("fields file abandoned");
  };
  if (comm.root())
    err.run(comm, [&] {
      h5::atomic_path(h5_path, write_all);
      h5::atomic_write_text((fs::path(dir) / (stem + ".xdmf")).string(), fields_xdmf(h5_path, stem + ".h5"));
      write_fields_collection(dir);
    });
  else
    write_all("");
  // A failure on rank 0 (a full disk, a file-size limit: caught inside write_all as it
  // happened) reaches every rank as what it is, a fields file that could not be written.
  try {
    err.rethrow(comm);
  } catch (const SharedError& e) {
    throw WriteError(h5_path, h5::write_failure(e));
  }
  return h5_path;
}

namespace {
std::size_t cube_side(h5::Id f, const std::string& path, bool vector) {
  const h5::Shape s = h5::shape(f, path);
  const bool ok = s.size() == (vector ? 4u : 3u) && s[0] > 0 && s[0] == s[1] && s[1] == s[2] &&
                  (!vector || s[3] == 3);
  if (!ok) {
    std::string got;
    for (auto d : s) got += (got.empty() ? "" : " ") + std::to_string(d);
    throw InputError(h5::where(f, path) + ": shape [" + got + "], expected " +
                     (vector ? "[N N N 3]" : "[N N N]"));
  }
  return s[0];
}
}  // namespace

VectorField read_vector_field(const std::string& h5_path, const std::string& solver,
                              const std::string& name) {
  h5::Handle f = h5::open_file(h5_path);
  const std::string path = "/" + solver + "/" + name;
  const std::size_t n = cube_side(f, path, true), plane = n * n;
  h5::Handle d = h5::open_dataset(f, path);
  VectorField u(Grid{int(n)});
  std::vector<double> buf(plane * 3);
  for (std::size_t k = 0; k < n; ++k) {
    h5::read_rows(d, k, 1, buf.data());
    for (std::size_t p = 0; p < plane; ++p)
      for (std::size_t c = 0; c < 3; ++c) u.c[c][k * plane + p] = buf[3 * p + c];
  }
  return u;
}

ScalarField read_scalar_field(const std::string& h5_path, const std::string& solver,
                              const std::string& name) {
  h5::Handle f = h5::open_file(h5_path);
  const std::string path = "/" + solver + "/" + name;
  const std::size_t n = cube_side(f, path, false);
  ScalarField q(Grid{int(n)});
  q.v = h5::read_doubles(f, path, h5::Shape{n, n, n});
  return q;
}

std::map<std::string, double> fields_solvers(const std::string& h5_path) {
  h5::Handle f = h5::open_file(h5_path);
  std::map<std::string, double> out;
  for (const auto& name : h5::children(f, "/")) {
    h5::Handle g = h5::open_group(f, name);
    out[name] = h5::read_double_attribute(g, "t");
  }
  return out;
}

}  // namespace vh
