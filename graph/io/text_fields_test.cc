#include "graph/io/text_fields.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph::io {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SplitLinesTest, DropsCarriageReturnsAndTheFinalEmptyLine) {
  EXPECT_THAT(SplitLines("a\r\nb\n\nc\n"), ElementsAre("a", "b", "", "c"));
  EXPECT_THAT(SplitLines("a\nb"), ElementsAre("a", "b"));
  EXPECT_TRUE(SplitLines("").empty());
}

TEST(ParseIntFieldTest, AcceptsOnlyWholeIntegers) {
  ASSERT_OK_AND_ASSIGN(int64_t v, ParseIntField("-42", "f:3", "node id"));
  EXPECT_EQ(v, -42);
  for (const char* bad : {"", "+1", " 1", "1 ", "1.0", "0x10", "99999999999999999999"}) {
    EXPECT_THAT(ParseIntField(bad, "f:3", "node id"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("f:3: node id '")))
        << bad;
  }
}

TEST(ParseFloatFieldTest, AcceptsFiniteDecimals) {
  ASSERT_OK_AND_ASSIGN(float v, ParseFloatField("-0.057943", "f:1", "feature"));
  EXPECT_FLOAT_EQ(v, -0.057943f);
  ASSERT_OK_AND_ASSIGN(float e, ParseFloatField("1.5e-3", "f:1", "feature"));
  EXPECT_FLOAT_EQ(e, 0.0015f);
  ASSERT_OK_AND_ASSIGN(float tiny, ParseFloatField("1e-60", "f:1", "feature"));
  EXPECT_EQ(tiny, 0.0f);
  for (const char* bad : {"", "nan", "inf", "1e39", "1e400", "1,5", "+1", "x"}) {
    EXPECT_THAT(ParseFloatField(bad, "f:1", "feature"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not a finite number")))
        << bad;
  }
}

}  // namespace
}  // namespace fgl::graph::io
