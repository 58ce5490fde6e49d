#include "fl/method_params.h"

#include <cmath>
#include <limits>

#include "fl/proto/range_test.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::fl {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;
using proto::testing::RangeTestParams;

absl::Status Check(const RangeTestParams& p) { return CheckRanges(p, "t"); }

::testing::Matcher<absl::Status> Refused(const std::string& what) {
  return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what));
}

TEST(CheckRangesTest, DefaultsAndValuesInRangePass) {
  RangeTestParams p;
  EXPECT_OK(Check(p));
  p.set_knn(1);
  p.set_temperature(1e-9);
  p.set_alpha(1);
  p.set_below(-1e-3f);
  p.set_free(-1e300);
  p.set_count(10);
  p.mutable_inner()->set_rate(0);
  p.add_layers()->add_sizes(1);
  p.add_weights(0);
  p.set_steps(1);
  p.set_label("any");
  EXPECT_OK(Check(p));
}

TEST(CheckRangesTest, InclusiveAndExclusiveBounds) {
  RangeTestParams p;
  p.set_knn(0);
  EXPECT_THAT(Check(p), Refused("t.knn = 0: must be >= 1"));
  p = RangeTestParams();
  p.set_temperature(0);
  EXPECT_THAT(Check(p), Refused("t.temperature = 0: must be > 0"));
  p = RangeTestParams();
  p.set_alpha(0);
  EXPECT_OK(Check(p));
  p.set_alpha(1.5);
  EXPECT_THAT(Check(p), Refused("t.alpha = 1.5: must be in [0, 1]"));
  p.set_alpha(-0.5);
  EXPECT_THAT(Check(p), Refused("t.alpha = -0.5: must be in [0, 1]"));
  p = RangeTestParams();
  p.set_below(0);
  EXPECT_THAT(Check(p), Refused("t.below = 0: must be < 0"));
  p = RangeTestParams();
  p.set_count(11);
  EXPECT_THAT(Check(p), Refused("t.count = 11: must be <= 10"));
  p = RangeTestParams();
  p.mutable_inner()->set_rate(1);
  EXPECT_THAT(Check(p), Refused("t.inner.rate = 1: must be in [0, 1)"));
}

TEST(CheckRangesTest, NonFiniteNumbersAreRefusedWithOrWithoutARange) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  RangeTestParams p;
  p.set_free(nan);
  EXPECT_THAT(Check(p), Refused("t.free = nan: must be a finite number"));
  p = RangeTestParams();
  p.set_alpha(nan);
  EXPECT_THAT(Check(p), Refused("t.alpha = nan: must be a finite number"));
  p = RangeTestParams();
  p.set_temperature(inf);  // inside [0, inf) as a number, still refused
  EXPECT_THAT(Check(p), Refused("t.temperature = inf: must be a finite number"));
  p = RangeTestParams();
  p.set_below(-std::numeric_limits<float>::infinity());
  EXPECT_THAT(Check(p), Refused("t.below = -inf"));
}

TEST(CheckRangesTest, NestedAndRepeatedFieldsAreNamedByPath) {
  RangeTestParams p;
  p.add_weights(1);
  p.add_weights(-2);
  EXPECT_THAT(Check(p), Refused("t.weights[1] = -2: must be >= 0"));
  p = RangeTestParams();
  p.add_layers();
  p.add_layers()->set_rate(2);
  EXPECT_THAT(Check(p), Refused("t.layers[1].rate = 2: must be in [0, 1)"));
  p = RangeTestParams();
  p.mutable_inner()->add_sizes(3);
  p.mutable_inner()->add_sizes(0);
  EXPECT_THAT(Check(p), Refused("t.inner.sizes[1] = 0: must be >= 1"));
  p = RangeTestParams();
  p.add_layers()->set_rate(std::nan(""));
  EXPECT_THAT(Check(p), Refused("t.layers[0].rate = nan"));
}

TEST(CheckRangesTest, OnlyTheSetMemberOfAOneofIsChecked) {
  RangeTestParams p;  // steps' default 0 is below its range, but steps is not set
  EXPECT_OK(Check(p));
  p.set_name("x");
  EXPECT_OK(Check(p));
  p.set_steps(0);
  EXPECT_THAT(Check(p), Refused("t.steps = 0: must be >= 1"));
}

TEST(CheckRangesTest, TypedParamsChecksRangesUnderTheParamsName) {
  EXPECT_EQ(ParamsName(RangeTestParams::descriptor()), "testing");
  RangeTestParams p;
  p.set_knn(0);
  google::protobuf::Any any;
  any.PackFrom(p);
  EXPECT_THAT(CheckMethodParams("m", {TypedParams<RangeTestParams>()}, {any}), Refused("testing.knn = 0: must be >= 1"));
  // A validator of its own runs after the ranges, for what they cannot say.
  ParamsSpec spec = TypedParams<RangeTestParams>(+[](const RangeTestParams& q) {
    return q.knn() > q.count() ? absl::InvalidArgumentError("knn > count") : absl::OkStatus();
  });
  p.set_knn(4);
  any.PackFrom(p);
  EXPECT_THAT(CheckMethodParams("m", {spec}, {any}), Refused("knn > count"));
  p.set_knn(3);
  any.PackFrom(p);
  EXPECT_OK(CheckMethodParams("m", {spec}, {any}));
}

}  // namespace
}  // namespace fgl::fl
