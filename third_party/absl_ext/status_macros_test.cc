#include "third_party/absl_ext/status_macros.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd value " + std::to_string(x));
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  FGL_ASSIGN_OR_RETURN(int h, Half(x));
  FGL_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

absl::Status CheckQuarter(int x) {
  FGL_RETURN_IF_ERROR(Quarter(x).status());
  return absl::OkStatus();
}

TEST(StatusMacrosTest, PropagatesValueAndError) {
  ASSERT_OK_AND_ASSIGN(int q, Quarter(12));
  EXPECT_EQ(q, 3);
  EXPECT_THAT(Quarter(6), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("odd value 3")));
  EXPECT_OK(CheckQuarter(8));
  EXPECT_THAT(CheckQuarter(10), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("5")));
}

}  // namespace
}  // namespace fgl
