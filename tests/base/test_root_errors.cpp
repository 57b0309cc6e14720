// RootErrors (base/comm.h) on one rank: an error of rank 0's work is held until rethrow(), which
// keeps the kinds the program reports by (InputError, WriteError) and makes any other a
// SharedError; a vh::DeviceFault is not held but goes on at once, for the run driver to end the
// job as a GPU fault (its collectives cannot wait for a rank whose GPU is gone).
#include <gtest/gtest.h>

#include <stdexcept>

#include "base/comm.h"
#include "base/error.h"

namespace {

TEST(RootErrors, HoldsAnErrorUntilRethrowKeepingItsKind) {
  const vh::Comm one;
  vh::RootErrors err;
  int later = 0;
  err.run(one, [] { throw vh::InputError("bad deck"); });
  err.run(one, [&] { ++later; });  // skipped once an error is held
  EXPECT_TRUE(err.failed());
  EXPECT_EQ(later, 0);
  EXPECT_THROW(err.rethrow(one), vh::InputError);
  EXPECT_FALSE(err.failed());
  err.run(one, [] { throw std::runtime_error("disk"); });
  EXPECT_THROW(err.rethrow(one), vh::SharedError);
  EXPECT_NO_THROW(err.rethrow(one));
}

TEST(RootErrors, LetsADeviceFaultThrough) {
  const vh::Comm one;
  vh::RootErrors err;
  EXPECT_THROW(err.run(one, [] { throw vh::DeviceFault("unspecified launch failure", __FILE__, __LINE__); }),
               vh::DeviceFault);
  EXPECT_FALSE(err.failed());
}

}  // namespace
