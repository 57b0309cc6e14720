// The vortex state's arrays in a checkpoint, a chunk at a time (src/app/vortex_checkpoint.h), on
// the world's ranks: what R ranks write in chunks through rank 0 is their parts in rank order,
// uneven and empty parts included; what a rank reads in chunks of another size is that array,
// or the particles its predicate keeps in the file's order; a value the checks refuse is named
// by its index in the file whichever chunk holds it, and refused by every rank even where only
// the rank that keeps the particle reads it. Chunks of 4 and 3 particles against parts
// of 0 to 20 make every boundary case (a part shorter than a chunk, a chunk across two ranks'
// parts in the file, a last short chunk). The positions' boxes (a box each 4 rows of the file)
// let a rank read only the chunks near its share: exactly those, the file's result all the
// same; a file without them is read whole; a box that does not hold its positions, or is not a
// box, is refused; a box across the seam at z = 0 is as high as its particles. Label mpi; 2 and
// 3 ranks.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>

#include "app/vortex_checkpoint.h"
#include "base/error.h"

namespace fs = std::filesystem;

namespace {

using vh::Comm;
using vh::Grid;
using vh::vortex::State;
using vh::vortex::Vec3;

constexpr int kLattice = 3;  // 27 particles in all
constexpr std::size_t kN = kLattice * kLattice * kLattice;

/// Particle i of the whole state: values that say which particle and which array they are.
Vec3 position(std::size_t i) { return {0.1 * double(i % 7), 0.2 * double(i), 6.0 * double(i) / kN}; }
Vec3 value(std::size_t i, int array) { return {double(i) + 0.25 * array, -double(i), 1.0 / double(i + 1 + array)}; }

/// Particles [first, first + count) of the whole state, with or without the AB2 history.
State part(std::size_t first, std::size_t count, bool history) {
  State s;
  for (std::size_t i = first; i < first + count; ++i) {
    s.particles.x.push_back(position(i));
    s.particles.alpha.push_back(value(i, 1));
    s.particles.gamma.push_back(value(i, 2));
    s.particles.sigma.push_back(0.01 * double(i + 1));
    if (history) {
      s.u_prev.push_back(value(i, 3));
      s.dalpha_prev.push_back(value(i, 4));
      s.dgamma_prev.push_back(value(i, 5));
    }
  }
  s.t = 0.5, s.t_reinit = 0.25, s.dt_prev = history ? 0.01 : 0, s.steps = 7, s.since_reinit = 2, s.reinits = 3;
  return s;
}

/// This rank's part of the 27 particles: uneven, the middle rank's empty on 3 ranks.
std::pair<std::size_t, std::size_t> my_range(const Comm& w) {
  if (w.size() == 1) return {0, kN};
  const std::size_t first[3] = {0, w.size() == 3 ? std::size_t(20) : std::size_t(5), 20};
  const std::size_t end = w.rank() + 1 < w.size() ? first[w.rank() + 1] : kN;
  return {first[w.rank()], end - first[w.rank()]};
}

class VortexCheckpointMpi : public ::testing::Test {
 protected:
  void SetUp() override {
    const Comm w = Comm::world();
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    // One file for all ranks: rank 0's process id names it.
    long pid = w.root() ? long(::getpid()) : 0;
    w.bcast(&pid, sizeof pid);
    path_ = (fs::temp_directory_path() / ("vh_vortex_ckpt_" + name + "_" + std::to_string(pid) + ".h5")).string();
  }
  void TearDown() override {
    Comm::world().barrier();
    if (Comm::world().root()) fs::remove(path_);
  }
  /// Writes this rank's part of the whole state (edited by `damage` first) in chunks of 4.
  void write(bool history, const std::function<void(State&)>& damage = {}) {
    const Comm w = Comm::world();
    w.barrier();  // no rank still reads an earlier file
    const auto [first, count] = my_range(w);
    State mine = part(first, count, history);
    if (damage) damage(mine);
    vh::RootErrors err;
    vh::h5::Handle f, g;
    err.run(w, [&] {
      f = vh::h5::create_file(path_);
      g = vh::h5::create_group(f, "vortex");
    });
    vh::app::save_vortex_state(g, mine, err, w, 4);
    err.run(w, [&] {
      g.close();
      vh::h5::close_file(f);
    });
    err.rethrow(w);
    w.barrier();  // the file is whole before any rank reads it
  }
  State read(const vh::app::KeepParticle& keep, std::size_t chunk = 3, const vh::app::KeepBox& may_keep = {},
             std::size_t* positions_read = nullptr) const {
    vh::h5::Handle f = vh::h5::open_file(path_);
    vh::h5::Handle g = vh::h5::open_group(f, "vortex");
    return vh::app::load_vortex_state(g, Grid{kLattice}, vh::vortex::Bounds{}, keep, may_keep, kN, Comm::world(), chunk,
                                      positions_read);
  }
  /// Rank 0 edits the file's position boxes ([n_boxes][6]) in place, or removes them (edit
  /// empty), with HDF5's own calls: what another writer or a damaged file could hold.
  void edit_boxes(const std::function<void(std::vector<double>&)>& edit) const {
    const Comm w = Comm::world();
    if (w.root()) {
      const hid_t f = H5Fopen(path_.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
      ASSERT_GE(f, 0);
      if (edit) {
        const hid_t d = H5Dopen2(f, "vortex/x_boxes", H5P_DEFAULT);
        std::vector<double> box(6 * ((kN + 3) / 4));
        EXPECT_GE(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, box.data()), 0);
        edit(box);
        EXPECT_GE(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, box.data()), 0);
        H5Dclose(d);
      } else {
        EXPECT_GE(H5Ldelete(f, "vortex/x_boxes", H5P_DEFAULT), 0);
      }
      H5Fclose(f);
    }
    w.barrier();
  }
  std::string path_;
};

