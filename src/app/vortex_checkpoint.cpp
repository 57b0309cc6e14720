#include "app/vortex_checkpoint.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/error.h"

namespace vh::app {
namespace {

using vortex::Vec3;
static_assert(sizeof(Vec3) == 3 * sizeof(double), "Vec3 is three doubles, no padding");

constexpr int kTag = 25;  // the messages of one array's parts to rank 0

// The positions' boxes: "x_boxes" [n_boxes][6] (lowest x, y, z, then highest, each component
// a vortex::PeriodicInterval), box b over the file's rows [b B, (b + 1) B), B its attribute "rows".
constexpr const char* kBoxes = "x_boxes";
constexpr const char* kBoxRows = "rows";

/// The state's per-particle arrays of three components, by checkpoint name; the history's last.
template <class State>
auto vectors(State& s) {
  using Array = std::conditional_t<std::is_const_v<State>, const std::vector<Vec3>, std::vector<Vec3>>;
  using Named = std::pair<const char*, Array*>;
  return std::array<Named, 6>{Named{"x", &s.particles.x},           Named{"alpha", &s.particles.alpha},
                              Named{"gamma", &s.particles.gamma},   Named{"u_prev", &s.u_prev},
                              Named{"dalpha_prev", &s.dalpha_prev}, Named{"dgamma_prev", &s.dgamma_prev}};
}
constexpr std::size_t kParticleVectors = 3;  // x, alpha, gamma: the rest is the history

const double* values(const std::vector<Vec3>& v) { return reinterpret_cast<const double*>(v.data()); }
double* values(std::vector<Vec3>& v) { return reinterpret_cast<double*>(v.data()); }

}  // namespace

void save_vortex_state(h5::Id grp, const vortex::State& st, RootErrors& err, const Comm& comm, std::size_t chunk) {
  const std::vector<std::size_t> counts = comm.counts(st.particles.size());
  std::size_t n = 0;
  for (std::size_t c : counts) n += c;
  // One array after the other, each rank's part in chunks through rank 0, in rank order; `seen`
  // (rank 0) sees each chunk's rows as they go to the file.
  using Rows = std::function<void(std::size_t first, std::size_t m, const double* rows)>;
  auto write = [&](const char* name, const double* mine, std::size_t width, const Rows& seen = {}) {
    h5::Handle d;
    err.run(comm, [&] { d = h5::create_doubles(grp, name, width == 1 ? h5::Shape{n} : h5::Shape{n, width}); });
    std::vector<double> buf(comm.root() && comm.size() > 1 ? chunk * width : 0);
    std::size_t first = 0;
    for (int r = 0; r < comm.size(); ++r) {
      for (std::size_t k = 0; k < counts[r]; k += chunk) {
        const std::size_t m = std::min(chunk, counts[r] - k), bytes = m * width * sizeof(double);
        if (r > 0 && comm.rank() == r) comm.send(mine + k * width, bytes, 0, kTag);
        if (r > 0 && comm.root()) comm.recv(buf.data(), bytes, r, kTag);
        const double* rows = r == 0 ? mine + k * width : buf.data();
        if (comm.root() && seen) seen(first + k, m, rows);
        err.run(comm, [&] { h5::write_rows(d, first + k, m, rows); });
      }
      first += counts[r];
    }
  };
  // The positions' boxes, a box each `chunk` rows of the file (rank 0 sees every row go by), each
  // component a periodic interval (vortex/validate.h).
  const std::size_t boxes = (n + chunk - 1) / chunk;
  std::vector<std::array<vortex::PeriodicInterval, 3>> in(comm.root() ? boxes : 0);
  const auto v = vectors(st);
  write(v[0].first, values(*v[0].second), 3, [&](std::size_t first, std::size_t m, const double* x) {
    for (std::size_t i = 0; i < m; ++i)
      for (int c = 0; c < 3; ++c) in[(first + i) / chunk][c].add(x[3 * i + c]);
  });
  std::vector<double> box(6 * in.size());
  for (std::size_t b = 0; b < in.size(); ++b)
    for (int c = 0; c < 3; ++c) std::tie(box[6 * b + c], box[6 * b + 3 + c]) = in[b][c].interval();
  err.run(comm, [&] {
    h5::write_doubles(grp, kBoxes, box.data(), h5::Shape{boxes, 6});
    h5::Handle d = h5::open_dataset(grp, kBoxes);
    h5::write_attribute(d, kBoxRows, std::int64_t(chunk));
  });
  for (std::size_t a = 1; a < kParticleVectors; ++a) write(v[a].first, values(*v[a].second), 3);
  write("sigma", st.particles.sigma.data(), 1);
  if (!st.u_prev.empty())  // the AB2 history (every rank has one or none)
    for (std::size_t a = kParticleVectors; a < v.size(); ++a) write(v[a].first, values(*v[a].second), 3);
  err.run(comm, [&] {
    h5::write_attribute(grp, "t", st.t);
    h5::write_attribute(grp, "t_reinit", st.t_reinit);
    h5::write_attribute(grp, "dt_prev", st.dt_prev);
    h5::write_attribute(grp, "div_removed", st.div_removed);
    h5::write_attribute(grp, "last_residual", st.last_residual);
    h5::write_attribute(grp, "ratio_at_reinit", st.ratio_at_reinit);
    h5::write_attribute(grp, "steps", std::int64_t(st.steps));
    h5::write_attribute(grp, "since_reinit", std::int64_t(st.since_reinit));
    h5::write_attribute(grp, "reinits", std::int64_t(st.reinits));
  });
}

namespace {

/// The file's position boxes (empty where it has none: written before them): [n_boxes][6],
/// checked by validate_position_boxes; `rows` gets their attribute.
std::vector<double> read_boxes(h5::Id grp, std::size_t n, std::size_t& rows) {
  if (!h5::exists(grp, kBoxes)) return {};
  const std::int64_t r = h5::read_int64_attribute(h5::open_dataset(grp, kBoxes), kBoxRows);
  if (r < 1) throw InputError("attribute x_boxes/rows = " + std::to_string(r) + ", expected >= 1");
  rows = std::size_t(r);
  std::vector<double> box = h5::read_doubles(grp, kBoxes, h5::Shape{(n + rows - 1) / rows, 6});
  vortex::validate_position_boxes(box);
  return box;
}

/// load_vortex_state on this rank alone (InputError for what it finds); `read` gets the positions
/// it read.
vortex::State load_own(h5::Id grp, const Grid& lattice, const vortex::Bounds& b, const KeepParticle& keep,
                       const KeepBox& may_keep, std::size_t expected, std::size_t chunk, std::size_t& read) {
  // The checks name the group: "<file>:/vortex: x[7][1] = nan is not finite".
  auto checked = [&](auto&& check) {
    try {
      check();
    } catch (const InputError& e) {
      throw InputError(h5::where(grp, ".") + ": " + e.what());
    }
  };
  vortex::State out;
  out.t = h5::read_double_attribute(grp, "t");
  out.t_reinit = h5::read_double_attribute(grp, "t_reinit");
  out.dt_prev = h5::read_double_attribute(grp, "dt_prev");
  out.div_removed = h5::read_double_attribute(grp, "div_removed");
  out.last_residual = h5::read_double_attribute(grp, "last_residual");
  out.ratio_at_reinit = h5::read_double_attribute(grp, "ratio_at_reinit");
  out.steps = long(h5::read_int64_attribute(grp, "steps"));
  out.since_reinit = long(h5::read_int64_attribute(grp, "since_reinit"));
  out.reinits = long(h5::read_int64_attribute(grp, "reinits"));
  const bool history = h5::exists(grp, "u_prev");
  checked([&] { vortex::validate_scalars(out, history); });

  // Every dataset's shape is checked before any value is read.
  const std::size_t n = lattice.points(), arrays = history ? 6 : kParticleVectors;
  std::vector<h5::Handle> d;
  vortex::State chunk_x, run;
  const auto in = vectors(run), kept = vectors(out);
  for (std::size_t a = 0; a < arrays; ++a) d.push_back(h5::open_doubles(grp, in[a].first, h5::Shape{n, 3}));
  h5::Handle ds = h5::open_doubles(grp, "sigma", h5::Shape{n});
  const std::size_t room = keep ? std::min(expected, n) : n;
  for (std::size_t a = 0; a < arrays; ++a) kept[a].second->reserve(room);
  out.particles.sigma.reserve(room);

  // The positions' boxes, if the file has them: a chunk none of whose boxes `may_keep` takes is
  // not read (a rank then reads the positions near its own particles, not all of them).
  std::size_t rows = 0;
  std::vector<double> box;
  checked([&] { box = read_boxes(grp, n, rows); });
  auto corner = [&](std::size_t i, int hi) {
    return Vec3{box[6 * i + 3 * hi], box[6 * i + 3 * hi + 1], box[6 * i + 3 * hi + 2]};
  };
  auto skipped = [&](std::size_t first, std::size_t m) {
    if (box.empty() || !may_keep) return false;
    for (std::size_t i = first / rows; i <= (first + m - 1) / rows; ++i)
      if (may_keep(corner(i, 0), corner(i, 1))) return false;
    return true;
  };

  // A chunk's positions (every rank checks all it reads), then the other arrays' rows of each run
  // of consecutive particles it keeps (one run a rank's slab after a reinitialisation).
  read = 0;
  for (std::size_t first = 0; first < n; first += chunk) {
    const std::size_t m = std::min(chunk, n - first);
    if (skipped(first, m)) continue;
    std::vector<Vec3>& x = chunk_x.particles.x;
    x.resize(m);
    h5::read_rows(d[0], first, m, values(x));
    read += m;
    checked([&] { vortex::validate_particles(chunk_x, first, b); });
    // A box must hold its positions: a rank that skipped it relies on that.
    for (std::size_t i = 0; i < m && !box.empty(); ++i) {
      const std::size_t k = (first + i) / rows;
      const Vec3 lo = corner(k, 0), hi = corner(k, 1);
      for (int c = 0; c < 3; ++c)
        if (!vortex::PeriodicInterval::holds(lo[c], hi[c], x[i][c]))
          checked([&] {
            throw InputError("x[" + std::to_string(first + i) + "] lies outside its box x_boxes[" + std::to_string(k) +
                             "]: the boxes must hold the positions");
          });
    }
    for (std::size_t i = 0; i < m;) {
      if (keep && !keep(x[i])) {
        ++i;
        continue;
      }
      std::size_t j = i + 1;
      while (j < m && (!keep || keep(x[j]))) ++j;
      for (std::size_t a = 1; a < arrays; ++a) {
        in[a].second->resize(j - i);
        h5::read_rows(d[a], first + i, j - i, values(*in[a].second));
      }
      run.particles.sigma.resize(j - i);
      h5::read_rows(ds, first + i, j - i, run.particles.sigma.data());
      checked([&] { vortex::validate_particles(run, first + i, b); });
      out.particles.x.insert(out.particles.x.end(), x.begin() + long(i), x.begin() + long(j));
      for (std::size_t a = 1; a < arrays; ++a)
        kept[a].second->insert(kept[a].second->end(), in[a].second->begin(), in[a].second->end());
      out.particles.sigma.insert(out.particles.sigma.end(), run.particles.sigma.begin(), run.particles.sigma.end());
      i = j;
    }
  }
  return out;
}

}  // namespace

vortex::State load_vortex_state(h5::Id grp, const Grid& lattice, const vortex::Bounds& b, const KeepParticle& keep,
                                const KeepBox& may_keep, std::size_t expected, const Comm& comm, std::size_t chunk,
                                std::size_t* positions_read) {
  VH_CHECK(chunk > 0, "load_vortex_state: chunk of 0 particles");
  // A rank that finds a bad value in its own particles refuses for all (one rank alone would
  // leave the others waiting in the next collective).
  vortex::State st;
  std::string why;
  try {
    std::size_t read = 0;
    st = load_own(grp, lattice, b, keep, may_keep, expected, chunk, read);
    if (positions_read) *positions_read = read;
  } catch (const InputError& e) {
    why = e.what();
  }
  why = comm.first_error(why);
  if (!why.empty()) throw InputError(why);
  return st;
}

}  // namespace vh::app
