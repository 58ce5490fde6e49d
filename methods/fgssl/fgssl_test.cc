// FGSSL: the structure term reaches the model; the federation learns and repeats.
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "methods/fgssl/fgssl.pb.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fgssl {
namespace {

fl::MethodConfig Config(double edge_weight) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_features = 8;
  config.num_classes = 3;
  config.seed = 4;
  config.spec.set_local_epochs(3);
  config.model_spec = "gcn:layers=2,hidden=16";
  FgsslParams p;
  p.set_edge_weight(edge_weight);
  config.spec.add_method_params()->PackFrom(p);
  return config;
}

TEST(FgsslTest, TheStructureTermChangesTheModel) {
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fgssl, fl::FindMethod("fgssl"));
  ASSERT_OK_AND_ASSIGN(auto server, fgssl.server(Config(0.1)));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  ASSERT_OK_AND_ASSIGN(auto with, fgssl.client(data, Config(0.1)));
  ASSERT_OK_AND_ASSIGN(auto without, fgssl.client(data, Config(0.0)));
  // Round 1: the local model equals the teacher, yet views differ, so the term is not zero.
  ASSERT_OK_AND_ASSIGN(fl::proto::Message a, with->Train(global, {1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message b, without->Train(global, {1, 1}));
  EXPECT_GT(a.scalars().at("train_loss"), b.scalars().at("train_loss"));
  ASSERT_OK_AND_ASSIGN(torch::Tensor pa, with->Predict(nullptr));
  ASSERT_OK_AND_ASSIGN(torch::Tensor pb, without->Predict(nullptr));
  EXPECT_FALSE(torch::allclose(pa, pb));
  // Only the model's own tensors travel.
  EXPECT_EQ(a.tensors_size(), global.tensors_size());
}

TEST(FgsslTest, FederationLearnsAndRepeats) {
  fl::FederationOptions o = fl::testing::SmallFederation("fgssl");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult a, fl::RunFederation(o));
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult b, fl::RunFederation(o));
  EXPECT_GT(a.result().test_acc(), 40.0);  // 4 balanced classes
  EXPECT_EQ(a.result().test_acc(), b.result().test_acc());
}

TEST(FgsslTest, RejectsBadOptions) {
  FgsslParams p;
  p.set_strong_edge_drop(1.0);
  fl::FederationOptions o = fl::testing::SmallFederation("fgssl");
  o.spec.add_method_params()->PackFrom(p);
  absl::Status s = fl::RunFederation(o).status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("strong_edge_drop"), std::string::npos) << s;
}

}  // namespace
}  // namespace fgl::methods::fgssl
