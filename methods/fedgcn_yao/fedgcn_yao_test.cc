// FedGCN (FedEgo's baseline): the per-id feature averaging on hand-made uploads, delivery until
// the first reply, refused uploads, the server state, and a federation that learns.
#include <cmath>
#include <map>
#include <string>

#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/typed_state.h"
#include "fl/testing/client_data.h"
#include "graph/csr_graph.h"
#include "methods/fedgcn_yao/code_as_run.h"
#include "methods/fedgcn_yao/fedgcn_yao.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedgcn_yao {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

fl::MethodConfig Config() {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.model_spec = "gcn:layers=2,hidden=4,norm=row,out_act=relu";
  config.num_features = 2;
  config.num_classes = 2;
  config.spec.set_clients(3);
  return config;
}

fl::proto::Message Upload(int client, std::vector<int64_t> ids, std::vector<float> means) {
  fl::proto::Message m;
  m.mutable_header()->set_sender(client);
  m.mutable_header()->set_type("fedgcn_yao.neighbour_means");
  const int64_t n = static_cast<int64_t>(ids.size());
  fl::AddTensors({{"means", torch::tensor(means).view({n, 2})}, {"ids", torch::tensor(ids, torch::kInt64)}}, &m);
  return m;
}

torch::Tensor Features(const fl::proto::Message& m) {
  auto t = fl::DecodeTensors(m);
  auto it = t->find("averaged/features");
  return it == t->end() ? torch::Tensor() : it->second;
}

TEST(FedGcnYaoServerTest, AveragesEachNodeOverTheClientsHoldingIt) {
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedgcn_yao"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(Config()));
  // Node 7 is held by clients 0 and 1, node 3 by all three.
  ASSERT_OK(server->prepared()->AcceptPreparation(Upload(0, {7, 3}, {1, 1, 3, 3})));
  ASSERT_OK(server->prepared()->AcceptPreparation(Upload(1, {3, 7, 9}, {6, 6, 3, 5, 2, 2})));
  EXPECT_FALSE(server->prepared()->AcceptPreparation(Upload(1, {4}, {0, 0})).ok());           // repeated sender
  EXPECT_FALSE(server->prepared()->AcceptPreparation(Upload(2, {4, 4}, {0, 0, 1, 1})).ok());  // repeated id
  EXPECT_FALSE(server->prepared()->AcceptPreparation(Upload(2, {4}, {std::nanf(""), 0})).ok());
  EXPECT_FALSE(server->prepared()->AcceptPreparation(Upload(5, {4}, {0, 0})).ok());           // unknown client
  ASSERT_OK(server->prepared()->AcceptPreparation(Upload(2, {3}, {0, 0})));
  ASSERT_OK(server->prepared()->FinishPreparation());
  const fl::RoundInfo r1{1, 1};
  ASSERT_OK_AND_ASSIGN(fl::proto::Message to0, server->personalised()->BroadcastTo(0, r1));
  EXPECT_TRUE(torch::allclose(Features(to0), torch::tensor({2.0f, 3.0f, 3.0f, 3.0f}).view({2, 2})));  // 7, 3
  ASSERT_OK_AND_ASSIGN(fl::proto::Message to1, server->personalised()->BroadcastTo(1, r1));
  EXPECT_TRUE(torch::allclose(Features(to1), torch::tensor({3.0f, 3.0f, 2.0f, 3.0f, 2.0f, 2.0f}).view({3, 2})));
  // Once a client has replied, its broadcast carries the weights only; the others' features
  // survive a checkpoint.
  ASSERT_OK_AND_ASSIGN(auto model, fl::ModelAverageServer::Create(Config(), "shapes"));
  fl::proto::Message reply = fl::ModelReply(model->GlobalParameters(), 2, 0, r1, "fedgcn_yao.weights");
  fl::AddWeight(fl::proto::UNIFORM, &reply);
  ASSERT_OK(server->Accumulate(reply));
  ASSERT_OK(server->FinishRound(r1));
  EXPECT_FALSE(Features(*server->personalised()->BroadcastTo(0, {2, 2})).defined());
  ASSERT_OK_AND_ASSIGN(fl::proto::Message saved, server->SaveState());
  ASSERT_OK_AND_ASSIGN(auto restored, f.server(Config()));
  ASSERT_OK(restored->RestoreState(saved));
  EXPECT_FALSE(Features(*restored->personalised()->BroadcastTo(0, {2, 2})).defined());
  EXPECT_TRUE(torch::allclose(Features(*restored->personalised()->BroadcastTo(2, {2, 2})), torch::tensor({3.0f, 3.0f}).view({1, 2})));
  // The pending features are a typed state, checked before anything changes.
  ASSERT_OK_AND_ASSIGN(FedGcnYaoServerState typed,
                       fl::UnpackState<FedGcnYaoServerState>(saved, "test"));
  ASSERT_EQ(typed.pending_size(), 2);  // clients 1 and 2; client 0 replied, so has its features
  EXPECT_EQ(typed.pending(0).client(), 1);
  EXPECT_EQ(typed.pending(1).client(), 2);
  fl::proto::Message bad = saved;
  fl::EraseState<FedGcnYaoServerState>(&bad);
  EXPECT_THAT(restored->RestoreState(bad), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds none")));
  FedGcnYaoServerState twice = typed;
  *twice.add_pending() = typed.pending(0);
  bad = saved;
  fl::EraseState<FedGcnYaoServerState>(&bad);
  fl::PackState(twice, &bad);
  EXPECT_THAT(restored->RestoreState(bad), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("listed twice")));
  FedGcnYaoServerState narrow = typed;
  *narrow.mutable_pending(0)->mutable_features() = fl::EncodeTensor("features", torch::zeros({2, 3}));
  bad = saved;
  fl::EraseState<FedGcnYaoServerState>(&bad);
  fl::PackState(narrow, &bad);
  EXPECT_THAT(restored->RestoreState(bad), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("client 1: not a finite float32")));
}

