// Typed getters of the parsed deck: good values parse, bad ones are InputErrors naming key
// and origin.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/error.h"
#include "core/options.h"

namespace {

vh::Options make(const std::string& key, const std::string& v) {
  vh::Options o;
  o.value[key] = v;
  o.origin[key] = "deck.ini:3";
  return o;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const vh::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Options, TypedValues) {
  EXPECT_EQ(make("a.n", "64").integer("a.n"), 64);
  EXPECT_DOUBLE_EQ(make("a.x", "1.5e-3").real("a.x"), 1.5e-3);
  EXPECT_TRUE(std::isnan(make("a.x", "").real("a.x")));
  EXPECT_EQ(make("a.x", "2/3").real("a.x"), 2.0 / 3);  // a ratio, to the last bit
  EXPECT_EQ(make("a.x", "-1.5e1/4").real("a.x"), -3.75);
  EXPECT_TRUE(make("a.b", "yes").boolean("a.b"));
  EXPECT_FALSE(make("a.b", "off").boolean("a.b"));
  const auto l = make("a.l", "0, 1,2.5").reals("a.l");
  ASSERT_EQ(l.size(), 3u);
  EXPECT_DOUBLE_EQ(l[2], 2.5);
  EXPECT_EQ(make("a.c", "gpu").choice("a.c", {"cpu", "gpu"}), "gpu");
}

TEST(Options, BadValuesNameKeyAndOrigin) {
  const std::string m = message_of([] { make("a.n", "6x").integer("a.n"); });
  EXPECT_NE(m.find("deck.ini:3"), std::string::npos) << m;
  EXPECT_NE(m.find("a.n"), std::string::npos) << m;
  EXPECT_NE(m.find("'6x'"), std::string::npos) << m;
  EXPECT_THROW(make("a.x", "nan").real("a.x"), vh::InputError);
  EXPECT_THROW(make("a.x", "1.0.0").real("a.x"), vh::InputError);
  for (const char* bad : {"1/0", "0/0", "2/", "/3", "1/2/3", "2/3x"})
    EXPECT_THROW(make("a.x", bad).real("a.x"), vh::InputError) << bad;
  EXPECT_THROW(make("a.l", "1,x").reals("a.l"), vh::InputError);
  const std::string c = message_of([] { make("a.c", "tpu").choice("a.c", {"cpu", "gpu"}); });
  EXPECT_NE(c.find("allowed: cpu, gpu"), std::string::npos) << c;
}

}  // namespace
