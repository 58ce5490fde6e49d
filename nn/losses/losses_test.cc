#include <cmath>
#include "nn/losses/losses.h"
#include "nn/ops/pairwise_abs_diff.h"

#include "graph/testing/tiny_graphs.h"
#include "gtest/gtest.h"

namespace fgl::nn {
namespace {

TEST(LossesTest, NeighborhoodKlEqualsNaiveSum) {
  const graph::CsrGraph g = graph::testing::TwoTrianglesJoinedByOneEdge();
  GraphView view = *GraphView::Create(g);
  torch::manual_seed(1);
  torch::Tensor h = torch::randn({6, 4}).requires_grad_(true);
  torch::Tensor z = torch::randn({6, 4});
  torch::Tensor fast = NeighborhoodKl(h, z, view);
  // (1/N) sum_i sum_{j in N(i) ∪ i} KL(softmax z_j || softmax h_i).
  torch::Tensor p = torch::softmax(z, 1), log_q = torch::log_softmax(h, 1);
  torch::Tensor naive = torch::zeros({});
  for (int64_t i = 0; i < 6; ++i) {
    std::vector<int64_t> js(g.neighbors(i).begin(), g.neighbors(i).end());
    js.push_back(i);
    for (int64_t j : js) naive = naive + (p[j] * (p[j].log() - log_q[i])).sum();
  }
  naive = naive / 6;
  EXPECT_NEAR(fast.item<float>(), naive.item<float>(), 1e-5);
  torch::Tensor g_fast = torch::autograd::grad({fast}, {h})[0];
  torch::Tensor g_naive = torch::autograd::grad({naive}, {h})[0];
  EXPECT_TRUE(torch::allclose(g_fast, g_naive, 1e-5, 1e-6));
}

TEST(LossesTest, EdgeDifferenceKlEqualsTheSumOverEdges) {
  const graph::CsrGraph g = graph::testing::TwoTrianglesJoinedByOneEdge();
  GraphView view = *GraphView::Create(g);
  torch::manual_seed(2);
  torch::Tensor h = torch::randn({6, 3}).requires_grad_(true);
  torch::Tensor z = torch::randn({6, 3});
  torch::Tensor naive = torch::zeros({});
  int edges = 0;
  for (int64_t i = 0; i < 6; ++i) {
    for (int64_t j : g.neighbors(i)) {
      torch::Tensor p = torch::softmax((z[i] - z[j]).abs() / 0.1, 0);
      torch::Tensor log_q = torch::log_softmax((h[i] - h[j]).abs() / 0.1, 0);
      naive = naive + (p * (p.log() - log_q)).sum();
      ++edges;
    }
  }
  EXPECT_EQ(edges, 14);  // 7 undirected edges, both directions
  naive = naive / edges;
  torch::Tensor fast = EdgeDifferenceKl(h, z, view, 0.1);
  EXPECT_NEAR(fast.item<float>(), naive.item<float>(), 1e-4);
  EXPECT_TRUE(torch::allclose(torch::autograd::grad({fast}, {h})[0], torch::autograd::grad({naive}, {h})[0], 1e-4, 1e-5));
  EXPECT_NEAR(EdgeDifferenceKl(z, z, view, 0.1).item<float>(), 0.0, 1e-6);
}

TEST(LossesTest, KlCrossEntropyAndMasks) {
  torch::Tensor s = torch::tensor({{1.0f, 0.0f}, {0.0f, 0.0f}});
  torch::Tensor t = torch::tensor({{0.0f, 0.0f}, {0.0f, 0.0f}});
  // Row 0: KL([.5,.5] || softmax([1,0])) = -log(2) - .5 log q0 - .5 log q1; row 1: 0.
  const double q0 = std::exp(1.0) / (std::exp(1.0) + 1), q1 = 1 - q0;
  const double row0 = 0.5 * std::log(0.5 / q0) + 0.5 * std::log(0.5 / q1);
  EXPECT_NEAR(KlDivergence(s, t).item<float>(), row0 / 2, 1e-6);
  EXPECT_NEAR(KlDivergence(s, t, 2.0, {}, true).item<float>(),
              4 * 0.5 * (0.5 * std::log(0.5 / (std::exp(.5) / (std::exp(.5) + 1))) +
                         0.5 * std::log(0.5 / (1 / (std::exp(.5) + 1)))),
              1e-6);
  torch::Tensor y = torch::tensor({0, 1}, torch::kInt64);
  torch::Tensor only_first = torch::tensor({true, false});
  EXPECT_NEAR(MaskedCrossEntropy(s, y, only_first).item<float>(), -std::log(q0), 1e-6);
  torch::Tensor none = torch::tensor({false, false});
  torch::Tensor logits = s.clone().requires_grad_(true);
  torch::Tensor zero = MaskedCrossEntropy(logits, y, none);
  EXPECT_EQ(zero.item<float>(), 0.0f);
  zero.backward();  // still differentiable
  EXPECT_NEAR(SoftCrossEntropy(s, torch::tensor({{1.0f, 0.0f}, {0.0f, 1.0f}})).item<float>(),
              (-std::log(q0) - std::log(0.5)) / 2, 1e-6);
}

TEST(LossesTest, MseCosineInfoNce) {
  torch::Tensor a = torch::tensor({{1.0f, 0.0f}, {0.0f, 2.0f}});
  torch::Tensor b = torch::tensor({{1.0f, 1.0f}, {0.0f, 2.0f}});
  EXPECT_NEAR(MeanSquaredError(a, b).item<float>(), 0.25, 1e-6);
  EXPECT_NEAR(CosineDistance(a, b).item<float>(), (1 - 1 / std::sqrt(2.0)) / 2, 1e-6);
  // Perfectly aligned, orthogonal pairs: logits diag 1/tau, off-diagonal 0.
  torch::Tensor e = torch::eye(2);
  const double tau = 0.5;
  EXPECT_NEAR(InfoNce(e, e, tau).item<float>(), -std::log(std::exp(2.0) / (std::exp(2.0) + 1)), 1e-5);
}

TEST(LossesTest, GeneratorDiversityMatchesTheFormulaAndCdistGradient) {
  torch::manual_seed(2);
  const torch::Tensor z = torch::randn({7, 4});
  const torch::Tensor x = torch::randn({7, 5}, torch::requires_grad());
  // Naive: exp(-mean_ij mean_d (z_i - z_j)^2 * mean_d |x_i - x_j|).
  const torch::Tensor dz = (z.unsqueeze(1) - z.unsqueeze(0)).pow(2).mean(2);
  const torch::Tensor dx = (x.unsqueeze(1) - x.unsqueeze(0)).abs().mean(2);
  const torch::Tensor want = torch::exp(-(dz * dx).mean());
  const torch::Tensor got = GeneratorDiversity(z, x);
  EXPECT_NEAR(got.item<float>(), want.item<float>(), 1e-5);
  const torch::Tensor g_got = torch::autograd::grad({got}, {x})[0];
  const torch::Tensor g_want = torch::autograd::grad({want}, {x})[0];
  EXPECT_TRUE(torch::allclose(g_got, g_want, 1e-4, 1e-6));
}

// The kernel runs across pairs in vector lanes but must round every pair's sum exactly as a plain
// per-pair loop over features does (results recorded before the change depend on it).
TEST(LossesTest, PairwiseMeanAbsDiffRoundsLikeAPerPairLoop) {
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({37, 301}) * 3;
  const torch::Tensor got = PairwiseMeanAbsDiff(x);
  const float* xp = x.data_ptr<float>();
  const int64_t b = x.size(0), f = x.size(1);
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < b; ++j) {
      float sum = 0;
      if (i != j) {
        for (int64_t t = 0; t < f; ++t) sum += std::fabs(xp[i * f + t] - xp[j * f + t]);
        sum /= static_cast<float>(f);
      }
      ASSERT_EQ(got[i][j].item<float>(), sum) << i << "," << j;
    }
  }
}

