// SampledSage against its layer formulas on a graph whose neighbour samples are forced, and its
// spec's errors.
#include "nn/models/sampled_sage.h"

#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "graph/csr_graph.h"
#include "gtest/gtest.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::nn {
namespace {

using ::testing::HasSubstr;

TEST(SampledSageTest, MatchesTheLayerFormulasOnTwoNodes) {
  // 0 - 1 and an isolated node 2: every sample of 0 is 1 and of 1 is 0; node 2 has none.
  const std::vector<int64_t> src = {0, 1}, dst = {1, 0};
  ASSERT_OK_AND_ASSIGN(graph::CsrGraph g, graph::CsrFromEdges(3, src, dst));
  ASSERT_OK_AND_ASSIGN(GraphView view, GraphView::Create(g));
  ASSERT_OK_AND_ASSIGN(SampledSageOptions o, ParseSampledSageSpec("sampled_sage:sizes=4-2,fanout=3,dropout=0"));
  SampledSage model(o, /*in_features=*/3, /*num_classes=*/2);
  model.eval();
  torch::manual_seed(1);
  for (auto& p : model.parameters()) {
    torch::NoGradGuard no_grad;
    p.uniform_(-1, 1);  // non-zero biases too
  }
  const torch::Tensor x = torch::tensor({0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.5f, 3.0f, 1.0f, -2.0f}).view({3, 3});
  DropoutSeedScope stream(7);
  const ModelOutput out = model.forward_centres(x, view, torch::tensor({0, 2}, torch::kInt64));
  auto p = [&](const std::string& name) { return model.named_parameters()[name]; };
  auto layer = [&](int l, const torch::Tensor& self, const torch::Tensor& neigh) {
    const std::string k = "body." + std::to_string(l) + ".";
    return torch::cat({self.matmul(p(k + "w_self")), neigh.matmul(p(k + "w_neigh"))}, -1) + p(k + "bias");
  };
  auto head = [&](const torch::Tensor& z) {
    const torch::Tensor e = z / z.norm();
    return std::make_pair(e, e.matmul(p("head.weight").t()) + p("head.bias"));
  };
  // Centre 0: its children are 1, whose children are 0.
  const torch::Tensor h0 = torch::relu(layer(0, x[0], x[1])), h1 = torch::relu(layer(0, x[1], x[0]));
  auto [e0, logits0] = head(layer(1, h0, h1));
  // Centre 2: no neighbours, so they read zeros (their hidden state is ReLU of the bias).
  const torch::Tensor zero = torch::zeros({3});
  const torch::Tensor g0 = torch::relu(layer(0, x[2], zero)), g1 = torch::relu(layer(0, zero, zero));
  auto [e2, logits2] = head(layer(1, g0, g1));
  EXPECT_TRUE(torch::allclose(out.embedding[0], e0, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(out.logits[0], logits0, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(out.embedding[1], e2, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(out.logits[1], logits2, 1e-5, 1e-6));
  EXPECT_NEAR(out.embedding[0].norm().item<double>(), 1.0, 1e-5);
  ASSERT_TRUE(model.mini_batching().has_value());
  EXPECT_EQ(model.mini_batching()->batch_size, 32);
  EXPECT_EQ(model.spec(), "sampled_sage:sizes=4-2,fanout=3,dropout=0,batch=32,epoch_fraction=1");
}

TEST(SampledSageTest, TrainingDrawsFromTheStreamAndRepeats) {
  const std::vector<int64_t> src = {0, 1, 1, 2}, dst = {1, 0, 2, 1};
  ASSERT_OK_AND_ASSIGN(graph::CsrGraph g, graph::CsrFromEdges(3, src, dst));
  ASSERT_OK_AND_ASSIGN(GraphView view, GraphView::Create(g));
  ASSERT_OK_AND_ASSIGN(SampledSageOptions o, ParseSampledSageSpec("sampled_sage:sizes=8-4,fanout=2,dropout=0.5"));
  torch::manual_seed(3);
  SampledSage model(o, 4, 2);
  const torch::Tensor x = torch::rand({3, 4}) + 0.1;
  const torch::Tensor centres = torch::tensor({0, 1, 2}, torch::kInt64);
  auto run = [&](uint64_t seed, bool training) {
    model.train(training);
    DropoutSeedScope stream(seed);
    return model.forward_centres(x, view, centres).logits;
  };
  // The same stream gives the same samples and masks; another stream other masks; without
  // training no dropout acts (the samples still come from the stream).
  EXPECT_TRUE(torch::equal(run(5, true), run(5, true)));
  EXPECT_FALSE(torch::equal(run(5, true), run(6, true)));
  EXPECT_FALSE(torch::equal(run(5, true), run(5, false)));
  EXPECT_TRUE(torch::equal(run(5, false), run(5, false)));
}

TEST(SampledSageTest, ProjectFirstIsTheSameFunctionAndGradient) {
  // A ring of 12 with chords: a whole-graph forward has 12 * 7 positions at fanout 2, 2 layers,
  // more than its 12 nodes, so project_first multiplies each node's features once.
  std::vector<int64_t> src, dst;
  for (int64_t v = 0; v < 12; ++v) {
    for (int64_t u : {(v + 1) % 12, (v + 5) % 12}) {
      src.insert(src.end(), {v, u});
      dst.insert(dst.end(), {u, v});
    }
  }
  ASSERT_OK_AND_ASSIGN(graph::CsrGraph g, graph::CsrFromEdges(12, src, dst));
  ASSERT_OK_AND_ASSIGN(GraphView view, GraphView::Create(g));
  ASSERT_OK_AND_ASSIGN(SampledSageOptions gather, ParseSampledSageSpec("sampled_sage:sizes=8-4,fanout=2,dropout=0"));
  ASSERT_OK_AND_ASSIGN(SampledSageOptions project,
                       ParseSampledSageSpec("sampled_sage:sizes=8-4,fanout=2,dropout=0,project_first=1"));
  EXPECT_TRUE(project.project_first);
  torch::manual_seed(4);
  SampledSage a(gather, 6, 3);
  torch::manual_seed(4);
  SampledSage b(project, 6, 3);
  EXPECT_EQ(b.spec(), "sampled_sage:sizes=8-4,fanout=2,dropout=0,batch=32,epoch_fraction=1,project_first=1");
  const torch::Tensor x0 = torch::rand({12, 6}) - 0.5;
  auto run = [&](SampledSage& model) {
    const torch::Tensor x = x0.clone().requires_grad_(true);
    model.train();
    model.zero_grad();
    DropoutSeedScope stream(9);  // the same trees for both
    const torch::Tensor logits = model.forward(NodeFeatures(x), view).logits;
    (logits * torch::arange(36, torch::kFloat).view({12, 3})).sum().backward();
    return std::make_tuple(logits.detach(), x.grad(), model.named_parameters()["body.0.w_neigh"].grad().clone());
  };
  const auto [la, xa, wa] = run(a);
  const auto [lb, xb, wb] = run(b);
  EXPECT_TRUE(torch::allclose(la, lb, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(xa, xb, 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(wa, wb, 1e-4, 1e-5));
  EXPECT_GT(wa.abs().sum().item<double>(), 0);
}

TEST(SampledSageTest, BadSpecsAreErrors) {
  for (const char* spec : {"sampled_sage:sizes=1-32", "sampled_sage:sizes=64-", "sampled_sage:fanout=0",
                           "sampled_sage:dropout=1", "sampled_sage:epoch_fraction=0", "sampled_sage:hidden=3",
                           "sampled_sage:project_first=2"}) {
    EXPECT_FALSE(ParseSampledSageSpec(spec).ok()) << spec;
  }
  EXPECT_THAT(ParseSampledSageSpec("sampled_sage:sizes=1-32").status().message(), HasSubstr("sizes=1-32"));
  EXPECT_TRUE(ParseSampledSageSpec("sampled_sage:sizes=63-31").ok());  // the self half gets the odd unit
}

}  // namespace
}  // namespace fgl::nn