void expect_equal(const State& got, const State& want) {
  EXPECT_EQ(got.particles.x, want.particles.x);
  EXPECT_EQ(got.particles.alpha, want.particles.alpha);
  EXPECT_EQ(got.particles.gamma, want.particles.gamma);
  EXPECT_EQ(got.particles.sigma, want.particles.sigma);
  EXPECT_EQ(got.u_prev, want.u_prev);
  EXPECT_EQ(got.dalpha_prev, want.dalpha_prev);
  EXPECT_EQ(got.dgamma_prev, want.dgamma_prev);
  EXPECT_EQ(got.t, want.t);
  EXPECT_EQ(got.t_reinit, want.t_reinit);
  EXPECT_EQ(got.dt_prev, want.dt_prev);
  EXPECT_EQ(got.steps, want.steps);
  EXPECT_EQ(got.since_reinit, want.since_reinit);
  EXPECT_EQ(got.reinits, want.reinits);
}

TEST_F(VortexCheckpointMpi, RanksPartsWrittenInChunksReadBackAsTheWholeStateInAnyChunks) {
  for (bool history : {true, false}) {
    write(history);
    for (std::size_t chunk : {1, 3, 27, 100}) {
      SCOPED_TRACE("history " + std::to_string(history) + ", chunk " + std::to_string(chunk));
      expect_equal(read({}, chunk), part(0, kN, history));
    }
  }
}

/// The particles whose height falls in this rank's share of the box (x[2] = 6 i / 27).
bool in_my_share(const Vec3& x) {
  const Comm w = Comm::world();
  return int(x[2] / 6.0 * w.size()) == w.rank();
}

/// Whether the box's heights meet this rank's share (in_my_share's KeepBox).
bool meets_my_share(const Vec3& lo, const Vec3& hi) {
  const Comm w = Comm::world();
  return int(lo[2] / 6.0 * w.size()) <= w.rank() && w.rank() <= int(hi[2] / 6.0 * w.size());
}

/// What in_my_share keeps of the whole state, in the file's order.
State my_share() {
  const State all = part(0, kN, true);
  State want = part(0, 0, true);
  for (std::size_t i = 0; i < kN; ++i)
    if (in_my_share(all.particles.x[i])) {
      want.particles.x.push_back(all.particles.x[i]);
      want.particles.alpha.push_back(all.particles.alpha[i]);
      want.particles.gamma.push_back(all.particles.gamma[i]);
      want.particles.sigma.push_back(all.particles.sigma[i]);
      want.u_prev.push_back(all.u_prev[i]);
      want.dalpha_prev.push_back(all.dalpha_prev[i]);
      want.dgamma_prev.push_back(all.dgamma_prev[i]);
    }
  return want;
}

