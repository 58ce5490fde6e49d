// FedGKC: Eq. 8's clarity on hand-made distributions, Eq. 11's weights, only the copilot travels,
// and each switch changes what it names.
#include <cmath>

#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/testing/client_data.h"
#include "graph/testing/tiny_graphs.h"
#include "gtest/gtest.h"
#include "methods/fedgkc/fedgkc.pb.h"
#include "methods/fedgkc/knowledge_level.h"
#include "methods/fedgkc/mutual_loss.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedgkc {
namespace {

fl::MethodConfig Config(const FedGkcParams& p = {}) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_features = 8;
  config.num_classes = 3;
  config.seed = 4;
  config.spec.set_local_epochs(2);
  config.model_spec = "gat:layers=2,heads=1,hidden=64";  // private; the copilot is a GCN
  config.spec.add_method_params()->PackFrom(p);
  return config;
}

TEST(KnowledgeLevelTest, ClarityOnHandMadeDistributions) {
  // A path 0 - 1 - 2 and an isolated node 3.
  auto g = graph::CsrFromEdges(4, {0, 1}, {1, 2});
  ASSERT_OK(g.status());
  ASSERT_OK_AND_ASSIGN(nn::GraphView view, nn::GraphView::Create(*g));
  const torch::Tensor p = torch::tensor({{0.7, 0.2, 0.1}, {0.7, 0.2, 0.1}, {0.1, 0.1, 0.8}, {1.0 / 3, 1.0 / 3, 1.0 / 3}},
                                        torch::kFloat64);
  KnowledgeTerms strength_only{true, false, false};
  EXPECT_TRUE(torch::allclose(NodeKnowledge(p, view, strength_only), torch::tensor({0.7, 0.7, 0.8, 1.0 / 3}, torch::kFloat64)));
  // Literal Eq. 8, first term: (max − Σ others) / (M − 1).
  KnowledgeTerms class_only{false, true, false};
  EXPECT_TRUE(torch::allclose(NodeKnowledge(p, view, class_only),
                              torch::tensor({0.2, 0.2, 0.3, -1.0 / 6}, torch::kFloat64)));
  class_only.mean_margin = true;  // ((0.7 − 0.2) + (0.7 − 0.1)) / 2 = 0.55
  EXPECT_TRUE(torch::allclose(NodeKnowledge(p, view, class_only),
                              torch::tensor({0.55, 0.55, 0.7, 0.0}, torch::kFloat64)));
  // Smoothing: −λ · mean cosine to the neighbours; node 3 has none.
  KnowledgeTerms smooth_only{false, false, true};
  smooth_only.lambda = 0.5;
  auto cos = [&](int i, int j) { return (p[i] * p[j]).sum().item<double>() / (p[i].norm().item<double>() * p[j].norm().item<double>()); };
  const torch::Tensor expected = torch::tensor(
      {-0.5 * cos(0, 1), -0.5 * (cos(1, 0) + cos(1, 2)) / 2, -0.5 * cos(2, 1), 0.0}, torch::kFloat64);
  EXPECT_NEAR(cos(0, 1), 1.0, 1e-12);
  EXPECT_TRUE(torch::allclose(NodeKnowledge(p, view, smooth_only), expected));
  // P_k is the mean of the sum, clamped from below.
  const KnowledgeTerms all;
  EXPECT_NEAR(KnowledgeLevel(p, view, all, 1e-8), NodeKnowledge(p, view, all).mean().item<double>(), 1e-12);
  EXPECT_EQ(KnowledgeLevel(p, view, KnowledgeTerms{false, true, false}, 0.25), 0.25);
}

