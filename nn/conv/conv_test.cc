// Each layer against values worked out by hand on the path 0-1-2, gradients against finite
// differences, and the cached GCN normalisation against a dense computation.
#include <cmath>
#include <limits>

#include "graph/testing/tiny_graphs.h"
#include "gtest/gtest.h"
#include "nn/conv/gat_conv.h"
#include "nn/conv/gcn_conv.h"
#include "nn/conv/gin_conv.h"
#include "nn/conv/sage_conv.h"
#include "nn/ops/spmm.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::nn {
namespace {

GraphView Path3() { return *GraphView::Create(graph::testing::PathGraph(3)); }
torch::Tensor X123() { return torch::tensor({1.0f, 2.0f, 3.0f}).unsqueeze(1); }

void Set(torch::Tensor& p, std::vector<float> v) {
  torch::NoGradGuard g;
  p.copy_(torch::tensor(v).view(p.sizes()));
}

TEST(GCNConvTest, HandComputedOnPath) {
  // A + I degrees 2, 3, 2; w_ij = 1/sqrt(d_i d_j); W = 1, b = 0.
  // out0 = 1/2 + 2/sqrt6; out1 = 1/sqrt6 + 2/3 + 3/sqrt6; out2 = 2/sqrt6 + 3/2.
  GCNConv conv(GCNConvOptions(1, 1));
  Set(conv->weight, {1});
  torch::Tensor out = conv->forward(X123(), Path3());
  const double s6 = std::sqrt(6.0);
  EXPECT_NEAR(out[0][0].item<float>(), 0.5 + 2 / s6, 1e-5);
  EXPECT_NEAR(out[1][0].item<float>(), 1 / s6 + 2.0 / 3 + 3 / s6, 1e-5);
  EXPECT_NEAR(out[2][0].item<float>(), 2 / s6 + 1.5, 1e-5);
}

TEST(GCNConvTest, RowNormalisedIsTheClosedNeighbourhoodMean) {
  // D^-1 (A + I) on the path: out0 = (1 + 2)/2, out1 = (1 + 2 + 3)/3, out2 = (2 + 3)/2; the bias
  // adds after the mean, which equals adding it before (each row sums to one).
  GCNConv conv(GCNConvOptions(1, 1).row_norm(true));
  Set(conv->weight, {2});
  Set(conv->bias, {0.5});
  torch::Tensor out = conv->forward(X123(), Path3());
  EXPECT_NEAR(out[0][0].item<float>(), 2 * 1.5 + 0.5, 1e-5);
  EXPECT_NEAR(out[1][0].item<float>(), 2 * 2.0 + 0.5, 1e-5);
  EXPECT_NEAR(out[2][0].item<float>(), 2 * 2.5 + 0.5, 1e-5);
  EXPECT_TRUE(torch::allclose(RowPropagate(X123(), Path3()), torch::tensor({1.5f, 2.0f, 2.5f}).unsqueeze(1)));
}

TEST(GCNConvTest, HandComputedOnFourNodeStar) {
  // Centre 0 joined to leaves 1, 2, 3; x = [1, 2, 3, 4], W = 1. A + I degrees: centre 4,
  // leaves 2, so w(0,0) = 1/4, w(0,j) = 1/sqrt(8), w(j,j) = 1/2.
  // out0 = 1/4 + (2 + 3 + 4)/sqrt(8); out_j = x_j/2 + 1/sqrt(8).
  std::vector<int64_t> src = {0, 0, 0}, dst = {1, 2, 3};
  GraphView star = *GraphView::Create(*graph::CsrFromEdges(4, src, dst));
  GCNConv conv(GCNConvOptions(1, 1));
  Set(conv->weight, {1});
  torch::Tensor out = conv->forward(torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).unsqueeze(1), star);
  const double s8 = std::sqrt(8.0);
  EXPECT_NEAR(out[0][0].item<float>(), 0.25 + 9 / s8, 1e-5);
  for (int j = 1; j <= 3; ++j) EXPECT_NEAR(out[j][0].item<float>(), (j + 1) / 2.0 + 1 / s8, 1e-5);
  // SAGE with W_l = 1, W_r = 0, no bias: the mean of the neighbours (centre: 3; leaves: 1).
  SAGEConv sage(SAGEConvOptions(1, 1));
  Set(sage->lin_l->weight, {1});
  Set(sage->lin_l->bias, {0});
  Set(sage->lin_r->weight, {0});
  torch::Tensor mean = sage->forward(torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).unsqueeze(1), star);
  EXPECT_TRUE(torch::allclose(mean.squeeze(1), torch::tensor({3.0f, 1.0f, 1.0f, 1.0f})));
}

