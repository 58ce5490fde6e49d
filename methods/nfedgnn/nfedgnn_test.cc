#include <cmath>

#include "fl/simulator.h"
#include "graph/csbm.h"
#include "gtest/gtest.h"
#include "fl/node_level/params.pb.h"
#include "fl/node_level/split_server.h"
#include "fl/node_level/user_models.h"
#include "nn/conv/gat_conv.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::nfedgnn {

using ::fgl::fl::node_level::AdamOptions;
using ::fgl::fl::node_level::InitialUserWeights;
using ::fgl::fl::node_level::LaplacianRegularizer;
using ::fgl::fl::node_level::MakePrivateUserModels;
using ::fgl::fl::node_level::NfedgnnParams;
using ::fgl::fl::node_level::ParseSplitModel;
using ::fgl::fl::node_level::SplitModelSpec;
using ::fgl::fl::node_level::SplitServer;
using ::fgl::fl::node_level::UserFeatures;
using ::fgl::fl::node_level::UserModelOptions;
using ::fgl::fl::node_level::UserModels;

namespace {

// A small graph whose features are half zeros, so the sparse per-user storage matters.
graph::Dataset SmallGraph() {
  graph::CsbmOptions c;
  c.num_nodes = 40;
  c.num_classes = 3;
  c.num_features = 10;
  c.average_degree = 4;
  absl::StatusOr<graph::Dataset> d = graph::MakeCsbm(c, 3);
  CHECK(d.ok()) << d.status();
  torch::manual_seed(1);
  d->features = d->features * (torch::rand_like(d->features) < 0.5).to(torch::kFloat);
  return *std::move(d);
}

// Â = D̃^-1/2 (A + I) D̃^-1/2 as a dense matrix, straight from the edge list.
torch::Tensor DenseGcnMatrix(const graph::Dataset& d) {
  const int64_t n = d.num_nodes();
  torch::Tensor a = torch::eye(n);
  const auto* row_ptr = d.graph.row_ptr().data_ptr<int64_t>();
  const auto* col = d.graph.col().data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t e = row_ptr[i]; e < row_ptr[i + 1]; ++e) a[i][col[e]] = 1;
  }
  torch::Tensor inv_sqrt = a.sum(1).pow(-0.5);
  return inv_sqrt.unsqueeze(1) * a * inv_sqrt.unsqueeze(0);
}

torch::Tensor Param(const torch::nn::Module& m, const std::string& name) {
  return m.named_parameters()[name].detach();
}

TEST(SplitModel, GcnEqualsTheUnsplitModelWhenUsersShareOneWeight) {
  const graph::Dataset d = SmallGraph();
  const UserFeatures f = UserFeatures::FromDense(d.features);
  UserModelOptions o;
  o.shared_init = true;
  o.seed = 5;
  const torch::Tensor w = InitialUserWeights(f, o);  // [d, 16]: every user's W
  std::unique_ptr<UserModels> users = MakePrivateUserModels(f, o);
  const torch::Tensor latents = users->Latents(f.values);
  EXPECT_TRUE(torch::allclose(latents, d.features.mm(w), 1e-5, 1e-6));

  ASSERT_OK_AND_ASSIGN(SplitModelSpec spec, ParseSplitModel("gcn:layers=2,hidden=16,dropout=0.5"));
  SplitServer server(spec, d.num_classes);
  server->eval();
  ASSERT_OK_AND_ASSIGN(nn::GraphView view, nn::GraphView::Create(d.graph));
  torch::NoGradGuard no_grad;
  const torch::Tensor a = DenseGcnMatrix(d);
  // Eq. 4: softmax(Â ReLU(Â X W⁰) W¹) (plus the output bias).
  const torch::Tensor expected =
      a.mm(torch::relu(a.mm(d.features.mm(w)))).mm(Param(*server, "gcn_out.weight")) + Param(*server, "gcn_out.bias");
  EXPECT_TRUE(torch::allclose(server->forward(latents, view), expected, 1e-4, 1e-5));
}