// Eqs. 1–3 written out by hand: the direction of each KL and which side is the teacher.
TEST(MutualLossTest, EqualsTheWrittenOutObjective) {
  auto g = graph::CsrFromEdges(3, {0, 1}, {1, 2});
  ASSERT_OK(g.status());
  ASSERT_OK_AND_ASSIGN(nn::GraphView view, nn::GraphView::Create(*g));
  torch::manual_seed(5);
  nn::ModelOutput s{torch::randn({3, 4}, torch::kFloat32).requires_grad_(true),
                    torch::randn({3, 2}, torch::kFloat32).requires_grad_(true)};
  nn::ModelOutput t{torch::randn({3, 4}, torch::kFloat32), torch::randn({3, 2}, torch::kFloat32)};
  const torch::Tensor labels = torch::tensor({0, 1, 1}, torch::kInt64);
  const torch::Tensor train = torch::tensor({true, false, true});
  auto kl = [](const torch::Tensor& p_logits, const torch::Tensor& q_logits) {  // KL(σ(p) ‖ σ(q)), one row
    const torch::Tensor p = torch::softmax(p_logits, 0);
    return (p * (p.log() - torch::log_softmax(q_logits, 0))).sum();
  };
  // α·CE over nodes 0 and 2.
  torch::Tensor ce = -(torch::log_softmax(s.logits[0], 0)[0] + torch::log_softmax(s.logits[2], 0)[1]) / 2;
  // β·(1/N) Σ_i Σ_{j∈N(i)∪i} KL(σ(z_j) ‖ σ(h_i)), z the teacher's embedding.
  const std::vector<std::vector<int>> closed = {{0, 1}, {0, 1, 2}, {1, 2}};
  torch::Tensor neigh = torch::zeros({}, torch::kFloat32);
  for (int i = 0; i < 3; ++i)
    for (int j : closed[i]) neigh = neigh + kl(t.embedding[j], s.embedding[i]);
  neigh = neigh / 3;
  torch::Tensor logit_kl = (kl(t.logits[0], s.logits[0]) + kl(t.logits[1], s.logits[1]) + kl(t.logits[2], s.logits[2])) / 3;
  const FedGkcParams p;  // α 0.6, β 0.2
  const torch::Tensor expected = 0.6 * ce + 0.2 * neigh + 0.2 * logit_kl;
  EXPECT_NEAR(MutualLoss(s, t, labels, train, view, p).item<double>(), expected.item<double>(), 1e-5);
  FedGkcParams plain;
  plain.set_smkd(false);
  EXPECT_NEAR(MutualLoss(s, t, labels, train, view, plain).item<double>(), (0.6 * ce + 0.4 * logit_kl).item<double>(),
              1e-5);
  FedGkcParams ce_only;
  ce_only.set_mutual_distillation(false);
  EXPECT_NEAR(MutualLoss(s, t, labels, train, view, ce_only).item<double>(), (0.6 * ce).item<double>(), 1e-5);
}

// Eq. 11: w_k = (N_k/ΣN + P_k/ΣP)/2, non-negative and summing to one.
TEST(FedGkcTest, ServerMixesVolumeAndKnowledgeWeights) {
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fedgkc, fl::FindMethod("fedgkc"));
  const fl::MethodConfig config = Config();
  ASSERT_OK_AND_ASSIGN(auto server, fedgkc.server(config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  const double volume[] = {100, 300}, knowledge[] = {0.9, 0.1}, value[] = {1.0, 5.0};
  for (int k = 0; k < 2; ++k) {
    fl::proto::Message reply = global;
    reply.mutable_header()->set_sender(k);
    ASSERT_OK_AND_ASSIGN(auto tensors, fl::DecodeTensors(global));
    fl::NamedTensors filled;
    for (auto& [name, t] : tensors) filled.emplace_back(name, torch::full_like(t, value[k]));
    reply.clear_tensors();
    fl::AddTensors(filled, &reply);
    (*reply.mutable_scalars())["num_nodes"] = volume[k];
    (*reply.mutable_scalars())["data_volume"] = volume[k];
    (*reply.mutable_scalars())["knowledge"] = knowledge[k];
    ASSERT_OK(server->Accumulate(reply));
  }
  ASSERT_OK(server->FinishRound({1, 1}));
  const double w0 = (100.0 / 400 + 0.9 / 1.0) / 2, w1 = (300.0 / 400 + 0.1 / 1.0) / 2;
  EXPECT_NEAR(w0 + w1, 1.0, 1e-12);
  ASSERT_OK_AND_ASSIGN(fl::proto::Message next, server->Broadcast({2, 2}));
  ASSERT_OK_AND_ASSIGN(auto averaged, fl::DecodeTensors(next));
  for (const auto& [name, t] : averaged) {
    EXPECT_NEAR(t.min().item<double>(), w0 * 1.0 + w1 * 5.0, 1e-6) << name;
    EXPECT_NEAR(t.max().item<double>(), w0 * 1.0 + w1 * 5.0, 1e-6) << name;
  }
  // A reply without a knowledge level is refused, naming it.
  fl::proto::Message bad = global;
  (*bad.mutable_scalars())["data_volume"] = 1;
  absl::Status refused = server->Accumulate(bad);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("knowledge"), std::string::npos) << refused;
}