TEST_F(VortexCheckpointMpi, EachRankKeepsWhatItsPredicateTakesInTheFilesOrder) {
  write(true);
  const State got = read(in_my_share), want = my_share();
  EXPECT_FALSE(want.particles.x.empty());
  expect_equal(got, want);
  // Every particle is kept by exactly one rank.
  EXPECT_EQ(Comm::world().sum(double(got.particles.size())), double(kN));
}

// With the boxes a rank reads the chunks (of 3) that hold a file row whose box (of 4 rows)
// meets its share, counted here from the positions themselves; its particles are the same.
TEST_F(VortexCheckpointMpi, EachRankReadsOnlyTheChunksWhoseBoxesMeetItsShare) {
  write(true);
  std::size_t got_read = 0;
  expect_equal(read(in_my_share, 3, meets_my_share, &got_read), my_share());
  std::size_t want_read = 0;
  for (std::size_t first = 0; first < kN; first += 3) {
    bool near = false;
    for (std::size_t i = first; i < std::min(first + 3, kN); ++i) {
      const std::size_t b0 = i / 4 * 4, b1 = std::min(b0 + 4, kN);  // the box's rows, z rising
      near = near || meets_my_share(position(b0), position(b1 - 1));
    }
    if (near) want_read += std::min(std::size_t(3), kN - first);
  }
  EXPECT_EQ(got_read, want_read);
  if (Comm::world().size() > 1) {
    EXPECT_LT(got_read, kN);
  }
  // Without a KeepBox, or from a file without boxes, every position is read.
  read(in_my_share, 3, {}, &got_read);
  EXPECT_EQ(got_read, kN);
  edit_boxes({});
  expect_equal(read(in_my_share, 3, meets_my_share, &got_read), my_share());
  EXPECT_EQ(got_read, kN);
}

// A rank that skips a chunk relies on its boxes: one that does not hold its positions is
// refused by the rank that reads it, and so by every rank; one that is not an interval by all.
TEST_F(VortexCheckpointMpi, BoxesThatDoNotHoldTheirPositionsAreRefusedOnEveryRank) {
  write(false);
  edit_boxes([](std::vector<double>& box) { box[6 * 5 + 5] = box[6 * 5 + 2]; });  // rows 20-23: z of row 20
  for (const vh::app::KeepBox& near : {vh::app::KeepBox(), vh::app::KeepBox(meets_my_share)}) {
    try {
      read(in_my_share, 3, near);
      ADD_FAILURE() << "a box without its positions was read";
    } catch (const vh::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(":/vortex: x[21] lies outside its box x_boxes[5]"), std::string::npos)
          << e.what();
    }
  }
  edit_boxes([](std::vector<double>& box) { box[6 * 2 + 2] = box[6 * 2 + 5] + 0.5; });  // lowest z above highest
  try {
    read(in_my_share, 3, meets_my_share);
    ADD_FAILURE() << "a box upside down was read";
  } catch (const vh::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(":/vortex: x_boxes[2][2]: ["), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is not an interval [lo, hi] with -pi <= lo <= hi < 2 pi"),
              std::string::npos)
        << e.what();
  }
  // A periodic interval reaches below 0 by at most half the box.
  write(false);
  edit_boxes([](std::vector<double>& box) { box[6 * 3 + 2] = -3.2; });
  try {
    read(in_my_share, 3, meets_my_share);
    ADD_FAILURE() << "a box from -3.2 was read";
  } catch (const vh::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(":/vortex: x_boxes[3][2]: [-3.2000000000000002, "), std::string::npos)
        << e.what();
  }
}