TEST(SplitModel, GatEqualsTheUnsplitModelWhenUsersShareOneWeight) {
  const graph::Dataset d = SmallGraph();
  const UserFeatures f = UserFeatures::FromDense(d.features);
  UserModelOptions o;
  o.shared_init = true;
  o.latent_width = 8 * 16;
  o.bias = false;
  std::unique_ptr<UserModels> users = MakePrivateUserModels(f, o);
  ASSERT_OK_AND_ASSIGN(SplitModelSpec spec, ParseSplitModel("gat:layers=2,heads=8,hidden=16,out_heads=1"));
  SplitServer server(spec, d.num_classes);
  server->eval();
  ASSERT_OK_AND_ASSIGN(nn::GraphView view, nn::GraphView::Create(d.graph));
  // The unsplit first layer: one GATConv with the users' shared W and the server's attention.
  nn::GATConv conv1(nn::GATConvOptions(d.num_features(), 16).heads(8));
  conv1->eval();
  torch::NoGradGuard no_grad;
  conv1->weight.copy_(InitialUserWeights(f, o));
  conv1->att_src.copy_(Param(*server, "att_src"));
  conv1->att_dst.copy_(Param(*server, "att_dst"));
  conv1->bias.copy_(Param(*server, "bias"));
  auto* out_layer = server->named_children()["gat_out"]->as<nn::GATConvImpl>();
  ASSERT_NE(out_layer, nullptr);
  const torch::Tensor expected = out_layer->forward(torch::elu(conv1->forward(d.features, view)), view);
  EXPECT_TRUE(torch::allclose(server->forward(users->Latents(f.values), view), expected, 1e-4, 1e-5));
}

TEST(LaplacianRegularizer, EqualsTheDoubleSumOverNeighboursAndSelf) {
  const graph::Dataset d = SmallGraph();
  ASSERT_OK_AND_ASSIGN(nn::GraphView view, nn::GraphView::Create(d.graph));
  torch::manual_seed(2);
  const torch::Tensor x = torch::randn({d.num_nodes(), 5}, torch::kDouble);
  const auto* row_ptr = d.graph.row_ptr().data_ptr<int64_t>();
  const auto* col = d.graph.col().data_ptr<int64_t>();
  double sum = 0;
  int64_t terms = 0;
  for (int64_t i = 0; i < d.num_nodes(); ++i) {
    terms += 1;  // j = i: N_i includes i, adding 0 to the sum and 1 to the normaliser
    for (int64_t e = row_ptr[i]; e < row_ptr[i + 1]; ++e, ++terms) {
      sum += (x[i] - x[col[e]]).pow(2).sum().item<double>();
    }
  }
  EXPECT_EQ(terms, d.graph.num_entries() + d.num_nodes());
  EXPECT_NEAR(LaplacianRegularizer(x, view).item<double>(), sum / static_cast<double>(terms), 1e-12);
}