TEST(LossesTest, ModelContrastivePrefersThePositive) {
  const torch::Tensor z = torch::tensor({{1.f, 0.f}, {0.f, 1.f}});
  const torch::Tensor near = torch::tensor({{2.f, 0.f}, {0.f, 3.f}});
  const torch::Tensor far = torch::tensor({{-1.f, 0.f}, {0.f, -1.f}});
  // cos = 1 with the positive and -1 with the negative: CE of [1, -1] / 0.5 against class 0.
  EXPECT_NEAR(ModelContrastive(z, near, far, 0.5).item<float>(), std::log(1 + std::exp(-4.0)), 1e-5);
  EXPECT_GT(ModelContrastive(z, far, near, 0.5).item<float>(), 3.9);
}

// On two triangles (one block of the N x N product) and on a 700-node cycle (several blocks, the
// last one short).
class ReconstructionMseTest : public ::testing::TestWithParam<int> {};

TEST_P(ReconstructionMseTest, EqualsTheDenseFormulaAndItsGradient) {
  const graph::CsrGraph g =
      GetParam() == 0 ? graph::testing::TwoTrianglesJoinedByOneEdge() : graph::testing::CycleGraph(700);
  const int64_t n = g.num_nodes();
  const GraphView view = *GraphView::Create(g);
  torch::manual_seed(3);
  torch::Tensor z = torch::randn({n, 3}, torch::dtype(torch::kDouble)).requires_grad_(true);
  torch::Tensor a = torch::zeros({n, n}, torch::kDouble);
  for (int64_t u = 0; u < n; ++u) {
    for (int64_t e = g.row_ptr()[u].item<int64_t>(); e < g.row_ptr()[u + 1].item<int64_t>(); ++e) {
      const int64_t v = g.col()[e].item<int64_t>();
      if (u != v) a[u][v] = 1;
    }
  }
  torch::Tensor dense = (a - torch::sigmoid(z.matmul(z.t()))).square().mean();
  torch::Tensor ours = InnerProductReconstructionMse(z, view);
  EXPECT_NEAR(ours.item<double>(), dense.item<double>(), 1e-12);
  torch::Tensor g_dense = torch::autograd::grad({dense}, {z})[0];
  torch::Tensor g_ours = torch::autograd::grad({ours}, {z})[0];
  EXPECT_TRUE(torch::allclose(g_ours, g_dense, 1e-10, 1e-12));
}
INSTANTIATE_TEST_SUITE_P(OneAndSeveralBlocks, ReconstructionMseTest, ::testing::Values(0, 1));

}  // namespace
}  // namespace fgl::nn
