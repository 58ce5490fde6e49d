// FedMpa's family end to end on a small csbm graph with few labels.
#include <cmath>
#include <map>
#include <vector>
#include <string>

#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/testing/client_data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "methods/fedmpa/fedmpa.pb.h"
#include "nn/models/gnn_model.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedmpa {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kAppnp[] = "appnp:layers=3,hidden=32,dropout=0.5,input_dropout=0.5,k=10,alpha=0.1,prop_dropout=0.5";

// 4 clients, 5% labels, 5 FedMLP rounds (+ the local stage), locally scored on the last round.
fl::FederationOptions Spec(const std::string& method, FedMpaParams p = {}) {
  fl::FederationOptions o = fl::testing::SmallFederation(method);
  o.spec.set_split("label_rate:train=0.05,val=0.2,test=0.2");
  o.spec.set_model(kAppnp);
  o.spec.set_local_epochs(1);
  o.spec.set_weight_decay(0);
  if (!p.has_federated_rounds()) p.set_federated_rounds(5);
  if (!p.has_max_epochs()) p.set_max_epochs(60);
  if (!p.has_patience()) p.set_patience(20);
  o.spec.set_rounds(method == "locmpa" ? 1 : method == "fedmlp" ? p.federated_rounds() : p.federated_rounds() + 1);
  o.spec.mutable_eval()->set_model(method == "fedmlp" ? fl::proto::EvalProtocol::GLOBAL : fl::proto::EvalProtocol::LOCAL);
  o.spec.mutable_eval()->set_round(fl::proto::EvalProtocol::LAST);
  o.spec.add_method_params()->PackFrom(p);
  return o;
}

TEST(FedMpaTest, PropagationBeatsTheFederatedMlpWithFewLabels) {
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult mlp, fl::RunFederation(Spec("fedmlp")));
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult mpa, fl::RunFederation(Spec("fedmpa")));
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult loc, fl::RunFederation(Spec("locmpa")));
  EXPECT_GT(mpa.result().test_acc(), mlp.result().test_acc() + 5) << "APPNP over a homophilous graph should help";
  EXPECT_GT(loc.result().test_acc(), mlp.result().test_acc());
  // The local stage sends nothing: its round's uploads are headers only, and LocMpa's whole run.
  EXPECT_LT(mpa.rounds(mpa.rounds_size() - 1).bytes_up(), 4 * 64);
  EXPECT_GT(mpa.rounds(0).bytes_up(), 4 * 1000);  // stage 1 uploads the MLP
  EXPECT_LT(loc.result().bytes_up() + loc.result().bytes_down(), 4 * 128);
}

// The whole-graph test (note A.5.3's second protocol) scores the same models on the original graph.
TEST(FedMpaTest, WholeGraphTestScoresTheSameModels) {
  for (const char* method : {"fedmlp", "fedmpa", "locmpa"}) {
    fl::FederationOptions o = Spec(method);
    ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult plain, fl::RunFederation(o));
    o.spec.mutable_eval()->set_global_test(fl::proto::EvalProtocol::WHOLE_GRAPH);
    ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult whole, fl::RunFederation(o));
    EXPECT_EQ(whole.result().test_acc(), plain.result().test_acc()) << method;
    EXPECT_TRUE(whole.result().has_global_test_acc()) << method;
    // 4 classes; LocMpa's models, each from one label-skewed community, may sit at chance there.
    if (std::string(method) != "locmpa") {
      EXPECT_GT(whole.result().global_test_acc(), 25.0) << method;
    }
    // FedMpa's last round scores the local stage's APPNP, not the MLP of the round before.
    if (std::string(method) == "fedmpa") {
      const int n = whole.rounds_size();
      EXPECT_NE(whole.rounds(n - 1).global_test_acc(), whole.rounds(n - 2).global_test_acc());
    }
  }
}