TEST(UserModels, BatchedAdamEqualsEachUsersOwnAdam) {
  const graph::Dataset d = SmallGraph();
  const UserFeatures f = UserFeatures::FromDense(d.features);
  UserModelOptions o;
  o.adam = {0.1, 5e-4};
  o.seed = 9;
  std::unique_ptr<UserModels> batched = MakePrivateUserModels(f, o);
  // Each user as PyTorch would hold it: a dense W_i (rows of zero features never matter), b_i and
  // its own torch::optim::Adam.
  const torch::Tensor init = InitialUserWeights(f, o);
  const int64_t n = f.num_users, h = o.latent_width;
  std::vector<torch::Tensor> w(n), b(n);
  std::vector<std::unique_ptr<torch::optim::Adam>> adam(n);
  for (int64_t i = 0; i < n; ++i) {
    w[i] = torch::zeros({f.width, h});
    const int64_t begin = f.row_ptr[i].item<int64_t>(), end = f.row_ptr[i + 1].item<int64_t>();
    w[i].index_copy_(0, f.col.slice(0, begin, end), init.slice(0, begin, end));
    w[i].set_requires_grad(true);
    b[i] = torch::zeros({h}, torch::requires_grad());
    adam[i] = std::make_unique<torch::optim::Adam>(std::vector<torch::Tensor>{w[i], b[i]},
                                                    torch::optim::AdamOptions(0.1).weight_decay(5e-4));
  }
  torch::manual_seed(4);
  for (int step = 0; step < 4; ++step) {
    const torch::Tensor g = torch::randn({n, h}) * (step == 0 ? 1.0 : 0.01);
    batched->Step(f.values, g);
    for (int64_t i = 0; i < n; ++i) {
      w[i].mutable_grad() = torch::outer(d.features[i], g[i]);
      b[i].mutable_grad() = g[i].clone();
      adam[i]->step();
    }
    const torch::Tensor latents = batched->Latents(f.values);
    for (int64_t i = 0; i < n; ++i) {
      torch::NoGradGuard no_grad;
      EXPECT_TRUE(torch::allclose(latents[i], d.features[i].unsqueeze(0).mm(w[i]).squeeze(0) + b[i], 1e-5, 1e-6))
          << "user " << i << " step " << step;
    }
  }
}

TEST(UserModels, SkippingZeroGradientUsersLeavesThemExactlyAndStepsTheOthersAlike) {
  const graph::Dataset d = SmallGraph();
  const UserFeatures f = UserFeatures::FromDense(d.features);
  UserModelOptions o;
  o.seed = 9;
  std::unique_ptr<UserModels> every = MakePrivateUserModels(f, o);
  o.skip_zero_gradient = true;
  std::unique_ptr<UserModels> skipping = MakePrivateUserModels(f, o);
  const torch::Tensor before = skipping->Latents(f.values);
  torch::manual_seed(6);
  for (int step = 0; step < 3; ++step) {
    torch::Tensor g = torch::randn({f.num_users, o.latent_width});
    g[0].zero_();  // user 0 is never reached
    every->Step(f.values, g);
    skipping->Step(f.values, g);
  }
  const torch::Tensor a = every->Latents(f.values), b = skipping->Latents(f.values);
  EXPECT_TRUE(torch::equal(b[0], before[0]));   // untouched, not even by weight decay
  EXPECT_FALSE(torch::equal(a[0], before[0]));  // PyTorch's semantics: weight decay moved it
  EXPECT_TRUE(torch::allclose(a.slice(0, 1), b.slice(0, 1), 1e-5, 1e-6));
}

fl::FederationOptions NodeLevelRun(const std::string& method, const std::string& model, double lambda) {
  fl::FederationOptions o;
  o.spec.set_dataset("csbm:num_nodes=120,num_classes=3,num_features=12,homophily=0.9");
  o.spec.set_partitioner("node_level");
  o.spec.set_clients(120);
  o.spec.set_split("stratified:train=0.2,val=0.3");
  o.spec.set_method(method);
  o.spec.set_model(model);
  o.spec.set_rounds(3);
  o.spec.set_local_epochs(1);
  o.spec.set_lr(0.05);
  o.spec.mutable_eval()->set_round(fl::proto::EvalProtocol::LAST);
  NfedgnnParams p;
  p.set_laplacian_weight(lambda);
  o.spec.add_method_params()->PackFrom(p);
  o.cache_dir = "none";
  o.seed = 3;
  return o;
}

constexpr char kGcn[] = "gcn:layers=2,hidden=16,dropout=0.5";
constexpr char kGat[] = "gat:layers=2,heads=8,hidden=16,out_heads=1,dropout=0.6,input_dropout=0.6,attn_dropout=0.6";

TEST(NfedgnnRun, CountsTheLatentBytesOfTableOne) {
  // §B.7: n · 16 floats (GCN) or n · 128 (GAT) per round up, and as many gradients down.
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult gcn, fl::RunFederation(NodeLevelRun("nfedgnn", kGcn, 1)));
  EXPECT_EQ(gcn.result().bytes_up(), 120 * 16 * 4 * 3);
  EXPECT_EQ(gcn.result().bytes_down(), 120 * 16 * 4 * 3);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult gat, fl::RunFederation(NodeLevelRun("nfedgnn", kGat, 1)));
  EXPECT_EQ(gat.result().bytes_up(), 120 * 128 * 4 * 3);
  ASSERT_EQ(gat.rounds_size(), 3);
  EXPECT_TRUE(gat.rounds(2).has_train_loss());
}

