#include "fl/phase_profile.h"

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fgl::fl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Names() {
  std::vector<std::string> names;
  for (const PhaseTotal& t : PhaseTotals()) names.push_back(t.name);
  return names;
}

TEST(PhaseProfileTest, RecordsNothingWhileOff) {
  EnablePhaseProfile(false);
  ResetPhaseProfile();
  { ScopedPhase phase("load"); }
  AddPhaseSeconds("explicit", 1.5);  // an explicit addition is the caller's decision
  EXPECT_THAT(Names(), ElementsAre("explicit"));
}

TEST(PhaseProfileTest, NestsRelativeNamesAndKeepsChildrenAfterTheirParent) {
  EnablePhaseProfile();
  ResetPhaseProfile();
  { ScopedPhase load("load"); }
  for (int round = 0; round < 3; ++round) {
    ScopedPhase rounds("rounds");
    { ScopedPhase train("rounds/client train"); ScopedPhase encode("message encode"); }
    ScopedPhase aggregate("rounds/server aggregate");
    ScopedPhase encode("message encode");  // relative to the innermost open phase
  }
  // The children ended before "rounds" did, but print after it.
  EXPECT_THAT(Names(), ElementsAre("load", "rounds", "rounds/client train", "rounds/client train/message encode",
                                   "rounds/server aggregate", "rounds/server aggregate/message encode"));
  for (const PhaseTotal& t : PhaseTotals()) {
    EXPECT_EQ(t.calls, t.name == "load" ? 1 : 3) << t.name;
    EXPECT_GE(t.seconds, 0) << t.name;
  }
}

TEST(PhaseProfileTest, AddsEveryThreadsSeconds) {
  EnablePhaseProfile();
  ResetPhaseProfile();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([] {
      for (int j = 0; j < 100; ++j) ScopedPhase phase("rounds/client train");
      AddPhaseSeconds("rounds/client train", 0.25);
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(PhaseTotals().size(), 1u);
  EXPECT_EQ(PhaseTotals()[0].calls, 404);
  EXPECT_GE(PhaseTotals()[0].seconds, 1.0);  // the four explicit quarter seconds at least
}

TEST(PhaseProfileTest, TableGivesEachPhaseItsShareOfTheWall) {
  EnablePhaseProfile();
  ResetPhaseProfile();
  AddPhaseSeconds("start-up", 0.5);
  AddPhaseSeconds("rounds/client train", 1.0);
  const std::string table = PhaseTable(2.0);
  EXPECT_THAT(table, HasSubstr("| start-up | 0.500 | 1 | 25.0% |"));
  // "rounds" was never entered itself: its child still prints, named by its path.
  EXPECT_THAT(table, HasSubstr("| rounds / client train | 1.000 | 1 | 50.0% |"));
}

}  // namespace
}  // namespace fgl::fl