// The particles of a plane next to z = 0 that drifted below it and wrapped to just under 2π
// (rows 1 and 2 here, with rows 0 and 3 just above 0): their box is [2π − 0.05 − 2π, 0.03], not
// the box's height, so a rank whose share of the heights lies away from 0 does not read them
// (on 3 ranks the middle one; with the plain [lowest, highest] every rank read that chunk).
TEST_F(VortexCheckpointMpi, ABoxAcrossTheSeamAtZeroIsAsHighAsItsParticles) {
  const Comm w = Comm::world();
  const auto [first, count] = my_range(w);
  const double seam_z[4] = {0.01, 2 * vh::kPi - 0.05, 2 * vh::kPi - 0.02, 0.03};
  State all = part(0, kN, false);
  for (std::size_t i = 0; i < 4; ++i) all.particles.x[i][2] = seam_z[i];
  write(false, [&](State& s) {
    for (std::size_t i = first; i < first + count && i < 4; ++i) s.particles.x[i - first][2] = seam_z[i];
  });
  std::vector<double> box(6 * ((kN + 3) / 4));
  edit_boxes([&](std::vector<double>& b) { box = b; });
  w.bcast(box.data(), box.size() * sizeof(double));  // rank 0 read them
  EXPECT_NEAR(box[2], -0.05, 1e-14);  // box 0's z
  EXPECT_EQ(box[5], 0.03);
  EXPECT_EQ(box[6 + 2], all.particles.x[4][2]);  // box 1 (rows 4-7) as before: z rising
  EXPECT_EQ(box[6 + 5], all.particles.x[7][2]);
  // This rank's share: the heights (wrapped into [0, 2π)) of its R-th of the box; a box meets it
  // where one of the shares from its lowest to its highest height, periodically, is this rank's.
  const int R = w.size();
  auto share = [R](double z) { return static_cast<int>(std::floor(z / (2 * vh::kPi) * R)); };
  auto mine = [&](int s) { return ((s % R) + R) % R == w.rank(); };
  auto keep = [&](const Vec3& x) { return mine(share(x[2])); };
  auto meets = [&](const Vec3& lo, const Vec3& hi) {
    for (int s = share(lo[2]); s <= share(hi[2]); ++s)
      if (mine(s)) return true;
    return false;
  };
  std::size_t got_read = 0;
  const State got = read(keep, 3, meets, &got_read);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < kN; ++i)
    if (keep(all.particles.x[i])) {
      ASSERT_LT(kept, got.particles.size());
      EXPECT_EQ(got.particles.x[kept++], all.particles.x[i]);
    }
  EXPECT_EQ(kept, got.particles.size());
  // On 3 ranks the middle one's share [2.09, 4.19) meets boxes 2-4 (rows 8-19), so it reads the
  // chunks of 3 from row 6 to row 20: 15 positions (21 with the plain box 0, [0.01, 6.23]).
  if (R == 3 && w.rank() == 1) {
    EXPECT_EQ(got_read, 15u);
  }
  if (R == 1) {
    EXPECT_EQ(got_read, kN);
  }
}

// A rank reads the arrays other than the positions only where it keeps the particles, so a bad
// value there is found by one rank: every rank refuses, with its message.
TEST_F(VortexCheckpointMpi, AValueTheChecksRefuseIsNamedByItsIndexInTheFileOnEveryRank) {
  // Particle 21: the last rank's part when written on 2 and 3 ranks, the eighth chunk of 3 when
  // read, and kept by the last rank only.
  const Comm w = Comm::world();
  const auto [first, count] = my_range(w);
  write(true, [&](State& s) {
    if (21 >= first && 21 < first + count) s.dalpha_prev[21 - first][2] = std::numeric_limits<double>::infinity();
  });
  for (const vh::app::KeepParticle& keep : {vh::app::KeepParticle(), vh::app::KeepParticle(in_my_share)}) {
    try {
      read(keep);
      ADD_FAILURE() << "the infinite value was read";
    } catch (const vh::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(":/vortex: dalpha_prev[21][2] = inf is not finite"), std::string::npos)
          << e.what();
    }
  }
}

TEST_F(VortexCheckpointMpi, AnArrayOfAnotherLatticeIsRefusedBeforeAnyValueIsRead) {
  write(false);
  vh::h5::Handle f = vh::h5::open_file(path_);
  vh::h5::Handle g = vh::h5::open_group(f, "vortex");
  try {
    vh::app::load_vortex_state(g, Grid{4}, vh::vortex::Bounds{}, {}, {}, 64, Comm::world());
    ADD_FAILURE() << "27 particles read as 64";
  } catch (const vh::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(":/vortex/x: shape [27 3], expected [64 3]"), std::string::npos) << e.what();
  }
}

}  // namespace
