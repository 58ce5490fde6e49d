// LG-FedAvg: only the linear head travels; models without one are refused.
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "methods/lg_fedavg/lg_fedavg.pb.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::lg_fedavg {
namespace {

fl::MethodConfig Config(const std::string& model) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_features = 8;
  config.num_classes = 3;
  config.seed = 4;
  config.model_spec = model;
  config.spec.set_shared_group("head");
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
  whole.spec.set_shared_group("");
  EXPECT_THAT(lg.server(whole).status(),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("shared_group")));
}

// Scored with the server's head when one is given (the averaged head, eval.model PERSONALIZED),
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

// The authors' options (lg_fedavg.proto): the reply carries the plain mean's weight, and each
// round's training starts without the last round's momentum, as a client that never had any.
TEST(LgFedAvgTest, AuthorsOptions) {
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories lg, fl::FindMethod("lg_fedavg"));
  auto config = [](bool fresh) {
    fl::MethodConfig c = Config("gcn:layers=2,hidden=64,jk=last");
    c.spec.set_optimizer(fl::proto::FederationSpec::SGD);
    c.spec.set_momentum(0.5);
    LgFedAvgParams p;
    p.set_weighting(fl::proto::UNIFORM);
    p.set_fresh_optimizer(fresh);
    c.spec.add_method_params()->PackFrom(p);
    return c;
  };
  ASSERT_OK_AND_ASSIGN(auto server, lg.server(config(true)));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  for (bool fresh : {true, false}) {
    ASSERT_OK_AND_ASSIGN(auto trained, lg.client(data, config(fresh)));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, trained->Train(global, {1, 1}));
    EXPECT_EQ(reply.scalars().at("uniform_weight"), 1.0);
    // A second client holding the first one's parameters but no momentum.
    ASSERT_OK_AND_ASSIGN(fl::proto::Message state, trained->SaveState());
    fl::proto::Message parameters;
    for (const auto& t : state.tensors()) {
      if (t.name().rfind("sgd.", 0) != 0) *parameters.add_tensors() = t;
    }
    ASSERT_OK_AND_ASSIGN(auto restarted, lg.client(data, config(fresh)));
    ASSERT_OK(restarted->RestoreState(parameters));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message a, trained->Train(global, {2, 2}));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message b, restarted->Train(global, {2, 2}));
    ASSERT_OK_AND_ASSIGN(auto ta, fl::DecodeTensors(a));
    ASSERT_OK_AND_ASSIGN(auto tb, fl::DecodeTensors(b));
    EXPECT_EQ(torch::equal(ta.at("head.weight"), tb.at("head.weight")), fresh) << "fresh_optimizer " << fresh;
  }
}

TEST(LgFedAvgTest, HeterogeneousBodiesShareOneHead) {
  fl::FederationOptions o = fl::testing::SmallFederation("lg_fedavg");
  o.spec.set_model("gcn:layers=2,hidden=64,jk=last;sage:layers=2,hidden=64,jk=last;sgc:k=2,hidden=64");
  o.spec.set_shared_group("head");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult r, fl::RunFederation(o));
  EXPECT_GT(r.result().test_acc(), 40.0);
}

}  // namespace
}  // namespace fgl::methods::lg_fedavg
