#include "graph/option_string.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

TEST(OptionStringTest, ParsesTypedValues) {
  ASSERT_OK_AND_ASSIGN(OptionString o, OptionString::Parse("louvain:resolution=0.5, delta=20,fix=true"));
  EXPECT_EQ(o.name(), "louvain");
  ASSERT_OK_AND_ASSIGN(double r, o.Double("resolution", 1.0));
  ASSERT_OK_AND_ASSIGN(int64_t d, o.Int("delta", 0));
  ASSERT_OK_AND_ASSIGN(bool f, o.Bool("fix", false));
  ASSERT_OK_AND_ASSIGN(int64_t absent, o.Int("absent", 7));
  EXPECT_EQ(r, 0.5);
  EXPECT_EQ(d, 20);
  EXPECT_TRUE(f);
  EXPECT_EQ(absent, 7);
  EXPECT_OK(o.CheckAllUsed());
}

TEST(OptionStringTest, RejectsMisspeltAndMalformed) {
  ASSERT_OK_AND_ASSIGN(OptionString o, OptionString::Parse("louvain:delat=20"));
  ASSERT_OK(o.Int("delta", 20).status());
  EXPECT_THAT(o.CheckAllUsed(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("delat")));
  EXPECT_THAT(OptionString::Parse("x:a=1,a=2"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                         HasSubstr("given twice")));
  EXPECT_THAT(OptionString::Parse("x:novalue"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                        HasSubstr("key=value")));
  ASSERT_OK_AND_ASSIGN(OptionString p, OptionString::Parse("x:n=abc,b=maybe"));
  EXPECT_THAT(p.Int("n", 0), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("n=abc")));
  EXPECT_THAT(p.Bool("b", false), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("b=maybe")));
}

}  // namespace
}  // namespace fgl::graph
