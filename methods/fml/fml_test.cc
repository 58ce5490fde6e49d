// FML: only the meme model travels, whatever the private architecture; the mutual terms couple
// the two models.
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "methods/fml/fml.pb.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fml {
namespace {

fl::MethodConfig Config(double alpha) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_features = 8;
  config.num_classes = 3;
  config.seed = 4;
  config.spec.set_local_epochs(3);
  config.model_spec = "gat:layers=2,heads=2,hidden=32";  // private; the meme is a GCN
  FmlParams p;
  p.set_private_ce_weight(alpha);
  p.set_meme_ce_weight(alpha);
  config.spec.add_method_params()->PackFrom(p);
  return config;
}

TEST(FmlTest, OnlyTheMemeModelTravels) {
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fml, fl::FindMethod("fml"));
  const fl::MethodConfig config = Config(0.5);
  ASSERT_OK_AND_ASSIGN(auto server, fml.server(config));
  ASSERT_OK_AND_ASSIGN(auto client, fml.client(data, config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, client->Train(global, {1, 1}));
  // A 2-layer GCN (64 hidden): two weights and two biases, no attention parameter.
  ASSERT_EQ(reply.tensors_size(), global.tensors_size());
  ASSERT_EQ(reply.tensors_size(), 4);
  for (int i = 0; i < reply.tensors_size(); ++i) {
    EXPECT_EQ(reply.tensors(i).name(), global.tensors(i).name());
    EXPECT_EQ(reply.tensors(i).name().find("att"), std::string::npos);
  }
  EXPECT_EQ(reply.tensors(0).shape(1), 64);
  ASSERT_OK(server->Accumulate(reply));
  ASSERT_OK(server->FinishRound({1, 1}));
}

TEST(FmlTest, TheMutualTermsChangeThePrivateModel) {
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fml, fl::FindMethod("fml"));
  ASSERT_OK_AND_ASSIGN(auto server, fml.server(Config(0.5)));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  ASSERT_OK_AND_ASSIGN(auto mutual, fml.client(data, Config(0.5)));
  ASSERT_OK_AND_ASSIGN(auto alone, fml.client(data, Config(1.0)));  // CE only: no coupling
  ASSERT_OK_AND_ASSIGN(fl::proto::Message a, mutual->Train(global, {1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message b, alone->Train(global, {1, 1}));
  EXPECT_NE(a.scalars().at("train_loss"), b.scalars().at("train_loss"));
  ASSERT_OK_AND_ASSIGN(torch::Tensor pa, mutual->Predict(nullptr));
  ASSERT_OK_AND_ASSIGN(torch::Tensor pb, alone->Predict(nullptr));
  EXPECT_FALSE(torch::allclose(pa, pb));
}

TEST(FmlTest, HeterogeneousFederationRunsAndRepeats) {
  fl::FederationOptions o = fl::testing::SmallFederation("fml");
  o.spec.set_model("gcn:layers=2,hidden=64;sage:layers=2,hidden=64;gat:layers=2,heads=1,hidden=64");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult a, fl::RunFederation(o));
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult b, fl::RunFederation(o));
  EXPECT_GT(a.result().test_acc(), 40.0);  // 4 balanced classes
  EXPECT_EQ(a.result().test_acc(), b.result().test_acc());
  EXPECT_EQ(a.result().bytes_up(), b.result().bytes_up());
}

// The authors' options (fml.proto 4-8): each changes the run; the reply carries the uniform weight;
// a client restored from a checkpoint continues bit for bit, its learning rate rebuilt from the
// round (the schedule is not part of the state).
fl::MethodConfig AuthorsConfig(bool fresh, int decay_every) {
  fl::MethodConfig config = Config(0.5);
  config.spec.set_optimizer(fl::proto::FederationSpec::SGD);
  config.spec.set_momentum(0.9);
  FmlParams p;
  p.set_weighting(fl::proto::UNIFORM);
  p.set_fresh_meme_optimizer(fresh);
  p.set_lr_decay_every(decay_every);
  config.spec.clear_method_params();
  config.spec.add_method_params()->PackFrom(p);
  return config;
}

TEST(FmlTest, AuthorsOptionsChangeTheRunAndResume) {
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fml, fl::FindMethod("fml"));
  const fl::MethodConfig config = AuthorsConfig(true, 1);
  ASSERT_OK_AND_ASSIGN(auto server, fml.server(config));
  ASSERT_OK_AND_ASSIGN(auto client, fml.client(data, config));
  ASSERT_OK_AND_ASSIGN(auto persistent, fml.client(data, AuthorsConfig(false, 1)));
  ASSERT_OK_AND_ASSIGN(auto constant, fml.client(data, AuthorsConfig(true, 0)));
  for (int r = 1; r <= 2; ++r) {
    ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({r, 7u + r}));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, client->Train(global, {r, 7u + r}));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message p, persistent->Train(global, {r, 7u + r}));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message c, constant->Train(global, {r, 7u + r}));
    EXPECT_EQ(reply.scalars().at("uniform_weight"), 1);
    // Round 1: the meme's optimiser is new either way and the rate not yet decayed.
    EXPECT_EQ(reply.scalars().at("train_loss") == p.scalars().at("train_loss"), r == 1);
    EXPECT_EQ(reply.scalars().at("train_loss") == c.scalars().at("train_loss"), r == 1);
    ASSERT_OK(server->Accumulate(reply));
    ASSERT_OK(server->FinishRound({r, 7u + r}));
  }
  ASSERT_OK_AND_ASSIGN(fl::proto::Message state, client->SaveState());
  ASSERT_OK_AND_ASSIGN(auto resumed, fml.client(data, config));
  ASSERT_OK(resumed->RestoreState(state));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({3, 10}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message a, client->Train(global, {3, 10}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message b, resumed->Train(global, {3, 10}));
  ASSERT_EQ(a.tensors_size(), b.tensors_size());
  for (int i = 0; i < a.tensors_size(); ++i) EXPECT_EQ(a.tensors(i).SerializeAsString(), b.tensors(i).SerializeAsString());
  EXPECT_EQ(a.scalars().at("train_loss"), b.scalars().at("train_loss"));
  EXPECT_EQ(b.scalars().at("uniform_weight"), 1);
}

TEST(FmlTest, BadDecayRefused) {
  fl::FederationOptions o = fl::testing::SmallFederation("fml");
  FmlParams p;
  p.set_lr_decay_every(-1);
  o.spec.add_method_params()->PackFrom(p);
  EXPECT_EQ(fl::RunFederation(o).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fgl::methods::fml