TEST(FedMpaTest, ReconstructionChangesFedMpaAndZeroWeightIsFedMpa) {
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult mpa, fl::RunFederation(Spec("fedmpa")));
  FedMpaParams none;
  none.set_reconstruction_weight(0);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult mpae0, fl::RunFederation(Spec("fedmpae", none)));
  EXPECT_EQ(mpae0.result().test_acc(), mpa.result().test_acc());
  const fl::proto::ClientRoundRecord& mpa_last = mpa.rounds(mpa.rounds_size() - 1).clients(0);
  const fl::proto::ClientRoundRecord& mpae0_last = mpae0.rounds(mpae0.rounds_size() - 1).clients(0);
  ASSERT_TRUE(mpa_last.has_train_loss() && mpae0_last.has_train_loss());  // client 0 trained last round
  EXPECT_EQ(mpae0_last.train_loss(), mpa_last.train_loss());
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult mpae, fl::RunFederation(Spec("fedmpae")));
  const fl::proto::ClientRoundRecord& mpae_last = mpae.rounds(mpae.rounds_size() - 1).clients(0);
  ASSERT_TRUE(mpae_last.has_train_loss());
  EXPECT_NE(mpae_last.train_loss(), mpa_last.train_loss());
  EXPECT_GT(mpae.result().test_acc(), 50.0);
}

TEST(FedMpaTest, RoundsMustFitTheStagesAndModelMustBeAppnp) {
  fl::FederationOptions o = Spec("fedmpa");
  o.spec.set_rounds(5);
  EXPECT_THAT(fl::RunFederation(o), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("fedmpa: rounds = 5 but the method needs 6")));
  o = Spec("fedmpa");
  o.spec.set_model("gcn");
  EXPECT_THAT(fl::RunFederation(o), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be appnp")));
  FedMpaParams bad;
  bad.set_patience(0);
  EXPECT_THAT(fl::RunFederation(Spec("fedmpa", bad)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fedmpa.patience = 0")));
}

TEST(FedMpaTest, UniformAveragingIsEquation5) {
  FedMpaParams weighted;
  weighted.set_uniform_average(false);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult uniform, fl::RunFederation(Spec("fedmlp")));
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult by_nodes, fl::RunFederation(Spec("fedmlp", weighted)));
  EXPECT_NE(uniform.final_global(), by_nodes.final_global());
}

// Stage 1 uploads the MLP's tensors and nothing else (no propagation or private state); the local
// stage uploads no tensors at all.
TEST(FedMpaTest, OnlyTheMlpLeavesTheClient) {
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  FedMpaParams p;
  p.set_federated_rounds(2);
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_features = 8;
  config.num_classes = 3;
  config.seed = 4;
  config.spec.set_local_epochs(1);
  config.model_spec = kAppnp;
  config.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(auto mlp, nn::MakeModel("mlp:layers=3,hidden=32", 8, 3));
  std::map<std::string, std::vector<int64_t>> expected;
  for (const auto& item : mlp->named_parameters(true)) expected[item.key()] = item.value().sizes().vec();
  ASSERT_EQ(expected.size(), 6u);  // three layers' weights and biases
  for (const char* method : {"fedmlp", "fedmpa", "fedmpae"}) {
    ASSERT_OK_AND_ASSIGN(fl::MethodFactories factories, fl::FindMethod(method));
    ASSERT_OK_AND_ASSIGN(auto server, factories.server(config));
    ASSERT_OK_AND_ASSIGN(auto client, factories.client(data, config));
    for (int round = 1; round <= 2; ++round) {
      ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({round, 7}));
      ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, client->Train(global, {round, 7}));
      std::map<std::string, std::vector<int64_t>> sent;
      for (const fl::proto::Tensor& t : reply.tensors()) sent[t.name()] = {t.shape().begin(), t.shape().end()};
      EXPECT_EQ(sent, expected) << method << " round " << round;
      ASSERT_OK(server->Accumulate(reply));
      ASSERT_OK(server->FinishRound({round, 7}));
    }
    if (std::string(method) == "fedmlp") continue;
    ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({3, 7}));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, client->Train(global, {3, 7}));
    EXPECT_EQ(reply.tensors_size(), 0) << method << ": the local stage sends no tensors";
  }
}

}  // namespace
}  // namespace fgl::methods::fedmpa
