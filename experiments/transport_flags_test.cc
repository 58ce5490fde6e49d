#include "experiments/transport_flags.h"

#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::experiments {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

// Issue #68 (10): --join_timeout_s=1e300 or nan made the server give up at once.
TEST(TransportFlagsTest, SecondsMustBeFinitePositiveAndBounded) {
  EXPECT_OK(CheckSeconds("join_timeout_s", 600));
  EXPECT_OK(CheckSeconds("round_deadline_s", 0.5));
  EXPECT_OK(CheckSeconds("join_timeout_s", kMaxWaitSeconds));
  for (double bad : {0.0, -1.0, 1e300, kMaxWaitSeconds * 1.01, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    EXPECT_THAT(CheckSeconds("join_timeout_s", bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--join_timeout_s=")))
        << bad;
  }
  EXPECT_THAT(CheckSeconds("join_timeout_s", std::numeric_limits<double>::quiet_NaN()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--join_timeout_s=nan")));
}

// --min_clients above the number of clients was accepted.
TEST(TransportFlagsTest, ClientCountsAreAtMostTheRunsClients) {
  EXPECT_OK(CheckClientCount("min_clients", 0, 3));  // 0: all
  EXPECT_OK(CheckClientCount("min_clients", 3, 3));
  EXPECT_THAT(CheckClientCount("min_clients", 4, 3),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--min_clients=4: must be in [0, 3]")));
  EXPECT_THAT(CheckClientCount("min_clients_per_round", -1, 3),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--min_clients_per_round=-1")));
}

}  // namespace
}  // namespace fgl::experiments
