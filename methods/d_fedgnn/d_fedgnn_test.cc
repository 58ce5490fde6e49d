// D-FedGNN: the ring average on hand-made replies (neighbours wrap around, a silent client is
// left out, state round trip), and a federation scored on each client's ring average.
#include <cmath>

#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::d_fedgnn {
namespace {

float FirstValue(const fl::proto::Message& m) { return fl::DecodeTensors(m)->begin()->second.flatten()[0].item<float>(); }

TEST(DFedGnnServerTest, EachClientGetsItsRingAverage) {
  fl::MethodConfig config;
  config.model_spec = "gcn:layers=2,hidden=4";
  config.num_features = 3;
  config.num_classes = 2;
  config.num_clients = 5;
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("d_fedgnn"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_TRUE(server->PersonalisedBroadcast());
  EXPECT_FALSE(server->Broadcast({1, 1}).ok());  // no global model
  ASSERT_OK_AND_ASSIGN(fl::proto::Message init, server->BroadcastTo(0, {1, 1}));
  EXPECT_EQ(init.tensors_size(), 0);  // round 1: every client trains from its own initialisation
  ASSERT_OK_AND_ASSIGN(auto model, fl::ModelAverageServer::Create(config, "shapes"));
  const fl::NamedTensors shapes = model->GlobalParameters();
  auto reply = [&](int client, float v) {
    fl::NamedTensors p;
    for (const auto& [name, t] : shapes) p.emplace_back(name, torch::full_like(t, v));
    return fl::ModelReply(p, /*num_nodes=*/10 * (client + 1), client, {1, 1}, "d_fedgnn.weights");
  };
  for (int k : {0, 1, 2, 4}) ASSERT_OK(server->Accumulate(reply(k, static_cast<float>(k + 1))));  // 3 is silent
  fl::NamedTensors bad = {{"nope", torch::zeros({1})}};
  EXPECT_FALSE(server->Accumulate(fl::ModelReply(bad, 1, 3, {1, 1}, "d_fedgnn.weights")).ok());
  EXPECT_FALSE(server->Accumulate(reply(7, 1.0f)).ok());  // not in the ring
  EXPECT_FALSE(server->Accumulate(reply(3, std::nanf(""))).ok());  // not finite
  ASSERT_OK(server->FinishRound({1, 1}));
  auto value = [&](fl::ServerAlgorithm& s, int k) { return FirstValue(*s.BroadcastTo(k, {2, 2})); };
  // Unweighted means of the neighbours that sent weights (node counts play no part).
  EXPECT_FLOAT_EQ(value(*server, 0), (5 + 1 + 2) / 3.0f);
  EXPECT_FLOAT_EQ(value(*server, 1), (1 + 2 + 3) / 3.0f);
  EXPECT_FLOAT_EQ(value(*server, 2), (2 + 3) / 2.0f);
  EXPECT_FLOAT_EQ(value(*server, 3), (3 + 5) / 2.0f);
  EXPECT_FLOAT_EQ(value(*server, 4), (3 + 5 + 1) / 3.0f);
  ASSERT_OK_AND_ASSIGN(fl::proto::Message saved, server->SaveState());
  ASSERT_OK_AND_ASSIGN(auto restored, f.server(config));
  ASSERT_OK(restored->RestoreState(saved));
  EXPECT_FLOAT_EQ(value(*restored, 3), 4.0f);
  // The next round still sees client 2's weights from round 1 when client 2 is silent.
  ASSERT_OK(restored->Accumulate(reply(1, 7.0f)));
  ASSERT_OK(restored->FinishRound({2, 2}));
  EXPECT_FLOAT_EQ(value(*restored, 2), (7 + 3) / 2.0f);
}

TEST(DFedGnnServerTest, TwoClientsCountTheOtherTwiceAsTheCode) {
  fl::MethodConfig config;
  config.model_spec = "gcn:layers=2,hidden=4";
  config.num_features = 3;
  config.num_classes = 2;
  config.num_clients = 2;
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("d_fedgnn"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(auto model, fl::ModelAverageServer::Create(config, "shapes"));
  for (int k : {0, 1}) {
    fl::NamedTensors p;
    for (const auto& [name, t] : model->GlobalParameters()) p.emplace_back(name, torch::full_like(t, 3.0f * k));
    ASSERT_OK(server->Accumulate(fl::ModelReply(p, 10, k, {1, 1}, "d_fedgnn.weights")));
  }
  ASSERT_OK(server->FinishRound({1, 1}));
  EXPECT_FLOAT_EQ(FirstValue(*server->BroadcastTo(0, {2, 2})), (0 + 3 + 3) / 3.0f);
  EXPECT_FLOAT_EQ(FirstValue(*server->BroadcastTo(1, {2, 2})), (3 + 0 + 0) / 3.0f);
}

TEST(DFedGnnRunTest, LearnsAndScoresEachRingAverage) {
  fl::FederationOptions o = fl::testing::SmallFederation("d_fedgnn");
  o.spec.mutable_eval()->set_model("personalized");
  ASSERT_OK_AND_ASSIGN(fl::FederationResult r, fl::RunFederation(o));
  EXPECT_GT(r.test_acc, 60.0);
  o.spec.mutable_eval()->set_model("global");
  EXPECT_FALSE(fl::RunFederation(o).ok());
}

}  // namespace
}  // namespace fgl::methods::d_fedgnn
