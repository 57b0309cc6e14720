// main() of the GoogleTest programs that ctest runs under mpirun (tests/mpi/CMakeLists.txt):
// MPI up (vh::MpiSession), every rank runs every test, rank 0 prints the usual report and
// the others only their failures, each line marked with its rank. mpirun fails when any
// rank does. Tests must reach every collective on every rank: compute first, then EXPECT.
#include <gtest/gtest.h>

#include <cstdio>

#include "base/comm.h"

namespace {

/// Failures of a rank other than 0, one line each.
class RankFailures : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailures(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(),
                   r.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  vh::MpiSession mpi(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const vh::Comm world = vh::Comm::world();
  if (!world.root()) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailures(world.rank()));
  }
  return RUN_ALL_TESTS();
}
