// D-FedGNN: the ring average on hand-made replies (neighbours wrap around, a silent client is
// left out, state round trip), and a federation scored on each client's ring average.
#include <cmath>
#include <functional>
#include <string>

#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/typed_state.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "methods/d_fedgnn/d_fedgnn.pb.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::d_fedgnn {
namespace {

float FirstValue(const fl::proto::Message& m) { return fl::DecodeTensors(m)->begin()->second.flatten()[0].item<float>(); }

// A 2-layer GCN of width 4 on 3 features and 2 classes, in a ring of `clients`.
fl::MethodConfig TinyConfig(int clients) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.model_spec = "gcn:layers=2,hidden=4";
  config.num_features = 3;
  config.num_classes = 2;
  config.spec.set_clients(clients);
  return config;
}

TEST(DFedGnnServerTest, EachClientGetsItsRingAverage) {
  const fl::MethodConfig config = TinyConfig(5);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("d_fedgnn"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_NE(server->personalised(), nullptr);
  EXPECT_FALSE(server->Broadcast({1, 1}).ok());  // no global model
  ASSERT_OK_AND_ASSIGN(fl::proto::Message init, server->personalised()->BroadcastTo(0, {1, 1}));
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
  auto value = [&](fl::ServerAlgorithm& s, int k) { return FirstValue(*s.personalised()->BroadcastTo(k, {2, 2})); };
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

// The state is a DFedGnnServerState that restores to the same bytes; a bad one is refused naming
// the client and the field, and leaves the server as it was.
TEST(DFedGnnServerTest, RestoreRefusesABadStateAndChangesNothing) {
  const fl::MethodConfig config = TinyConfig(5);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("d_fedgnn"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(auto model, fl::ModelAverageServer::Create(config, "shapes"));
  for (int k : {0, 1}) {  // 2, 3 and 4 are silent: client 3 (between 2 and 4) has no ring average
    fl::NamedTensors p;
    for (const auto& [name, t] : model->GlobalParameters()) p.emplace_back(name, torch::full_like(t, k + 1.0f));
    ASSERT_OK(server->Accumulate(fl::ModelReply(p, 10, k, {1, 1}, "d_fedgnn.weights")));
  }
  ASSERT_OK(server->FinishRound({1, 1}));
  ASSERT_OK_AND_ASSIGN(const fl::proto::Message saved, server->SaveState());
  EXPECT_EQ(saved.tensors_size(), 0);  // no tensors named after clients
  ASSERT_OK_AND_ASSIGN(const DFedGnnServerState good, fl::UnpackState<DFedGnnServerState>(saved, "test"));
  ASSERT_EQ(good.ring_size(), 4);
  EXPECT_EQ(good.ring(3).client(), 4);
  ASSERT_EQ(good.latest_size(), 2);
  EXPECT_EQ(good.latest(1).client(), 1);
  ASSERT_OK_AND_ASSIGN(auto restored, f.server(config));
  ASSERT_OK(restored->RestoreState(saved));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message again, restored->SaveState());
  EXPECT_EQ(again.SerializeAsString(), saved.SerializeAsString());
  auto refused = [&](const std::function<void(DFedGnnServerState*)>& spoil, const std::string& error,
                     const std::string& detail = "") {
    SCOPED_TRACE(error);
    DFedGnnServerState bad = good;
    spoil(&bad);
    fl::proto::Message m;
    fl::PackState(bad, &m);
    EXPECT_THAT(restored->RestoreState(m),
                fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                       ::testing::AllOf(::testing::HasSubstr(error), ::testing::HasSubstr(detail))));
  };
  using State = DFedGnnServerState;
  refused([](State* s) { *s->add_ring() = s->ring(1); }, "d_fedgnn state: ring of client 1: listed twice");
  refused([](State* s) { *s->add_latest() = s->latest(0); }, "d_fedgnn state: latest of client 0: listed twice");
  refused([](State* s) { s->mutable_ring(0)->set_client(5); }, "ring of client 5: not a client of the ring [0, 5)");
  refused([](State* s) { s->mutable_latest(0)->set_client(-1); }, "latest of client -1: not a client of the ring");
  refused([](State* s) { s->mutable_latest(1)->clear_client(); }, "latest of client (none)");
  refused([](State* s) { s->mutable_ring(3)->mutable_parameters()->RemoveLast(); },
          "ring of client 4 has 3 tensors, expected 4");
  refused([](State* s) { s->mutable_latest(1)->mutable_parameters(1)->set_name("nope"); },
          "latest of client 1: missing, misshapen or non-finite");
  refused([](State* s) { *s->mutable_latest(1)->add_parameters() = s->latest(1).parameters(0); },
          "latest of client 1: tensor '", "' listed twice");
  refused([](State* s) {
            const fl::proto::Tensor& p = s->ring(0).parameters(0);
            *s->mutable_ring(0)->mutable_parameters(0) = fl::EncodeTensor(p.name(), fl::DecodeTensor(p)->unsqueeze(0));
          },
          "ring of client 0: missing, misshapen or non-finite");
  refused([](State* s) {
            const fl::proto::Tensor& p = s->ring(0).parameters(0);
            *s->mutable_ring(0)->mutable_parameters(0) = fl::EncodeTensor(p.name(), fl::DecodeTensor(p)->to(torch::kDouble));
          },
          "ring of client 0: tensor '", "' is Double, expected Float");
  refused([](State* s) {
            const fl::proto::Tensor& p = s->latest(1).parameters(0);
            torch::Tensor t = *fl::DecodeTensor(p);
            t.view(-1)[0] = INFINITY;
            *s->mutable_latest(1)->mutable_parameters(0) = fl::EncodeTensor(p.name(), t);
          },
          "latest of client 1: missing, misshapen or non-finite");
  refused([](State* s) { s->mutable_ring(1)->mutable_parameters(0)->set_data("x"); }, "ring of client 1: tensor '");
  EXPECT_THAT(restored->RestoreState(fl::proto::Message()),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("holds none")));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message after, restored->SaveState());
  EXPECT_EQ(after.SerializeAsString(), saved.SerializeAsString());  // unchanged by the refused states
}

TEST(DFedGnnServerTest, TwoClientsCountTheOtherTwiceAsTheCode) {
  const fl::MethodConfig config = TinyConfig(2);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("d_fedgnn"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(auto model, fl::ModelAverageServer::Create(config, "shapes"));
  for (int k : {0, 1}) {
    fl::NamedTensors p;
    for (const auto& [name, t] : model->GlobalParameters()) p.emplace_back(name, torch::full_like(t, 3.0f * k));
    ASSERT_OK(server->Accumulate(fl::ModelReply(p, 10, k, {1, 1}, "d_fedgnn.weights")));
  }
  ASSERT_OK(server->FinishRound({1, 1}));
  EXPECT_FLOAT_EQ(FirstValue(*server->personalised()->BroadcastTo(0, {2, 2})), (0 + 3 + 3) / 3.0f);
  EXPECT_FLOAT_EQ(FirstValue(*server->personalised()->BroadcastTo(1, {2, 2})), (3 + 0 + 0) / 3.0f);
}

TEST(DFedGnnRunTest, LearnsAndScoresEachRingAverage) {
  fl::FederationOptions o = fl::testing::SmallFederation("d_fedgnn");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::PERSONALIZED);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult r, fl::RunFederation(o));
  EXPECT_GT(r.result().test_acc(), 60.0);
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::GLOBAL);
  EXPECT_FALSE(fl::RunFederation(o).ok());
}

}  // namespace
}  // namespace fgl::methods::d_fedgnn