TEST(FedGcnYaoRunTest, LearnsOnAveragedFeatures) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedgcn_yao");
  o.spec.set_model("gcn:layers=2,hidden=16,norm=row,out_act=relu");
  o.spec.set_rounds(20);
  o.spec.set_local_epochs(5);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult r, fl::RunFederation(o));
  EXPECT_GT(r.result().preparation_bytes_up(), 0);
  EXPECT_GT(r.result().test_acc(), 40.0);  // 4 classes: chance is 25
}

// Node 0 is isolated, node 1's neighbours are 3 and 2: the code's loop keeps only 1 - 2.
TEST(CodeAsRunTest, AdjacencyKeepsTheFirstNodesFirstNeighbour) {
  ASSERT_OK_AND_ASSIGN(graph::CsrGraph g, graph::CsrFromEdges(5, {1, 1, 3, 2}, {3, 2, 4, 4}));
  const graph::CsrGraph one = CodeAdjacency(g);
  EXPECT_TRUE(torch::equal(one.row_ptr(), torch::tensor({0, 0, 1, 2, 2, 2}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(one.col(), torch::tensor({2, 1}, torch::kInt64)));
  EXPECT_EQ(CodeAdjacency(graph::CsrGraph::Empty(3)).num_entries(), 0);
}

TEST(CodeAsRunTest, LossIsTheCodesDoubleSoftmaxOverAllNodes) {
  const torch::Tensor out = torch::tensor({0.0f, 2.0f, 1.0f, 0.0f, 3.0f, 3.0f}).view({3, 2});
  const torch::Tensor labels = torch::tensor({1, 0, 0}, torch::kInt64);
  const torch::Tensor nodes = torch::tensor({0, 1}, torch::kInt64);
  // By hand: softmax of each row, softmax again, -log of the label's entry (+1e-7), / 3 nodes.
  auto p = [](double a, double b) { return 1.0 / (1.0 + std::exp(b - a)); };  // softmax's first entry
  const double q0 = p(p(2, 0), p(0, 2));  // row 0, label 1: after one softmax (0.119, 0.881)
  const double q1 = p(p(1, 0), p(0, 1));  // row 1, label 0
  const double want = -(std::log(q0 + 1e-7) + std::log(q1 + 1e-7)) / 3;
  EXPECT_NEAR(CodeLoss(out, labels, nodes, 3).item<double>(), want, 1e-6);
}

// Without loading the average a client's training ignores the broadcast weights; with the
// code's adjacency and loss a federation still learns (the features alone carry the csbm's class).
TEST(FedGcnYaoRunTest, CodeAsRunIgnoresTheAverageAndLearnsWithoutEdges) {
  FedGcnYaoParams code;
  code.set_code_adjacency(true);
  code.set_load_average(false);
  code.set_code_loss(true);
  fl::FederationOptions o = fl::testing::SmallFederation("fedgcn_yao");
  o.spec.set_model("gcn:layers=2,hidden=16,norm=row,out_act=relu");
  o.spec.set_rounds(20);
  o.spec.set_local_epochs(5);
  o.spec.add_method_params()->PackFrom(code);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult r, fl::RunFederation(o));
  EXPECT_GT(r.result().test_acc(), 30.0);
  o.spec.clear_method_params();
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult plain, fl::RunFederation(o));
  EXPECT_NE(r.result().test_acc(), plain.result().test_acc());

  auto data = fl::testing::CsbmClient(60, 2, 2, 10);
  for (int64_t i = 0; i < 60; ++i) data->node_ids.push_back(i);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedgcn_yao"));
  fl::MethodConfig config = Config();
  config.spec.add_method_params()->PackFrom(code);
  // The same client trained from two broadcasts whose weights differ (all 0, all 5): same reply.
  auto reply_to = [&](float weight) -> std::map<std::string, torch::Tensor> {
    auto client = f.client(data, config);
    auto server = f.server(config);
    EXPECT_TRUE(client.ok() && server.ok());
    EXPECT_NE((*client)->preparing(), nullptr);
    auto prep = (*client)->preparing()->Prepare();
    EXPECT_TRUE(prep.ok());
    EXPECT_OK((*server)->prepared()->AcceptPreparation(*prep));
    EXPECT_OK((*server)->prepared()->FinishPreparation());
    auto broadcast = (*server)->personalised()->BroadcastTo(data->id, {1, 1});
    EXPECT_TRUE(broadcast.ok()) << broadcast.status();
    const fl::proto::Message global = *broadcast;
    auto decoded = fl::DecodeTensors(global);
    EXPECT_TRUE(decoded.ok()) << decoded.status();
    fl::NamedTensors named;
    for (auto& [name, t] : *decoded) {
      named.emplace_back(name, name.rfind("averaged/", 0) == 0 ? t : torch::full_like(t, weight));
    }
    fl::proto::Message filled;
    *filled.mutable_header() = global.header();
    fl::AddTensors(named, &filled);
    auto reply = (*client)->Train(filled, {1, 1});
    EXPECT_TRUE(reply.ok()) << reply.status();
    return *fl::DecodeTensors(*reply);
  };
  const auto from_zero = reply_to(0.0f), from_five = reply_to(5.0f);
  ASSERT_FALSE(from_zero.empty());
  for (const auto& [name, t] : from_zero) EXPECT_TRUE(torch::equal(t, from_five.at(name))) << name;
}

}  // namespace
}  // namespace fgl::methods::fedgcn_yao