TEST(FedGkcTest, OnlyTheCopilotLeavesTheClient) {
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fedgkc, fl::FindMethod("fedgkc"));
  const fl::MethodConfig config = Config();
  ASSERT_OK_AND_ASSIGN(auto server, fedgkc.server(config));
  ASSERT_OK_AND_ASSIGN(auto client, fedgkc.client(data, config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, client->Train(global, {1, 1}));
  // The copilot's tensors, named and shaped as broadcast: a 2-layer GCN, no attention.
  ASSERT_EQ(reply.tensors_size(), global.tensors_size());
  ASSERT_EQ(reply.tensors_size(), 4);
  for (int i = 0; i < reply.tensors_size(); ++i) {
    EXPECT_EQ(reply.tensors(i).name(), global.tensors(i).name());
    EXPECT_EQ(reply.tensors(i).shape_size(), global.tensors(i).shape_size());
    for (int d = 0; d < reply.tensors(i).shape_size(); ++d) EXPECT_EQ(reply.tensors(i).shape(d), global.tensors(i).shape(d));
    EXPECT_EQ(reply.tensors(i).name().find("att"), std::string::npos);
  }
  // Plus scalars only: the two weights, the node count and the loss for the log.
  EXPECT_EQ(reply.scalars().size(), 4);
  for (const char* s : {"num_nodes", "data_volume", "knowledge", "train_loss"}) EXPECT_TRUE(reply.scalars().contains(s)) << s;
  EXPECT_GT(reply.scalars().at("knowledge"), 0.0);
  EXPECT_EQ(reply.scalars().at("data_volume"), 200);
  ASSERT_OK(server->Accumulate(reply));
  ASSERT_OK(server->FinishRound({1, 1}));
}

// Each switch reaches the run: the private model differs with and without it.
TEST(FedGkcTest, SwitchesChangeThePrivateModel) {
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fedgkc, fl::FindMethod("fedgkc"));
  auto predict = [&](const FedGkcParams& p) -> torch::Tensor {
    auto server = fedgkc.server(Config(p));
    auto client = fedgkc.client(data, Config(p));
    EXPECT_TRUE(server.ok() && client.ok());
    auto global = (*server)->Broadcast({1, 1});
    EXPECT_TRUE((*client)->Train(*global, {1, 1}).ok());
    return *(*client)->Predict(nullptr);
  };
  const torch::Tensor full = predict({});
  EXPECT_TRUE(torch::equal(full, predict({})));  // deterministic
  FedGkcParams p;
  p.set_self_distillation(false);
  EXPECT_FALSE(torch::allclose(full, predict(p)));
  p = {};
  p.set_mutual_distillation(false);
  EXPECT_FALSE(torch::allclose(full, predict(p)));
  p = {};
  p.set_smkd(false);
  EXPECT_FALSE(torch::allclose(full, predict(p)));
  p = {};
  p.set_order(FedGkcParams::COPILOT_FIRST);
  EXPECT_FALSE(torch::allclose(full, predict(p)));
}

// §A.6: each client's private model is initialised on its own; the copilot starts from θ_g.
TEST(FedGkcTest, PrivateModelsAreInitialisedPerClient) {
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fedgkc, fl::FindMethod("fedgkc"));
  auto predict = [&](int id, const FedGkcParams& p) {
    auto data = fl::testing::CsbmClient(60, 8, 3, 5);
    data->id = id;
    auto client = fedgkc.client(data, Config(p));
    EXPECT_TRUE(client.ok());
    return *(*client)->Predict(nullptr);  // before any training: the initialisation
  };
  EXPECT_FALSE(torch::allclose(predict(0, {}), predict(5, {})));
  FedGkcParams shared;
  shared.set_private_init(FedGkcParams::SHARED);
  EXPECT_TRUE(torch::equal(predict(0, shared), predict(5, shared)));
}

TEST(FedGkcTest, RejectsMismatchedWidthsAndBadOptions) {
  auto data = fl::testing::CsbmClient(50, 8, 3, 4);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fedgkc, fl::FindMethod("fedgkc"));
  fl::MethodConfig config = Config();
  config.model_spec = "gcn:layers=2,hidden=32";
  absl::Status s = fedgkc.client(data, config).status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("one width"), std::string::npos) << s;
  FedGkcParams p;
  p.set_alpha(0.9);  // alpha + beta > 1
  fl::FederationOptions o = fl::testing::SmallFederation("fedgkc");
  o.spec.add_method_params()->PackFrom(p);
  absl::Status bad = fl::RunFederation(o).status();
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("beta"), std::string::npos) << bad;
}

TEST(FedGkcTest, HeterogeneousFederationRunsAndRepeats) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedgkc");
  o.spec.set_model("gcn:layers=2,hidden=64;sage:layers=2,hidden=64;gat:layers=2,heads=1,hidden=64;gin:layers=2,hidden=64;sgc:k=2,hidden=64");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult a, fl::RunFederation(o));
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult b, fl::RunFederation(o));
  EXPECT_GT(a.result().test_acc(), 40.0);  // 4 balanced classes
  EXPECT_EQ(a.result().test_acc(), b.result().test_acc());
  EXPECT_EQ(a.result().bytes_up(), b.result().bytes_up());
}

}  // namespace
}  // namespace fgl::methods::fedgkc
