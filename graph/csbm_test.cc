#include "graph/csbm.h"

#include "gmock/gmock.h"
#include "graph/homophily.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph {
namespace {

using ::fgl::testing::StatusIs;

TEST(CsbmTest, SameSeedSameBytesAndRequestedHomophily) {
  CsbmOptions o;
  o.homophily = 0.9;
  ASSERT_OK_AND_ASSIGN(Dataset a, MakeCsbm(o, 11));
  ASSERT_OK_AND_ASSIGN(Dataset b, MakeCsbm(o, 11));
  ASSERT_OK_AND_ASSIGN(Dataset c, MakeCsbm(o, 12));
  EXPECT_TRUE(torch::equal(a.features, b.features));
  EXPECT_TRUE(torch::equal(a.graph.col(), b.graph.col()));
  EXPECT_FALSE(torch::equal(a.graph.col(), c.graph.col()));
  EXPECT_EQ(a.num_nodes(), 2000);
  EXPECT_TRUE(a.graph.IsSymmetric());
  EXPECT_EQ(a.graph.CountSelfLoops(), 0);
  // ~8000 drawn edges minus a few duplicates and self-loops.
  EXPECT_NEAR(a.graph.num_undirected_edges(), 8000, 100);
  EXPECT_NEAR(EdgeHomophily(a.graph, a.labels), 0.9, 0.02);
  EXPECT_OK(ValidateDataset(a));
}

TEST(CsbmTest, RejectsBadOptions) {
  CsbmOptions o;
  o.homophily = 1.5;
  EXPECT_THAT(MakeCsbm(o, 1), StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("homophily=1.5")));
}

}  // namespace
}  // namespace fgl::graph
