#include "experiments/run_scheduling.h"

#include <cmath>

#include "gtest/gtest.h"

namespace fgl::experiments {
namespace {

constexpr int64_t kGB = 1000 * 1000 * 1000;

TEST(NextRunThatFits, StartsTheFirstRunWhenNothingRunsEvenAboveTheLimit) {
  EXPECT_EQ(NextRunThatFits({30 * kGB, 1 * kGB}, /*running=*/0, 0, 20 * kGB, 1 * kGB), 0u);
}

TEST(NextRunThatFits, SkipsARunThatWouldExceedTheLimitBesideTheRunningOnes) {
  // A 14 GB run is going: a second 14 GB run waits, a 2 GB one behind it goes first.
  EXPECT_EQ(NextRunThatFits({14 * kGB, 2 * kGB}, 1, 14 * kGB, 21 * kGB, 9 * kGB), 1u);
  EXPECT_EQ(NextRunThatFits({14 * kGB}, 1, 14 * kGB, 21 * kGB, 9 * kGB), std::nullopt);
}

TEST(NextRunThatFits, WaitsWhileTheMachineHasLessAvailableThanTheRunNeeds) {
  // Within this runner's limit, but another runner's runs hold the memory.
  EXPECT_EQ(NextRunThatFits({8 * kGB}, 1, 1 * kGB, 21 * kGB, 4 * kGB), std::nullopt);
  EXPECT_EQ(NextRunThatFits({8 * kGB}, 1, 1 * kGB, 21 * kGB, /*available unknown*/ 0), 0u);
}

TEST(NextRunThatFits, UnknownPeaksCountAsNothing) {
  EXPECT_EQ(NextRunThatFits({0, 0}, 1, 20 * kGB, 20 * kGB, 1), 0u);
  EXPECT_EQ(NextRunThatFits({}, 0, 0, 20 * kGB, 0), std::nullopt);
}

TEST(FinishesInTime, StartsOnlyRunsExpectedToEndBeforeTheStopTime) {
  EXPECT_TRUE(FinishesInTime(3600.0, 3600.0));
  EXPECT_FALSE(FinishesInTime(3601.0, 3600.0));
  EXPECT_FALSE(FinishesInTime(10.0, -5.0));  // the stop time has passed
}

TEST(FinishesInTime, UnknownOrNonsenseDurationsDoNotStart) {
  EXPECT_FALSE(FinishesInTime(std::nullopt, 1e9));
  EXPECT_FALSE(FinishesInTime(0.0, 1e9));
  EXPECT_FALSE(FinishesInTime(std::nan(""), 1e9));
}

}  // namespace
}  // namespace fgl::experiments