TEST(GCNConvTest, CachedNormalisationEqualsDense) {
  const graph::CsrGraph g = graph::testing::TwoTrianglesJoinedByOneEdge();
  ASSERT_OK_AND_ASSIGN(GraphView view, GraphView::Create(g));
  torch::Tensor a = torch::eye(6);
  for (int64_t u = 0; u < 6; ++u)
    for (int64_t v : g.neighbors(u)) a[u][v] = 1.0f;
  torch::Tensor d = a.sum(1).pow(-0.5);
  torch::Tensor expected = d.unsqueeze(1) * a * d.unsqueeze(0);
  torch::Tensor got = Spmm(view.adjacency_with_self_loops(), view.gcn_weights(), torch::eye(6));
  EXPECT_TRUE(torch::allclose(got, expected, 1e-6, 1e-6));
  // The same tensor object every time: computed once.
  EXPECT_EQ(view.gcn_weights().data_ptr(), view.gcn_weights().data_ptr());
}

TEST(SAGEConvTest, HandComputedOnPath) {
  // W_l = 1, b = 0, W_r = 10: out_i = mean(neighbours) + 10 x_i = 2 + 10 x_i for every node.
  SAGEConv conv(SAGEConvOptions(1, 1));
  Set(conv->lin_l->weight, {1});
  Set(conv->lin_l->bias, {0});
  Set(conv->lin_r->weight, {10});
  torch::Tensor out = conv->forward(X123(), Path3());
  EXPECT_TRUE(torch::allclose(out.squeeze(1), torch::tensor({12.0f, 22.0f, 32.0f})));
}

TEST(GINConvTest, HandComputedOnPath) {
  // eps = 0, both MLP layers identity: out = relu(x_i + sum_j x_j) = 3, 6, 5.
  GINConv conv(GINConvOptions(1, 1, 1));
  Set(conv->mlp1->weight, {1});
  Set(conv->mlp1->bias, {0});
  Set(conv->mlp2->weight, {1});
  Set(conv->mlp2->bias, {0});
  torch::Tensor out = conv->forward(X123(), Path3());
  EXPECT_TRUE(torch::allclose(out.squeeze(1), torch::tensor({3.0f, 6.0f, 5.0f})));
}

TEST(GATConvTest, UniformAndSkewedAttention) {
  GATConv conv(GATConvOptions(1, 1));
  Set(conv->weight, {1});
  Set(conv->att_src, {0});
  Set(conv->att_dst, {0});
  // Zero attention vectors: the mean over N(i) ∪ {i}: 1.5, 2, 2.5.
  torch::Tensor out = conv->forward(X123(), Path3());
  EXPECT_TRUE(torch::allclose(out.squeeze(1), torch::tensor({1.5f, 2.0f, 2.5f})));
  // att_src = 1: e_ij = x_j (positive, LeakyReLU is identity), so node 0 weighs e^1 and e^2.
  Set(conv->att_src, {1});
  out = conv->forward(X123(), Path3());
  const double e1 = std::exp(1.0), e2 = std::exp(2.0), e3 = std::exp(3.0);
  EXPECT_NEAR(out[0][0].item<float>(), (1 * e1 + 2 * e2) / (e1 + e2), 1e-5);
  EXPECT_NEAR(out[1][0].item<float>(), (1 * e1 + 2 * e2 + 3 * e3) / (e1 + e2 + e3), 1e-5);
}

// d loss / d p by central differences on every entry of p, against autograd.
template <typename Forward>
void ExpectGradientMatchesFiniteDifferences(torch::Tensor& p, Forward forward) {
  torch::Tensor loss = forward();
  p.mutable_grad() = torch::Tensor();
  loss.backward();
  torch::Tensor analytic = p.grad().clone();
  torch::NoGradGuard g;
  torch::Tensor flat = p.view({-1});
  for (int64_t i = 0; i < flat.size(0); ++i) {
    const float old = flat[i].item<float>();
    const float h = 1e-2f;
    flat[i] = old + h;
    const double up = torch::Tensor(forward()).item<double>();
    flat[i] = old - h;
    const double down = torch::Tensor(forward()).item<double>();
    flat[i] = old;
    EXPECT_NEAR(analytic.view({-1})[i].item<double>(), (up - down) / (2 * h), 2e-2) << "entry " << i;
  }
}

TEST(ConvGradientTest, FiniteDifferences) {
  const graph::CsrGraph g = graph::testing::TwoTrianglesJoinedByOneEdge();
  ASSERT_OK_AND_ASSIGN(GraphView view, GraphView::Create(g));
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({6, 3});
  torch::Tensor r = torch::randn({6, 4});
  GCNConv gcn(GCNConvOptions(3, 4));
  ExpectGradientMatchesFiniteDifferences(gcn->weight, [&] { return (gcn->forward(x, view) * r).sum(); });
  SAGEConv sage(SAGEConvOptions(3, 4));
  ExpectGradientMatchesFiniteDifferences(sage->lin_l->weight, [&] { return (sage->forward(x, view) * r).sum(); });
  GATConv gat(GATConvOptions(3, 2).heads(2));
  ExpectGradientMatchesFiniteDifferences(gat->att_src, [&] { return (gat->forward(x, view) * r).sum(); });
  ExpectGradientMatchesFiniteDifferences(gat->weight, [&] { return (gat->forward(x, view) * r).sum(); });
  GINConv gin(GINConvOptions(3, 5, 4).train_eps(true));
  ExpectGradientMatchesFiniteDifferences(gin->eps, [&] { return (gin->forward(x, view) * r).sum(); });
}

