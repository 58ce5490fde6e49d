// FED-PUB: the proxy graph, the server's functional-similarity personalisation, and runs.
#include <cmath>

#include "methods/fedtad/fedtad.pb.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "methods/fedpub/proxy_graph.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedpub {
namespace {

TEST(ProxyGraphTest, SeededBlocksWithoutCrossEdges) {
  ASSERT_OK_AND_ASSIGN(ProxyGraph a, MakeProxyGraph(7, 3));
  ASSERT_OK_AND_ASSIGN(ProxyGraph b, MakeProxyGraph(7, 3));
  EXPECT_EQ(a.graph.num_nodes(), 500);
  EXPECT_EQ(a.features.sizes(), (std::vector<int64_t>{500, 7}));
  EXPECT_TRUE(torch::equal(a.features, b.features));
  EXPECT_TRUE(torch::equal(a.graph.col(), b.graph.col()));
  for (int64_t v = 0; v < 500; ++v) {
    for (int64_t u : a.graph.neighbors(v)) EXPECT_EQ(u / 100, v / 100);
  }
  // About 0.1 * C(100, 2) = 495 edges per block.
  EXPECT_GT(a.graph.num_undirected_edges(), 5 * 400);
  EXPECT_LT(a.graph.num_undirected_edges(), 5 * 600);
  EXPECT_FALSE(MakeProxyGraph(0, 3).ok());
}

fl::proto::Message Reply(int k, const std::map<std::string, torch::Tensor>& shapes, float value,
                         const torch::Tensor& embedding) {
  fl::NamedTensors p;
  for (const auto& [name, t] : shapes) p.emplace_back(name, torch::full_like(t, value));
  fl::proto::Message m = fl::ModelReply(p, /*num_nodes=*/10, k, {}, "fedpub.weights");
  fl::AddTensors({{"fedpub.embedding", embedding}}, &m);
  return m;
}

TEST(FedPubServerTest, PersonalisesBySoftmaxOfFunctionalSimilarity) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.model_spec = "gcn:layers=3,hidden=4,jk=last,masked=true";
  config.num_features = 3;
  config.num_classes = 2;
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedpub"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message init, server->personalised()->BroadcastTo(0, {1, 1}));
  ASSERT_TRUE(init.scalars().count("proxy_seed"));
  ASSERT_OK_AND_ASSIGN(auto shapes, fl::DecodeTensors(init));
  ASSERT_OK(server->Accumulate(Reply(0, shapes, 1, torch::tensor({1.f, 0.f}))));
  ASSERT_OK(server->Accumulate(Reply(1, shapes, 2, torch::tensor({2.f, 0.f}))));  // cos 1 with client 0
  ASSERT_OK(server->Accumulate(Reply(2, shapes, 7, torch::tensor({0.f, 1.f}))));  // cos 0
  ASSERT_OK(server->FinishRound({1, 1}));
  auto value = [&](int k) {
    auto m = server->personalised()->BroadcastTo(k, {2, 2});
    return fl::DecodeTensors(*m)->begin()->second.flatten()[0].item<double>();
  };
  const double e10 = std::exp(10.0);
  EXPECT_NEAR(value(0), (e10 * 1 + e10 * 2 + 1 * 7) / (2 * e10 + 1), 1e-4);
  EXPECT_NEAR(value(2), (1 * 1 + 1 * 2 + e10 * 7) / (e10 + 2), 1e-4);
  EXPECT_EQ(fl::AggregatesOf(*server).size(), 3u);
  EXPECT_FALSE(server->Accumulate(Reply(3, shapes, 1, torch::tensor({NAN, 0.f}))).ok());
}

// Scoring on a received model keeps the client's own masks (the broadcast carries masks too).
TEST(FedPubClientTest, ScoringOnTheReceivedModelKeepsItsMasks) {
  auto data = fl::testing::CsbmClient(60, 3, 2, 10);
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.model_spec = "gcn:layers=3,hidden=4,jk=last,masked=true";
  config.num_features = 3;
  config.num_classes = 2;
  config.spec.set_local_epochs(2);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedpub"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(auto client, f.client(data, config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message init, server->personalised()->BroadcastTo(data->id, {1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, client->Train(init, {1, 1}));
  ASSERT_OK_AND_ASSIGN(auto trained, fl::DecodeTensors(reply));
  ASSERT_OK(client->Predict(&init).status());  // init's masks are all ones
  ASSERT_OK_AND_ASSIGN(fl::proto::Message state, client->SaveState());
  ASSERT_OK_AND_ASSIGN(auto kept, fl::DecodeTensors(state));
  int masks = 0;
  for (const auto& [name, t] : trained) {
    if (name.size() < 4 || name.compare(name.size() - 4, 4, "mask") != 0) continue;
    ++masks;
    ASSERT_TRUE(kept.count(name)) << name;
    EXPECT_TRUE(torch::equal(kept.at(name), t)) << name;
    EXPECT_FALSE(torch::equal(t, torch::ones_like(t))) << name << " did not train";
  }
  EXPECT_EQ(masks, 3);
}

TEST(FedPubRunTest, LearnsAloneAndWithTheFedTadPlugin) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedpub");
  o.spec.set_model("gcn:layers=3,jk=last,masked=true");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult r, fl::RunFederation(o));
  EXPECT_GT(r.result().test_acc(), 60.0);
  o.spec.set_method("fedpub+fedtad");
  methods::fedtad::FedTadParams tad;
  tad.set_num_pseudo(20);
  o.spec.add_method_params()->PackFrom(tad);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult t, fl::RunFederation(o));
  EXPECT_GT(t.result().test_acc(), 40.0);  // 4 balanced classes: chance is 25%
  o.spec.set_model("gcn");
  o.spec.set_method("fedpub");
  EXPECT_FALSE(fl::RunFederation(o).ok());  // needs the masked model
}

}  // namespace
}  // namespace fgl::methods::fedpub
