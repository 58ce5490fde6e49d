#include "experiments/paired_interval.h"

#include <cmath>

#include "gtest/gtest.h"

namespace fgl::experiments {
namespace {

TEST(StudentT975Test, TableAndExpansion) {
  EXPECT_NEAR(StudentT975(1), 12.706, 1e-3);
  EXPECT_NEAR(StudentT975(13), 2.160, 1e-3);
  // Beyond the table: the exact quantiles are 2.0211 (40), 2.0003 (60), 1.9799 (120).
  EXPECT_NEAR(StudentT975(40), 2.0211, 1e-4);
  EXPECT_NEAR(StudentT975(60), 2.0003, 1e-4);
  EXPECT_NEAR(StudentT975(120), 1.9799, 1e-4);
  EXPECT_TRUE(std::isnan(StudentT975(0)));
}

TEST(IntervalOfTest, HandComputed) {
  // Differences 1, 2, 3: mean 2, sd 1, half-width t(2) / sqrt(3) = 4.3027 / 1.7321 = 2.4842.
  const PairedInterval i = IntervalOf({1, 2, 3});
  EXPECT_EQ(i.n, 3);
  EXPECT_TRUE(i.has_interval);
  EXPECT_DOUBLE_EQ(i.mean, 2);
  EXPECT_NEAR(i.low, 2 - 2.48417, 1e-4);
  EXPECT_NEAR(i.high, 2 + 2.48417, 1e-4);
  const PairedInterval one = IntervalOf({5});
  EXPECT_FALSE(one.has_interval);
  EXPECT_EQ(one.mean, 5);
}

TEST(PairedDifferencesTest, PairsBySeedElseByPosition) {
  // Seeds 7 and 9 in both; 8 only on the left, 6 only on the right.
  EXPECT_EQ(PairedDifferences({10, 20, 30}, {7, 8, 9}, {1, 3, 4}, {9, 6, 7}),
            (std::map<uint64_t, double>{{7, 6}, {9, 29}}));
  EXPECT_EQ(PairedDifferences({10, 20}, {}, {1, 2, 3}, {}), (std::map<uint64_t, double>{{0, 9}, {1, 18}}));
}

TEST(JudgeTest, ThreeVerdicts) {
  PairedInterval i;
  i.has_interval = true;
  i.low = 0.5, i.high = 2.5;  // a gain, reaching +1.7
  EXPECT_EQ(Judge(i, 1.7), Verdict::kReproduced);
  i.low = -0.5, i.high = 1.3;  // the paper's own code on its partition: excludes +1.7
  EXPECT_EQ(Judge(i, 1.7), Verdict::kNotReproduced);
  i.low = -0.5, i.high = 2.5;  // reaches the margin but includes no gain
  EXPECT_EQ(Judge(i, 1.7), Verdict::kInconclusive);
  i.low = -0.3, i.high = 0.2;  // a cost of at most 0.4 (margin -0.4): within it
  EXPECT_EQ(Judge(i, -0.4), Verdict::kReproduced);
  i.low = -0.6, i.high = 0.2;
  EXPECT_EQ(Judge(i, -0.4), Verdict::kInconclusive);
  i.has_interval = false;
  EXPECT_EQ(Judge(i, 0), Verdict::kInconclusive);
  EXPECT_EQ(VerdictName(Verdict::kNotReproduced), "not reproduced");
}

}  // namespace
}  // namespace fgl::experiments
