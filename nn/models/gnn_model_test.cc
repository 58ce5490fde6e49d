#include "nn/models/gnn_model.h"

#include <cmath>
#include <set>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/csbm.h"
#include "nn/models/ego_sage.h"
#include "nn/ops/dropout.h"
#include "nn/threads.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

ABSL_DECLARE_FLAG(double, max_model_memory_gb);

namespace fgl::nn {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

class GnnModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph::CsbmOptions o;
    o.num_nodes = 200;
    o.num_features = 12;
    o.num_classes = 4;
    data_ = *graph::MakeCsbm(o, 1);
    view_ = std::make_unique<GraphView>(*GraphView::Create(data_.graph));
  }
  graph::Dataset data_;
  std::unique_ptr<GraphView> view_;
};

TEST_F(GnnModelTest, EverySpecGivesEmbeddingAndLogits) {
  struct Case {
    std::string spec;
    int64_t embedding_dim;
  };
  for (const Case& c : std::vector<Case>{{"gcn", 64}, {"gcn:layers=4,hidden=16", 16},
                                         {"gcn:layers=8,jk=max", 64}, {"gcn:layers=3,jk=cat", 128},
                                         {"gat:heads=8,hidden=8", 64}, {"gat:heads=1,hidden=64", 64},
                                         {"sage", 64}, {"graphsage", 64}, {"gin", 64},
                                         {"sgc:k=2", 4}, {"sgc:k=2,hidden=64", 64},
                                         {"appnp:k=10,alpha=0.1", 64}, {"mlp", 64},
                                         {"mlp:layers=1", 12}, {"gcn:layers=3,jk=last", 64},
                                         {"gcn:layers=3,jk=last,masked=true", 64},
                                         {"gcn:norm=row,out_act=relu", 64}, {"sampled_sage", 32}}) {
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> m, MakeModel(c.spec, 12, 4));
    for (bool training : {true, false}) {
      m->train(training);
      ModelOutput out = m->forward(data_.features, *view_);
      EXPECT_EQ(out.logits.sizes(), (std::vector<int64_t>{200, 4})) << c.spec;
      EXPECT_EQ(out.embedding.sizes(), (std::vector<int64_t>{200, c.embedding_dim})) << c.spec;
      EXPECT_EQ(m->embedding_dim(), c.embedding_dim) << c.spec;
      EXPECT_TRUE(torch::isfinite(out.logits).all().item<bool>()) << c.spec;
    }
    // body ∪ head is every parameter, and the head is non-empty.
    std::set<void*> grouped;
    for (const std::string& g : m->parameter_groups())
      for (const torch::Tensor& t : m->group_parameters(g)) grouped.insert(t.data_ptr());
    EXPECT_EQ(grouped.size(), m->parameters().size()) << c.spec;
    EXPECT_FALSE(m->group_parameters("head").empty()) << c.spec;
  }
}

TEST_F(GnnModelTest, MaskedLayersMultiplyAndPruneAtEvaluation) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> plain, MakeModel("gcn:layers=3,jk=last", 12, 4));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> masked, MakeModel("gcn:layers=3,jk=last,masked=true", 12, 4));
  // Same weights, masks at their initial ones: same logits.
  torch::NoGradGuard no_grad;
  int masks = 0;
  for (const auto& item : masked->named_parameters(true)) {
    if (item.key().find("mask") != std::string::npos) {
      ++masks;
      EXPECT_TRUE(torch::equal(item.value(), torch::ones_like(item.value()))) << item.key();
    } else {
      item.value().copy_(plain->named_parameters(true)[item.key()]);
    }
  }
  EXPECT_EQ(masks, 3);  // two GCN layers and the linear head
  plain->eval();
  masked->eval();
  EXPECT_TRUE(torch::allclose(plain->forward(data_.features, *view_).logits,
                              masked->forward(data_.features, *view_).logits));
  // A mask entry below 1e-3 counts as 0 at evaluation, not in training.
  auto params = masked->named_parameters(true);
  params["head.mask"].fill_(5e-4);
  const torch::Tensor pruned = masked->forward(data_.features, *view_).logits;
  EXPECT_TRUE(torch::allclose(pruned, params["head.bias"].expand_as(pruned)));
  masked->train();
  EXPECT_FALSE(torch::allclose(masked->forward(data_.features, *view_).logits, pruned));
  EXPECT_FALSE(MakeModel("sage:masked=true", 12, 4).ok());
}

