#include "graph/csr_graph.h"

#include <vector>

#include "gmock/gmock.h"
#include "graph/testing/tensor_values.h"
#include "graph/testing/tiny_graphs.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<int64_t> Vec(const torch::Tensor& t) { return testing::Vec<int64_t>(t); }

TEST(CsrFromEdgesTest, SymmetrisesMergesAndDropsSelfLoops) {
  // edges (0,1), (1,0), (2,2), (1,2): A = [[0,1,0],[1,0,1],[0,1,0]].
  std::vector<int64_t> src = {0, 1, 2, 1}, dst = {1, 0, 2, 2};
  ASSERT_OK_AND_ASSIGN(CsrGraph g, CsrFromEdges(3, src, dst));
  EXPECT_THAT(Vec(g.row_ptr()), ElementsAre(0, 1, 3, 4));
  EXPECT_THAT(Vec(g.col()), ElementsAre(1, 0, 2, 1));
  EXPECT_EQ(g.num_undirected_edges(), 2);
  EXPECT_TRUE(g.IsSymmetric());
  EXPECT_EQ(g.CountSelfLoops(), 0);
}

TEST(CsrFromEdgesTest, KeepsDirectionAndLoopsWhenAsked) {
  std::vector<int64_t> src = {0, 2}, dst = {1, 2};
  ASSERT_OK_AND_ASSIGN(CsrGraph g, CsrFromEdges(3, src, dst, {.symmetrize = false,
                                                              .remove_self_loops = false}));
  EXPECT_THAT(Vec(g.row_ptr()), ElementsAre(0, 1, 1, 2));
  EXPECT_FALSE(g.IsSymmetric());
  EXPECT_EQ(g.CountSelfLoops(), 1);
}

TEST(CsrFromEdgesTest, RejectsOutOfRangeNode) {
  std::vector<int64_t> src = {0, 1}, dst = {1, 2710};
  EXPECT_THAT(CsrFromEdges(2708 - 2706, src, dst, {}, "cora/edges"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cora/edges: edge 1 (1, 2710)")));
}

TEST(CsrGraphTest, CreateValidates) {
  EXPECT_THAT(CsrGraph::Create(torch::tensor({0, 2, 1}, torch::kInt64),
                               torch::tensor({1, 0}, torch::kInt64)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("decreases")));
  EXPECT_THAT(CsrGraph::Create(torch::tensor({0, 1, 2}, torch::kInt64),
                               torch::tensor({1, 5}, torch::kInt64)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("col[1] = 5")));
  EXPECT_THAT(CsrGraph::Create(torch::tensor({1, 1}, torch::kInt64),
                               torch::tensor({0}, torch::kInt64)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("row_ptr[0]")));
}

TEST(InducedSubgraphTest, ReportsDroppedEntries) {
  // Two triangles 0-1-2, 3-4-5 with bridge 2-3; keep {3, 2, 1}: edges 2-3 and 1-2 survive.
  const CsrGraph g = testing::TwoTrianglesJoinedByOneEdge();
  std::vector<int64_t> nodes = {3, 2, 1};
  ASSERT_OK_AND_ASSIGN(Subgraph s, InducedSubgraph(g, nodes));
  EXPECT_EQ(s.graph.num_nodes(), 3);
  EXPECT_EQ(s.graph.num_undirected_edges(), 2);
  EXPECT_TRUE(s.graph.IsSymmetric());
  // Local 0 = node 3: neighbour node 2 = local 1.
  EXPECT_THAT(std::vector<int64_t>(s.graph.neighbors(0).begin(), s.graph.neighbors(0).end()),
              ElementsAre(1));
  // Dropped: 3-4, 3-5 (from 3), 2-0 (from 2), 1-0 (from 1).
  EXPECT_EQ(s.dropped_entries, 4);
  std::vector<int64_t> twice = {1, 1};
  EXPECT_THAT(InducedSubgraph(g, twice),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("listed twice")));
}

TEST(ConnectedComponentsTest, FindsLargest) {
  // Path 0-1-2 plus isolated nodes 3, 4.
  std::vector<int64_t> src = {0, 1}, dst = {1, 2};
  ASSERT_OK_AND_ASSIGN(CsrGraph g, CsrFromEdges(5, src, dst));
  int64_t k = 0;
  ConnectedComponents(g, &k);
  EXPECT_EQ(k, 3);
  EXPECT_THAT(LargestComponentNodes(g), ElementsAre(0, 1, 2));
}

}  // namespace
}  // namespace fgl::graph
