// FedGTA: label propagation and moments on hand-made inputs, the server's similarity-gated
// confidence-weighted personalised aggregation, and a federated run (alone and with FedTAD).
#include <cmath>

#include "methods/fedgta/fedgta.pb.h"
#include "methods/fedtad/fedtad.pb.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/typed_state.h"
#include "fl/testing/client_data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "methods/fedgta/topology_moments.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedgta {
namespace {

TEST(TopologyMomentsTest, LabelPropagationOnAPath) {
  auto g = graph::CsrFromEdges(3, {0, 1}, {1, 2});  // 0 - 1 - 2
  ASSERT_TRUE(g.ok());
  const torch::Tensor y = torch::tensor({{1.f, 0.f}, {0.f, 1.f}, {0.f, 1.f}});
  const torch::Tensor out = LabelPropagation(*g, y, torch::tensor({true, false, false}), 1, 0.5);
  // One step: 0.5 * D^-1/2 A D^-1/2 seed + 0.5 * seed, seed = [y0, 0, 0]; A(1,0) = 1/sqrt(2).
  EXPECT_TRUE(torch::allclose(out, torch::tensor({{0.5f, 0.f}, {0.5f / std::sqrt(2.f), 0.f}, {0.f, 0.f}}), 1e-6, 1e-6));
}

TEST(TopologyMomentsTest, HybridMomentsAndConfidence) {
  const torch::Tensor x = torch::tensor({{1.f, 0.f}, {0.f, 1.f}});
  const torch::Tensor m = MixedMoments(x, 3).view({6, 2});
  // Raw moments: mean x^p = 0.5 for every p and class. Central: (+-0.5)^p averages to 0 for odd p,
  // 0.25 for p = 2.
  EXPECT_TRUE(torch::allclose(m.slice(0, 0, 3), torch::full({3, 2}, 0.5f)));
  EXPECT_TRUE(torch::allclose(m[3], torch::zeros({2}), 0, 1e-7));
  EXPECT_TRUE(torch::allclose(m[4], torch::full({2}, 0.25f)));
  auto g = graph::CsrFromEdges(2, {0}, {1});
  ASSERT_TRUE(g.ok());
  // Confident rows (entropy ~0): each node has degree 1, counted twice: 2 * 2 * (2 / e).
  EXPECT_NEAR(ConfidenceWeight(*g, x), 4 * 2 / std::exp(1.0), 1e-6);
  EXPECT_LT(ConfidenceWeight(*g, torch::full({2, 2}, 0.5f)), ConfidenceWeight(*g, x));
}

fl::proto::Message Reply(int sender, const fl::NamedTensors& params, const torch::Tensor& moments, double confidence) {
  fl::proto::Message m = fl::ModelReply(params, /*num_nodes=*/10, sender, {}, "fedgta.weights");
  fl::AddTensors({{"fedgta.moments", moments}}, &m);
  (*m.mutable_scalars())["confidence"] = confidence;
  return m;
}

TEST(FedGtaServerTest, SimilarClientsShareConfidenceWeightedModels) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.model_spec = "gcn:layers=2,hidden=4,dropout=0.5";
  config.num_features = 3;
  config.num_classes = 2;
  FedGtaParams two;
  two.set_num_moments(2);  // moments: 2 * 2 * 2 = 8 values
  config.spec.add_method_params()->PackFrom(two);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedgta"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_NE(server->personalised(), nullptr);
  ASSERT_OK_AND_ASSIGN(fl::proto::Message init, server->personalised()->BroadcastTo(0, {1, 1}));
  ASSERT_OK_AND_ASSIGN(auto shapes, fl::DecodeTensors(init));
  auto filled = [&](float v) {
    fl::NamedTensors p;
    for (const auto& [name, t] : shapes) p.emplace_back(name, torch::full_like(t, v));
    return p;
  };
  const torch::Tensor a = torch::tensor({1.f, 0.f, 1.f, 0.f, 1.f, 0.f, 1.f, 0.f}),
                      b = torch::tensor({0.f, 1.f, 0.f, 1.f, 0.f, 1.f, 0.f, 1.f});
  ASSERT_OK(server->Accumulate(Reply(0, filled(1), a, 1.0)));
  ASSERT_OK(server->Accumulate(Reply(1, filled(4), a * 2, 3.0)));  // cosine 1 with client 0
  ASSERT_OK(server->Accumulate(Reply(2, filled(9), b, 5.0)));      // cosine 0: on its own
  EXPECT_FALSE(server->Accumulate(Reply(3, filled(1), torch::ones({5}), 1.0)).ok());  // wrong size
  ASSERT_OK(server->FinishRound({1, 1}));
  auto value = [&](int client) {
    auto m = server->personalised()->BroadcastTo(client, {2, 2});
    return fl::DecodeTensors(*m)->begin()->second.flatten()[0].item<float>();
  };
  EXPECT_FLOAT_EQ(value(0), (1 * 1 + 3 * 4) / 4.0f);
  EXPECT_FLOAT_EQ(value(1), (1 * 1 + 3 * 4) / 4.0f);
  EXPECT_FLOAT_EQ(value(2), 9.0f);
  const auto aggregates = fl::AggregatesOf(*server);
  ASSERT_EQ(aggregates.size(), 3u);
  EXPECT_EQ(aggregates[0].clients, (std::vector<int>{0, 1}));
  EXPECT_EQ(aggregates[2].clients, (std::vector<int>{2}));
  // Checkpoint round trip.
  ASSERT_OK_AND_ASSIGN(fl::proto::Message saved, server->SaveState());
  ASSERT_OK_AND_ASSIGN(auto restored, f.server(config));
  ASSERT_OK(restored->RestoreState(saved));
  auto m = restored->personalised()->BroadcastTo(2, {2, 2});
  EXPECT_FLOAT_EQ(fl::DecodeTensors(*m)->begin()->second.flatten()[0].item<float>(), 9.0f);
  // The personalised models are a typed state; a bad one is refused naming the client and
  // changes nothing.
  ASSERT_OK_AND_ASSIGN(FedGtaServerState typed, fl::UnpackState<FedGtaServerState>(saved, "test"));
  ASSERT_EQ(typed.personalised_size(), 3);
  FedGtaServerState twice = typed;
  *twice.add_personalised() = typed.personalised(0);
  fl::proto::Message bad;
  fl::PackState(twice, &bad);
  EXPECT_THAT(restored->RestoreState(bad),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("listed twice")));
  FedGtaServerState wrong = typed;
  wrong.mutable_personalised(2)->mutable_parameters(0)->set_name("no_such_parameter");
  bad.Clear();
  fl::PackState(wrong, &bad);
  EXPECT_THAT(restored->RestoreState(bad),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("fedgta state: client")));
  EXPECT_THAT(restored->RestoreState(fl::proto::Message()),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("holds none")));
  m = restored->personalised()->BroadcastTo(2, {2, 2});  // unchanged by the refused states
  EXPECT_FLOAT_EQ(fl::DecodeTensors(*m)->begin()->second.flatten()[0].item<float>(), 9.0f);
}

TEST(FedGtaRunTest, LearnsAloneAndWithTheFedTadPlugin) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedgta");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult r, fl::RunFederation(o));
  EXPECT_GT(r.result().test_acc(), 60.0);
  o.spec.set_method("fedgta+fedtad");
  methods::fedtad::FedTadParams tad;
  tad.set_num_pseudo(20);
  o.spec.add_method_params()->PackFrom(tad);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult t, fl::RunFederation(o));
  EXPECT_GT(t.result().test_acc(), 50.0);
}

}  // namespace
}  // namespace fgl::methods::fedgta