TEST(NodeFeaturesTest, SparseProductEqualsDense) {
  torch::manual_seed(3);
  torch::Tensor x = (torch::rand({50, 40}) < 0.05).to(torch::kFloat32);
  NodeFeatures sparse = NodeFeatures::WithSparseCopy(x);
  ASSERT_TRUE(sparse.has_sparse());
  torch::Tensor w = torch::randn({40, 6});
  EXPECT_TRUE(torch::allclose(sparse.MatMul(w), torch::matmul(x, w), 1e-5, 1e-5));
  EXPECT_FALSE(NodeFeatures::WithSparseCopy(torch::randn({5, 4})).has_sparse());
}

// The CSR copy holds exactly the entries != 0 (a NaN is one, −0 is not), for float and double,
// and is kept up to max_density inclusive.
TEST(NodeFeaturesTest, SparseCopyKeepsExactlyTheNonZeros) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const torch::Tensor x = torch::tensor({0.f, 1.5f, 0.f, -0.f, 2.f,  //
                                         0.f, 0.f, 0.f, 0.f, 0.f,    //
                                         0.f, 0.f, 0.f, nan, 0.f,    //
                                         0.f, 0.f, 0.f, 0.f, -1.f})
                              .view({4, 5});
  for (const torch::Tensor& v : {x, x.to(torch::kFloat64)}) {
    EXPECT_TRUE(NodeFeatures::WithSparseCopy(v, 4.0 / 20).has_sparse()) << v.dtype();
    EXPECT_FALSE(NodeFeatures::WithSparseCopy(v, 3.9 / 20).has_sparse()) << v.dtype();
  }
  // The sparse product (float32 only) sees the same entries as the dense one.
  const torch::Tensor eye = torch::eye(5);
  const torch::Tensor product = NodeFeatures::WithSparseCopy(x, 0.2).MatMul(eye);
  EXPECT_TRUE(torch::equal(product.nan_to_num(7), torch::matmul(x, eye).nan_to_num(7))) << product;
}

TEST(NodeFeaturesTest, MaskedColumnsMultiplyLikeMaskedDense) {
  torch::manual_seed(4);
  torch::Tensor x = (torch::rand({50, 40}) < 0.05).to(torch::kFloat32) * torch::rand({50, 40});
  torch::Tensor keep = (torch::rand({40}) < 0.5).to(torch::kFloat32);
  torch::Tensor w = torch::randn({40, 6});
  torch::Tensor expected = torch::matmul(x * keep.unsqueeze(0), w);
  NodeFeatures sparse = NodeFeatures::WithSparseCopy(x).MaskColumns(keep);
  EXPECT_TRUE(sparse.has_sparse());
  EXPECT_TRUE(torch::allclose(sparse.MatMul(w), expected, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(NodeFeatures(x).MaskColumns(keep).MatMul(w), expected, 1e-5, 1e-5));
  EXPECT_THROW(NodeFeatures(x).MaskColumns(torch::ones({39})), c10::Error);
}

TEST(NodeFeaturesTest, RowsGathersSparseAndDenseAlike) {
  torch::manual_seed(3);
  torch::Tensor x = torch::rand({30, 40}) * (torch::rand({30, 40}) < 0.05).to(torch::kFloat32);
  torch::Tensor w = torch::randn({40, 6});
  torch::Tensor rows = torch::tensor({7, 2, 2, 29, 0}, torch::kInt64);
  torch::Tensor expected = torch::matmul(x.index_select(0, rows), w);
  NodeFeatures sparse = NodeFeatures::WithSparseCopy(x).Rows(rows);
  EXPECT_TRUE(sparse.has_sparse());
  EXPECT_EQ(sparse.num_nodes(), 5);
  EXPECT_TRUE(torch::allclose(sparse.MatMul(w), expected, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(NodeFeatures(x).Rows(rows).MatMul(w), expected, 1e-5, 1e-5));
  EXPECT_EQ(NodeFeatures::WithSparseCopy(x).Rows(torch::empty({0}, torch::kInt64)).num_nodes(), 0);
  EXPECT_THROW(NodeFeatures::WithSparseCopy(x).Rows(torch::tensor({30}, torch::kInt64)), c10::Error);
}

TEST(GraphViewTest, RejectsEmptyGraphAndMismatchedInput) {
  EXPECT_FALSE(GraphView::Create(graph::CsrGraph::Empty(0)).ok());
  GCNConv conv(GCNConvOptions(2, 2));
  EXPECT_THROW(conv->forward(torch::ones({3, 5}), Path3()), c10::Error);
  EXPECT_THROW(conv->forward(torch::ones({4, 2}), Path3()), c10::Error);
}

}  // namespace
}  // namespace fgl::nn
