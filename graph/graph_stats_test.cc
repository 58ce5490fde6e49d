// Tests for homophily, random-walk return probabilities, ego-graph sampling and augmentations.
#include <algorithm>
#include <vector>

#include "graph/augment.h"
#include "graph/ego_graph.h"
#include "graph/homophily.h"
#include "graph/random_walk.h"
#include "graph/testing/tiny_graphs.h"
#include "gtest/gtest.h"

namespace fgl::graph {
namespace {

TEST(HomophilyTest, TwoTriangles) {
  // Triangles {0,1,2} (label 0) and {3,4,5} (label 1), bridge 2-3: 14 entries, 2 cross.
  const CsrGraph g = testing::TwoTrianglesJoinedByOneEdge();
  torch::Tensor y = torch::tensor({0, 0, 0, 1, 1, 1}, torch::kInt64);
  EXPECT_DOUBLE_EQ(EdgeHomophily(g, y), 12.0 / 14.0);
  // Nodes 2 and 3 have 2 of 3 same-label neighbours, the rest 1.
  EXPECT_DOUBLE_EQ(NodeHomophily(g, y), (4 * 1.0 + 2 * 2.0 / 3.0) / 6.0);
  std::vector<double> h = ClassWiseHomophily(g, y, 2);
  EXPECT_DOUBLE_EQ(h[0], 6.0 / 7.0);
  EXPECT_DOUBLE_EQ(h[1], 6.0 / 7.0);
  EXPECT_DOUBLE_EQ(ClassHomophily(g, y, 2), 2 * (6.0 / 7.0 - 0.5));
}

TEST(RandomWalkTest, CycleReturnProbabilities) {
  // Cycle of 6 with self-loops: each step stays w.p. 1/3 or moves left/right w.p. 1/3.
  // T^1_ii = 1/3; T^2_ii = 1/9 + 1/9 + 1/9 = 3/9.
  const CsrGraph g = testing::CycleGraph(6);
  torch::Tensor r = RandomWalkReturnProbabilities(g, 3);
  EXPECT_NEAR(r[0][0].item<float>(), 1.0 / 3, 1e-6);
  EXPECT_NEAR(r[4][1].item<float>(), 3.0 / 9, 1e-6);
  // Without self-loops on a cycle: T^1_ii = 0, T^2_ii = 1/2.
  torch::Tensor s = RandomWalkReturnProbabilities(g, 2, false);
  EXPECT_NEAR(s[2][0].item<float>(), 0.0, 1e-7);
  EXPECT_NEAR(s[2][1].item<float>(), 0.5, 1e-6);
}

TEST(RandomWalkTest, OneThreadEqualsTwo) {
  const CsrGraph g = testing::CycleGraph(300);
  at::set_num_threads(1);
  torch::Tensor a = RandomWalkReturnProbabilities(g, 5);
  at::set_num_threads(2);
  torch::Tensor b = RandomWalkReturnProbabilities(g, 5);
  EXPECT_TRUE(torch::equal(a, b));
}

TEST(EgoGraphTest, FedEgoShapeAndParentage) {
  const CsrGraph g = testing::TwoTrianglesJoinedByOneEdge();
  EXPECT_EQ(EgoTreeSize(2, 6), 43);
  Rng rng(5);
  std::vector<int64_t> centres = {0, 3};
  torch::Tensor t = SampleEgoTrees(g, centres, 2, 6, rng);
  ASSERT_EQ(t.size(1), 43);
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_EQ(t[i][0].item<int64_t>(), centres[i]);
    for (int64_t p = 1; p < 43; ++p) {
      const int64_t parent = (p - 1) / 6, child = t[i][p].item<int64_t>(),
                    pv = t[i][parent].item<int64_t>();
      auto nb = g.neighbors(pv);
      EXPECT_NE(std::find(nb.begin(), nb.end(), child), nb.end()) << "position " << p;
    }
  }
  Rng again(5);
  EXPECT_TRUE(torch::equal(t, SampleEgoTrees(g, centres, 2, 6, again)));
}

TEST(EgoGraphTest, IsolatedCentreIsJustTheRoot) {
  const CsrGraph g = CsrGraph::Empty(3);
  Rng rng(1);
  std::vector<int64_t> centres = {1};
  torch::Tensor t = SampleEgoTrees(g, centres, 2, 6, rng);
  EXPECT_EQ(t[0][0].item<int64_t>(), 1);
  EXPECT_EQ((t == -1).sum().item<int64_t>(), 42);
}

TEST(AugmentTest, DropEdgesKeepsSymmetryAndRate) {
  const CsrGraph g = testing::CycleGraph(2000);
  Rng rng(3);
  CsrGraph d = DropEdges(g, 0.3, rng);
  EXPECT_TRUE(d.IsSymmetric());
  EXPECT_NEAR(d.num_undirected_edges(), 1400, 80);
  torch::Tensor x = torch::ones({4, 1000});
  torch::Tensor m = MaskFeatureColumns(x, 0.25, rng);
  const double kept = m.sum().item<double>() / 4000.0;
  EXPECT_NEAR(kept, 0.75, 0.06);
  EXPECT_TRUE(torch::equal(m[0], m[3]));  // the same columns for every node
}

TEST(AugmentTest, EdgeKeepMaskIsWhatDropEdgesKeeps) {
  const CsrGraph g = testing::CycleGraph(300);
  Rng a(5), b(5);
  const CsrGraph dropped = DropEdges(g, 0.4, a);
  const torch::Tensor keep = EdgeKeepMask(g, 0.4, b);
  ASSERT_EQ(keep.numel(), g.num_entries());
  EXPECT_EQ(keep.sum().item<int64_t>(), dropped.num_entries());
  EXPECT_EQ(a.NextU64(), b.NextU64());  // the same number of draws
  // Entry by entry: u -> v is kept exactly when DropEdges kept {u, v}, in both directions.
  const bool* k = keep.data_ptr<bool>();
  for (int64_t u = 0; u < g.num_nodes(); ++u) {
    int64_t e = g.row_ptr_data()[u];
    for (int64_t v : g.neighbors(u)) {
      const auto kept = dropped.neighbors(u);
      EXPECT_EQ(k[e++], std::find(kept.begin(), kept.end(), v) != kept.end()) << u << " -> " << v;
    }
  }
}

}  // namespace
}  // namespace fgl::graph