TEST_F(GnnModelTest, EvalIsDeterministicAndDropoutIsNot) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> m, MakeModel("gcn", 12, 4));
  m->eval();
  EXPECT_TRUE(torch::equal(m->forward(data_.features, *view_).logits,
                           m->forward(data_.features, *view_).logits));
  m->train();
  EXPECT_FALSE(torch::equal(m->forward(data_.features, *view_).logits,
                            m->forward(data_.features, *view_).logits));
}

// Evaluation without autograd runs EgoSage's SAGE layers on chunks of centres (144 at hidden 512,
// 1,488 at hidden 64); the same trees must give the same outputs, bit for bit, as one pass, under
// the pinned kernels (env in BUILD). Chunks of 190 centres change about half the rows here.
TEST_F(GnnModelTest, EgoSageEvaluationInChunksEqualsOnePass) {
  SetComputeThreads(1);  // OpenBLAS on one thread, as in the run binaries
  graph::CsbmOptions o;
  o.num_nodes = 1700;
  o.num_features = 12;
  o.num_classes = 4;
  const graph::Dataset data = *graph::MakeCsbm(o, 1);
  const GraphView view = *GraphView::Create(data.graph);
  const NodeFeatures x(data.features);
  for (const char* spec : {"ego_sage:hidden=512,layers=2,fanout=6,dropout=0", "ego_sage:hidden=64,layers=2,fanout=6"}) {
    SCOPED_TRACE(spec);
    auto model = *MakeModel(spec, data.num_features(), data.num_classes);
    model->eval();
    ModelOutput one_pass, chunked;
    {
      DropoutSeedScope trees(7);
      one_pass = model->forward(x, view);  // autograd on: one pass
    }
    {
      DropoutSeedScope trees(7);
      torch::NoGradGuard no_grad;
      chunked = model->forward(x, view);
    }
    ASSERT_EQ(chunked.logits.sizes(), one_pass.logits.sizes());
    EXPECT_EQ((chunked.embedding != one_pass.embedding.detach()).sum().item<int64_t>(), 0);
    EXPECT_EQ((chunked.logits != one_pass.logits.detach()).sum().item<int64_t>(), 0);
  }
}

// A SAGE Θ (FedEgo w/o EGO) at some nodes reads only their two-hop receptive field: the same
// rows and the same parameter gradients as Θ on the whole graph, up to rounding.
TEST_F(GnnModelTest, EgoSageReduceAtNodesEqualsWholeGraphRows) {
  const EgoSageOptions o = *ParseEgoSageSpec("ego_sage:hidden=32,layers=1,fanout=0,dropout=0,reduction=sage");
  for (const NodeFeatures& x : {NodeFeatures(data_.features), NodeFeatures::WithSparseCopy(data_.features, 1.0)}) {
    torch::manual_seed(3);
    EgoSage model(o, data_.num_features(), data_.num_classes);
    const torch::Tensor nodes = torch::tensor({0, 5, 17, 18, 60, 199}, torch::kInt64);
    const torch::Tensor at = model.ReduceAt(x, *view_, nodes);
    const torch::Tensor whole = model.Reduce(x, *view_).index_select(0, nodes);
    ASSERT_EQ(at.sizes(), whole.sizes());
    EXPECT_TRUE(torch::allclose(at, whole, 1e-5, 1e-6));
    std::vector<torch::Tensor> grads_at, grads_whole;
    for (auto* grads : {&grads_at, &grads_whole}) {
      model.zero_grad();
      const torch::Tensor y = grads == &grads_at ? model.ReduceAt(x, *view_, nodes)
                                                 : model.Reduce(x, *view_).index_select(0, nodes);
      (y * torch::arange(y.numel(), torch::kFloat32).reshape(y.sizes())).sum().backward();
      for (const auto& p : model.parameters())
        if (p.grad().defined()) grads->push_back(p.grad().clone());
    }
    ASSERT_EQ(grads_at.size(), grads_whole.size());
    ASSERT_GE(grads_at.size(), 5u);  // both SAGE layers' lin_l (weight, bias) and lin_r
    for (size_t i = 0; i < grads_at.size(); ++i) {
      EXPECT_GT(grads_whole[i].abs().sum().item<double>(), 0) << i;
      EXPECT_TRUE(torch::allclose(grads_at[i], grads_whole[i], 1e-4, 1e-5)) << i;
    }
  }
  // Every node: the whole-graph pass itself.
  EgoSage model(o, data_.num_features(), data_.num_classes);
  const NodeFeatures x(data_.features);
  EXPECT_TRUE(torch::equal(model.ReduceAt(x, *view_, torch::arange(data_.graph.num_nodes())), model.Reduce(x, *view_)));
}

