#include "graph/split.h"

#include <vector>

#include "gmock/gmock.h"
#include "graph/csbm.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

// Labels with class sizes {0: 10, 1: 7, 2: 3}.
torch::Tensor Labels10_7_3() {
  std::vector<int64_t> y;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < (c == 0 ? 10 : c == 1 ? 7 : 3); ++i) y.push_back(c);
  return torch::tensor(y, torch::kInt64);
}

std::vector<int64_t> CountPerClass(const torch::Tensor& mask, const torch::Tensor& y, int c) {
  std::vector<int64_t> out(c, 0);
  for (int64_t v = 0; v < y.size(0); ++v)
    if (mask[v].item<bool>()) ++out[y[v].item<int64_t>()];
  return out;
}

TEST(ClassStratifiedSplitTest, FloorsToTrainAndValRestToTest) {
  const torch::Tensor y = Labels10_7_3();
  ASSERT_OK_AND_ASSIGN(NodeSplit s, ClassStratifiedSplit(y, 3, 0.2, 0.4, 1));
  // class sizes 10/7/3: train floor(.2n) = 2/1/0, val floor(.4n) = 4/2/1, test = 4/4/2.
  EXPECT_EQ(CountPerClass(s.train, y, 3), (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(CountPerClass(s.val, y, 3), (std::vector<int64_t>{4, 2, 1}));
  EXPECT_EQ(CountPerClass(s.test, y, 3), (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ((s.train.logical_and(s.val)).sum().item<int64_t>(), 0);
  EXPECT_EQ((s.train.logical_or(s.val).logical_or(s.test)).sum().item<int64_t>(), 20);
  ASSERT_OK_AND_ASSIGN(NodeSplit again, ClassStratifiedSplit(y, 3, 0.2, 0.4, 1));
  EXPECT_TRUE(torch::equal(s.train, again.train));
  ASSERT_OK_AND_ASSIGN(NodeSplit other, ClassStratifiedSplit(y, 3, 0.2, 0.4, 2));
  EXPECT_FALSE(torch::equal(s.val, other.val) && torch::equal(s.train, other.train));
}

TEST(PerClassCountSplitTest, TwentyThirtyRest) {
  const torch::Tensor y = Labels10_7_3();
  ASSERT_OK_AND_ASSIGN(NodeSplit s, PerClassCountSplit(y, 3, 2, 3, 5));
  EXPECT_EQ(CountPerClass(s.train, y, 3), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(CountPerClass(s.val, y, 3), (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(CountPerClass(s.test, y, 3), (std::vector<int64_t>{5, 2, 0}));
}

TEST(LabelRateSplitTest, OnePercentStratifiedOrUniform) {
  CsbmOptions o;
  o.num_nodes = 1000;
  o.num_classes = 5;
  ASSERT_OK_AND_ASSIGN(Dataset d, MakeCsbm(o, 3));
  ASSERT_OK_AND_ASSIGN(NodeSplit s, LabelRateSplit(d.labels, 5, 0.01, 0.2, 0.2, 4));
  // n_train = 10 >= 5 classes: stratified, 2 per (balanced) class.
  EXPECT_EQ(CountPerClass(s.train, d.labels, 5), (std::vector<int64_t>(5, 2)));
  SplitSizes sz = CountSplit(s);
  EXPECT_EQ(sz.val, 200);
  EXPECT_EQ(sz.test, 200);
  // n = 300, 1% = 3 < 5 classes: uniform, 3 train nodes.
  torch::Tensor small = d.labels.slice(0, 0, 300).clone();
  ASSERT_OK_AND_ASSIGN(NodeSplit u, LabelRateSplit(small, 5, 0.01, 0.2, 0.2, 4));
  EXPECT_EQ(CountSplit(u).train, 3);
}

TEST(OrderedTailSplitTest, FedEgoLayout) {
  // n = 1000, test 200: val floor(1000/5) = 200 (nodes 600..799), train 0..599.
  ASSERT_OK_AND_ASSIGN(NodeSplit s, OrderedTailSplit(1000, 200));
  EXPECT_TRUE(s.train[599].item<bool>());
  EXPECT_TRUE(s.val[600].item<bool>());
  EXPECT_TRUE(s.test[800].item<bool>());
  SplitSizes sz = CountSplit(s);
  EXPECT_EQ(sz.train, 600);
  EXPECT_EQ(sz.val, 200);
  EXPECT_EQ(sz.test, 200);
}

TEST(MakeSplitTest, RulesAndErrors) {
  ASSERT_OK_AND_ASSIGN(Dataset d, MakeCsbm({}, 1));
  ASSERT_OK_AND_ASSIGN(NodeSplit s, MakeSplit("stratified:train=0.6,val=0.2", d, 1));
  EXPECT_EQ(CountSplit(s).train, 1200);  // 5 balanced classes of 400: 240 each
  EXPECT_THAT(MakeSplit("stratified:trian=0.6", d, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("trian")));
  EXPECT_THAT(MakeSplit("bogus", d, 1), StatusIs(absl::StatusCode::kNotFound, HasSubstr("bogus")));
  EXPECT_THAT(MakeSplit("provided:index=0", d, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ships 0 split")));
  EXPECT_THAT(MakeSplit("stratified:train=0.8,val=0.4", d, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sum to <= 1")));
}

}  // namespace
}  // namespace fgl::graph
