// LG-FedAvg: only the linear head travels; models without one are refused.
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::lg_fedavg {
namespace {

fl::MethodConfig Config(const std::string& model) {
  fl::MethodConfig config;
  config.num_features = 8;
  config.num_classes = 3;
  config.seed = 4;
  config.model_spec = model;
  config.shared_group = "head";
  return config;
}

TEST(LgFedAvgTest, OnlyTheLinearHeadTravels) {
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories lg, fl::FindMethod("lg_fedavg"));
  for (const char* model : {"gcn:layers=2,hidden=64,jk=last", "gat:layers=2,heads=1,hidden=64,jk=last",
                            "sage:layers=2,hidden=64,jk=last", "sgc:k=2,hidden=64"}) {
    ASSERT_OK_AND_ASSIGN(auto server, lg.server(Config(model)));
    ASSERT_OK_AND_ASSIGN(auto client, lg.client(data, Config(model)));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, client->Train(global, {1, 1}));
    ASSERT_EQ(reply.tensors_size(), 2) << model;
    EXPECT_EQ(reply.tensors(0).name(), "head.weight") << model;
    EXPECT_EQ(reply.tensors(1).name(), "head.bias") << model;
  }
  // A model whose last layer is a convolution has no classifier to share.
  EXPECT_THAT(lg.client(data, Config("gcn:layers=2,hidden=64")).status(),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("no linear head")));
  fl::MethodConfig whole = Config("gcn:layers=2,hidden=64,jk=last");
  whole.shared_group = "";
  EXPECT_THAT(lg.server(whole).status(),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("shared_group")));
}

// Scored with the server's head when one is given (the averaged head, eval.model "personalized"),
// with its own trained head otherwise; scoring leaves the model as trained.
TEST(LgFedAvgTest, PersonalisedScoringUsesTheServersHead) {
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories lg, fl::FindMethod("lg_fedavg"));
  const fl::MethodConfig config = Config("gcn:layers=2,hidden=64,jk=last");
  ASSERT_OK_AND_ASSIGN(auto server, lg.server(config));
  ASSERT_OK_AND_ASSIGN(auto client, lg.client(data, config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, client->Train(global, {1, 1}));
  ASSERT_OK_AND_ASSIGN(torch::Tensor own, client->Predict(nullptr));
  // The pre-training broadcast's head differs from the trained one, so its scores differ.
  ASSERT_OK_AND_ASSIGN(torch::Tensor with_global, client->Predict(&global));
  EXPECT_FALSE(torch::allclose(own, with_global));
  // The reply's own head reproduces the client's own scores exactly.
  ASSERT_OK_AND_ASSIGN(torch::Tensor with_own_head, client->Predict(&reply));
  EXPECT_TRUE(torch::equal(own, with_own_head));
  ASSERT_OK_AND_ASSIGN(torch::Tensor again, client->Predict(nullptr));
  EXPECT_TRUE(torch::equal(own, again));
}

TEST(LgFedAvgTest, HeterogeneousBodiesShareOneHead) {
  fl::FederationOptions o = fl::testing::SmallFederation("lg_fedavg");
  o.spec.set_model("gcn:layers=2,hidden=64,jk=last;sage:layers=2,hidden=64,jk=last;sgc:k=2,hidden=64");
  o.spec.set_shared_group("head");
  o.spec.mutable_eval()->set_model("local");
  ASSERT_OK_AND_ASSIGN(fl::FederationResult r, fl::RunFederation(o));
  EXPECT_GT(r.test_acc, 40.0);
}

}  // namespace
}  // namespace fgl::methods::lg_fedavg