// APPNP's K steps h_{k+1} = (1 - a) Â h_k + a z from h_0 = z = MLP(x) equal the closed form
// (1 - a)^K Â^K z + a Σ_{k<K} (1 - a)^k Â^k z, with Â = D^-1/2 (A + I) D^-1/2 built here from the
// edge list in double precision, and approach a (I - (1 - a) Â)^-1 z as K grows.
// out_act=relu (the stellargraph demo's act_out): the MLP's logits are the plain ones clamped at
// 0, and APPNP propagates those; the spec keeps the switch, and other activations are refused.
TEST_F(GnnModelTest, MlpOutActReluClampsTheLogits) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> plain, MakeModel("mlp:layers=2,hidden=8", 12, 4));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> relu, MakeModel("mlp:layers=2,hidden=8,out_act=relu", 12, 4));
  EXPECT_EQ(relu->spec(), "mlp:layers=2,hidden=8,dropout=0.5,input_dropout=0,out_act=relu");
  torch::NoGradGuard no_grad;
  for (const auto& item : relu->named_parameters(true)) item.value().copy_(plain->named_parameters(true)[item.key()]);
  plain->eval();
  relu->eval();
  const torch::Tensor z = plain->forward(data_.features, *view_).logits;
  EXPECT_TRUE(torch::equal(relu->forward(data_.features, *view_).logits, torch::relu(z)));
  EXPECT_GT((z < 0).sum().item<int64_t>(), 0);  // the clamp does something here
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> appnp, MakeModel("appnp:hidden=8,k=0,out_act=relu", 12, 4));
  EXPECT_GE(appnp->forward(data_.features, *view_).logits.min().item<float>(), 0.f);
  EXPECT_FALSE(MakeModel("mlp:out_act=tanh", 12, 4).ok());
}

TEST_F(GnnModelTest, AppnpMatchesItsClosedForm) {
  const int64_t n = data_.graph.num_nodes();
  torch::Tensor a_hat = torch::eye(n, torch::kFloat64);
  const torch::Tensor ptr = data_.graph.row_ptr(), col = data_.graph.col();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t e = ptr[i].item<int64_t>(); e < ptr[i + 1].item<int64_t>(); ++e) {
      if (col[e].item<int64_t>() != i) a_hat[i][col[e].item<int64_t>()] = 1.0;
    }
  }
  const torch::Tensor d = a_hat.sum(1).pow(-0.5);
  a_hat = d.unsqueeze(1) * a_hat * d.unsqueeze(0);

  const double alpha = 0.2;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> mlp_only, MakeModel("appnp:hidden=16,k=0,alpha=0.2", 12, 4));
  mlp_only->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor z = mlp_only->forward(data_.features, *view_).logits.to(torch::kFloat64);
  for (int64_t k : {1, 5, 60}) {
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> appnp,
                         MakeModel(absl::StrCat("appnp:hidden=16,k=", k, ",alpha=0.2"), 12, 4));
    for (const auto& item : appnp->named_parameters(true)) item.value().copy_(mlp_only->named_parameters(true)[item.key()]);
    appnp->eval();
    const torch::Tensor got = appnp->forward(data_.features, *view_).logits.to(torch::kFloat64);
    torch::Tensor power = z, sum = torch::zeros_like(z);
    for (int64_t i = 0; i < k; ++i) {
      sum += alpha * std::pow(1 - alpha, i) * power;
      power = torch::matmul(a_hat, power);
    }
    const torch::Tensor closed = std::pow(1 - alpha, k) * power + sum;
    EXPECT_TRUE(torch::allclose(got, closed, 1e-4, 1e-5)) << "k = " << k << ": max |diff| "
                                                          << (got - closed).abs().max().item<double>();
    if (k == 60) {  // (1 - a)^60 ~ 1.5e-6: the fixed point
      const torch::Tensor limit =
          alpha * torch::linalg::solve(torch::eye(n, torch::kFloat64) - (1 - alpha) * a_hat, z, /*left=*/true);
      EXPECT_TRUE(torch::allclose(got, limit, 1e-4, 1e-4)) << (got - limit).abs().max().item<double>();
    }
  }
  EXPECT_FALSE(torch::allclose(z, torch::matmul(a_hat, z), 1e-3, 1e-3));  // propagation is not a no-op here
}

