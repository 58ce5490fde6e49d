// FedGCN (FedEgo's baseline): the per-id feature averaging on hand-made uploads, delivery until
// the first reply, refused uploads, the server state, and a federation that learns.
#include <cmath>

#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedgcn_yao {
namespace {

fl::MethodConfig Config() {
  fl::MethodConfig config;
  config.model_spec = "gcn:layers=2,hidden=4,norm=row,out_act=relu";
  config.num_features = 2;
  config.num_classes = 2;
  config.num_clients = 3;
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
  ASSERT_OK(server->AcceptPreparation(Upload(0, {7, 3}, {1, 1, 3, 3})));
  ASSERT_OK(server->AcceptPreparation(Upload(1, {3, 7, 9}, {6, 6, 3, 5, 2, 2})));
  EXPECT_FALSE(server->AcceptPreparation(Upload(1, {4}, {0, 0})).ok());           // repeated sender
  EXPECT_FALSE(server->AcceptPreparation(Upload(2, {4, 4}, {0, 0, 1, 1})).ok());  // repeated id
  EXPECT_FALSE(server->AcceptPreparation(Upload(2, {4}, {std::nanf(""), 0})).ok());
  EXPECT_FALSE(server->AcceptPreparation(Upload(5, {4}, {0, 0})).ok());           // unknown client
  ASSERT_OK(server->AcceptPreparation(Upload(2, {3}, {0, 0})));
  ASSERT_OK(server->FinishPreparation());
  const fl::RoundInfo r1{1, 1};
  ASSERT_OK_AND_ASSIGN(fl::proto::Message to0, server->BroadcastTo(0, r1));
  EXPECT_TRUE(torch::allclose(Features(to0), torch::tensor({2.0f, 3.0f, 3.0f, 3.0f}).view({2, 2})));  // 7, 3
  ASSERT_OK_AND_ASSIGN(fl::proto::Message to1, server->BroadcastTo(1, r1));
  EXPECT_TRUE(torch::allclose(Features(to1), torch::tensor({3.0f, 3.0f, 2.0f, 3.0f, 2.0f, 2.0f}).view({3, 2})));
  // Once a client has replied, its broadcast carries the weights only; the others' features
  // survive a checkpoint.
  ASSERT_OK_AND_ASSIGN(auto model, fl::ModelAverageServer::Create(Config(), "shapes"));
  fl::proto::Message reply = fl::ModelReply(model->GlobalParameters(), 2, 0, r1, "fedgcn_yao.weights");
  fl::AddWeight(fl::proto::UNIFORM, &reply);
  ASSERT_OK(server->Accumulate(reply));
  ASSERT_OK(server->FinishRound(r1));
  EXPECT_FALSE(Features(*server->BroadcastTo(0, {2, 2})).defined());
  ASSERT_OK_AND_ASSIGN(fl::proto::Message saved, server->SaveState());
  ASSERT_OK_AND_ASSIGN(auto restored, f.server(Config()));
  ASSERT_OK(restored->RestoreState(saved));
  EXPECT_FALSE(Features(*restored->BroadcastTo(0, {2, 2})).defined());
  EXPECT_TRUE(torch::allclose(Features(*restored->BroadcastTo(2, {2, 2})), torch::tensor({3.0f, 3.0f}).view({1, 2})));
}

TEST(FedGcnYaoRunTest, LearnsOnAveragedFeatures) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedgcn_yao");
  o.spec.set_model("gcn:layers=2,hidden=16,norm=row,out_act=relu");
  o.spec.set_rounds(20);
  o.spec.set_local_epochs(5);
  ASSERT_OK_AND_ASSIGN(fl::FederationResult r, fl::RunFederation(o));
  EXPECT_GT(r.preparation_bytes_up, 0);
  EXPECT_GT(r.test_acc, 40.0);  // 4 classes: chance is 25
}

}  // namespace
}  // namespace fgl::methods::fedgcn_yao
