// GraphFL: the server's meta step and average on hand-made replies, the exchange order it
// enforces, the client's two replies, and a federation run in two exchanges per round.
#include <cmath>

#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "methods/graphfl/graphfl.pb.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::graphfl {
namespace {

fl::MethodConfig Config() {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.model_spec = "gcn:layers=2,hidden=4";
  config.num_features = 3;
  config.num_classes = 2;
  config.spec.set_clients(3);
  GraphFlParams p;
  p.set_meta_lr(0.5);
  config.spec.add_method_params()->PackFrom(p);
  return config;
}

float First(const fl::proto::Message& m) { return fl::DecodeTensors(m)->begin()->second.flatten()[0].item<float>(); }

TEST(GraphFlServerTest, MetaStepOnTheMeanQueryGradientThenTheAverage) {
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("graphfl"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(Config()));
  ASSERT_EQ(fl::ExchangesOf(*server), 2);
  const fl::RoundInfo meta{1, 11, 0}, tune{1, 12, 1};
  ASSERT_OK_AND_ASSIGN(fl::proto::Message w, server->Broadcast(meta));
  ASSERT_OK_AND_ASSIGN(auto shapes, fl::DecodeTensors(w));
  auto reply = [&](int client, float v, const char* type, const fl::RoundInfo& round) {
    fl::NamedTensors t;
    for (const auto& [name, s] : shapes) t.emplace_back(name, torch::full_like(s, v));
    fl::proto::Message m = fl::ModelReply(t, 10 * (client + 1), client, round, type);
    fl::AddWeight(fl::proto::UNIFORM, &m);
    return m;
  };
  // Exchange 0 takes query gradients only; node counts play no part in the mean.
  EXPECT_FALSE(server->Accumulate(reply(0, 1.0f, "graphfl.weights", meta)).ok());
  ASSERT_OK(server->Accumulate(reply(0, 1.0f, "graphfl.query_gradient", meta)));
  ASSERT_OK(server->Accumulate(reply(1, 3.0f, "graphfl.query_gradient", meta)));
  EXPECT_FALSE(server->Accumulate(reply(2, std::nanf(""), "graphfl.query_gradient", meta)).ok());
  fl::NamedTensors wrong = {{"nope", torch::zeros({1})}};
  EXPECT_FALSE(server->Accumulate(fl::ModelReply(wrong, 1, 2, meta, "graphfl.query_gradient")).ok());
  ASSERT_OK(server->FinishRound(meta));
  // u = w - 0.5 * mean(1, 3) = w - 1.
  ASSERT_OK_AND_ASSIGN(fl::proto::Message u, server->Broadcast(tune));
  EXPECT_FLOAT_EQ(First(u), First(w) - 1.0f);
  EXPECT_FALSE(server->Accumulate(reply(0, 1.0f, "graphfl.query_gradient", tune)).ok());
  ASSERT_OK(server->Accumulate(reply(0, 2.0f, "graphfl.weights", tune)));
  ASSERT_OK(server->Accumulate(reply(2, 6.0f, "graphfl.weights", tune)));
  ASSERT_OK(server->FinishRound(tune));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message next, server->Broadcast({2, 21, 0}));
  EXPECT_FLOAT_EQ(First(next), 4.0f);  // 1/N, not node-weighted
  // The global model survives a checkpoint between rounds.
  ASSERT_OK_AND_ASSIGN(fl::proto::Message saved, server->SaveState());
  ASSERT_OK_AND_ASSIGN(auto restored, f.server(Config()));
  ASSERT_OK(restored->RestoreState(saved));
  EXPECT_FLOAT_EQ(First(*restored->Broadcast({2, 21, 0})), 4.0f);
  // A round whose fine-tuning nobody finished keeps w, not the meta-stepped u.
  const fl::RoundInfo meta2{2, 21, 0}, tune2{2, 22, 1};
  ASSERT_OK(restored->Accumulate(reply(1, 2.0f, "graphfl.query_gradient", meta2)));
  ASSERT_OK(restored->FinishRound(meta2));
  EXPECT_FLOAT_EQ(First(*restored->Broadcast(tune2)), 3.0f);
  ASSERT_OK(restored->FinishRound(tune2));
  EXPECT_FLOAT_EQ(First(*restored->Broadcast({3, 31, 0})), 4.0f);
  EXPECT_FALSE(restored->FinishRound(tune2).ok());  // out of order
}

TEST(GraphFlClientTest, RepliesAQueryGradientThenItsWeights) {
  auto data = fl::testing::CsbmClient(120, 3, 2, /*seed=*/5);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("graphfl"));
  fl::MethodConfig config = Config();
  config.spec.set_local_epochs(2);
  ASSERT_OK_AND_ASSIGN(auto client, f.client(data, config));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message w, server->Broadcast({1, 3, 0}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message g, client->Train(w, {1, 3, 0}));
  EXPECT_EQ(g.header().type(), "graphfl.query_gradient");
  ASSERT_OK_AND_ASSIGN(auto gradient, fl::DecodeTensors(g));
  double norm = 0;
  for (const auto& [name, t] : gradient) norm += t.norm().item<double>();
  EXPECT_GT(norm, 0.0);
  ASSERT_OK(server->Accumulate(g));
  ASSERT_OK(server->FinishRound({1, 3, 0}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message u, server->Broadcast({1, 4, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message v, client->Train(u, {1, 4, 1}));
  EXPECT_EQ(v.header().type(), "graphfl.weights");
  EXPECT_FALSE(client->Train(u, {1, 4, 2}).ok());
  // 120 nodes, 20% training: too few for 100 + 100, so the pool is split in their ratio; a share
  // that rounds to no support node is refused.
  GraphFlParams lopsided;
  lopsided.set_support_nodes(1);
  lopsided.set_query_nodes(1000);
  config.spec.clear_method_params();
  config.spec.add_method_params()->PackFrom(lopsided);
  EXPECT_FALSE(f.client(data, config).ok());
}

TEST(GraphFlRunTest, TwoExchangesPerRoundAndTheGlobalModelLearns) {
  fl::FederationOptions o = fl::testing::SmallFederation("graphfl");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::GLOBAL);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult r, fl::RunFederation(o));
  EXPECT_GT(r.result().test_acc(), 50.0);  // 4 classes
  ASSERT_EQ(r.rounds_size(), 6);
  // Each round every client uploads a query gradient and its weights: the same tensors twice.
  fl::FederationOptions once = o;
  once.spec.set_method("fedavg");
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult fedavg, fl::RunFederation(once));
  EXPECT_EQ(r.rounds(0).participants(), 4);
  EXPECT_NEAR(static_cast<double>(r.rounds(0).bytes_up()) / fedavg.rounds(0).bytes_up(), 2.0, 0.05);
}

}  // namespace
}  // namespace fgl::methods::graphfl