TEST_F(GnnModelTest, BadSpecsAndInputsAreErrors) {
  EXPECT_THAT(MakeModel("gnc", 12, 4), StatusIs(absl::StatusCode::kNotFound, HasSubstr("gnc")));
  EXPECT_THAT(MakeModel("gcn:hiden=3", 12, 4),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hiden")));
  EXPECT_THAT(MakeModel("gcn:dropout=1.5", 12, 4),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dropout")));
  EXPECT_THAT(MakeModel("gcn:jk=sum", 12, 4), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("jk=sum")));
  EXPECT_THAT(MakeModel("gcn", 12, 1), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_classes")));
  EXPECT_THAT(MakeModel("gcn:norm=col", 12, 4), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("norm=col")));
  EXPECT_THAT(MakeModel("sage:norm=row", 12, 4), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("norm")));
  EXPECT_THAT(MakeModel("gcn:out_act=tanh", 12, 4), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out_act")));
  // Non-default options are spelled out in the normalised spec; the defaults are not.
  EXPECT_THAT((*MakeModel("gcn:norm=row,out_act=relu", 12, 4))->spec(), HasSubstr(",norm=row,out_act=relu"));
  EXPECT_EQ((*MakeModel("gcn:norm=sym,out_act=none", 12, 4))->spec(), (*MakeModel("gcn", 12, 4))->spec());
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> m, MakeModel("gcn", 12, 4));
  EXPECT_THAT(CheckModelInput(*m, torch::zeros({200, 13}), *view_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("width 13")));
  EXPECT_THAT(CheckModelInput(*m, torch::zeros({199, 12}), *view_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("199 rows")));
  torch::Tensor nan = data_.features.clone();
  nan[3][4] = std::nanf("");
  EXPECT_THAT(CheckModelInput(*m, nan, *view_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1 NaN/Inf")));
}

// The probe's runaway models: hidden=1e9 is refused when built, layers=100000 (small parameters,
// huge activations) when it meets a graph, each naming the spec, under a limit set by the flag.
TEST_F(GnnModelTest, ModelsOverTheMemoryLimitAreRefusedNamingTheSpec) {
  EXPECT_GT(ModelMemoryLimitBytes(), 1e8);  // 80% of the machine's memory
  EXPECT_THAT(MakeModel("gcn:hidden=1000000000", 12, 4),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("gcn:hidden=1000000000")));
  absl::SetFlag(&FLAGS_max_model_memory_gb, 0.001);  // 1 MB
  EXPECT_THAT(MakeModel("gcn:hidden=256", 12, 4), StatusIs(absl::StatusCode::kResourceExhausted,
                                                           HasSubstr("over the limit of 0.001 GB")));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<GnnModel> deep, MakeModel("gcn:layers=300,hidden=8", 12, 4));
  try {
    deep->forward(data_.features, *view_);
    ADD_FAILURE() << "a forward pass over the activation limit ran";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what_without_backtrace(), HasSubstr("model 'gcn:layers=300"));
    EXPECT_THAT(e.what_without_backtrace(), HasSubstr("on 200 nodes"));
  }
  absl::SetFlag(&FLAGS_max_model_memory_gb, 0);
  EXPECT_EQ(deep->forward(data_.features, *view_).logits.size(0), 200);
}

}  // namespace
}  // namespace fgl::nn