TEST(NfedgnnRun, LearnsAndIsDeterministic) {
  fl::FederationOptions o = NodeLevelRun("nfedgnn", kGcn, 1);
  o.spec.set_rounds(40);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult a, fl::RunFederation(o));
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult b, fl::RunFederation(o));
  EXPECT_GT(a.result().test_acc(), 60.0);  // 3 balanced classes: chance is 33%
  EXPECT_LT(a.rounds(a.rounds_size() - 1).train_loss(), a.rounds(0).train_loss());
  for (int r = 0; r < a.rounds_size(); ++r) {
    EXPECT_EQ(a.rounds(r).test_acc(), b.rounds(r).test_acc());
    EXPECT_EQ(a.rounds(r).train_loss(), b.rounds(r).train_loss());
  }
}

// Eq. 3's summed CE: the first round's loss (same initial models, λ = 0) is the mean's times the
// number of training users; and the users' own weight decay reaches their maps.
TEST(NfedgnnRun, SummedCrossEntropyAndUserWeightDecay) {
  fl::FederationOptions mean = NodeLevelRun("nfedgnn", kGcn, 0);
  fl::FederationOptions sum = mean;
  NfedgnnParams p;
  p.set_ce_reduction(NfedgnnParams::SUM);
  sum.spec.clear_method_params();
  sum.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult a, fl::RunFederation(mean));
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult b, fl::RunFederation(sum));
  EXPECT_NEAR(b.rounds(0).train_loss() / a.rounds(0).train_loss(), 24.0, 1e-4);  // 20% of 120 users

  auto with_user_decay = [&](double decay) {
    fl::FederationOptions o = mean;
    NfedgnnParams q;
    q.set_user_weight_decay(decay);
    o.spec.clear_method_params();
    o.spec.add_method_params()->PackFrom(q);
    absl::StatusOr<fl::proto::FederationResult> r = fl::RunFederation(o);
    CHECK(r.ok()) << r.status();
    return r->rounds(r->rounds_size() - 1).train_loss();
  };
  EXPECT_EQ(with_user_decay(5e-4), a.rounds(a.rounds_size() - 1).train_loss());  // the run's weight decay, spelled
  EXPECT_NE(with_user_decay(0), a.rounds(a.rounds_size() - 1).train_loss());
  p.Clear();
  p.set_user_weight_decay(-1);
  sum.spec.clear_method_params();
  sum.spec.add_method_params()->PackFrom(p);
  EXPECT_THAT(fl::RunFederation(sum).status(),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("user_weight_decay")));
}

TEST(NfedgnnRun, RefusesWhatIsNotNodeLevel) {
  fl::FederationOptions o = NodeLevelRun("nfedgnn", kGcn, 1);
  o.spec.set_clients(10);
  EXPECT_THAT(fl::RunFederation(o).status(), fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                                         ::testing::HasSubstr("clients must be 120")));
  o = NodeLevelRun("nfedgnn", kGcn, 1);
  o.spec.set_partitioner("louvain");
  EXPECT_THAT(fl::RunFederation(o).status(), fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                                         ::testing::HasSubstr("node_level")));
  o = NodeLevelRun("nfedgnn", "gcn:layers=3", 1);
  EXPECT_THAT(fl::RunFederation(o).status(), fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                                         ::testing::HasSubstr("2 layers")));
  o = NodeLevelRun("nfedgnn", kGcn, -1);
  EXPECT_THAT(fl::RunFederation(o).status(), fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                                         ::testing::HasSubstr("laplacian_weight")));
}

}  // namespace
}  // namespace fgl::methods::nfedgnn
