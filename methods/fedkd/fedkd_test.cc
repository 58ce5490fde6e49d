// FedKD: only the mentee travels; the adaptive distillation couples mentor and mentee.
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "methods/fedkd/fedkd.pb.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedkd {
namespace {

fl::MethodConfig Config(const std::string& mentor) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_features = 8;
  config.num_classes = 3;
  config.seed = 4;
  config.spec.set_local_epochs(3);
  config.model_spec = mentor;
  return config;
}

TEST(FedKdTest, OnlyTheMenteeTravelsAndTheWidthsMustMatch) {
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fedkd, fl::FindMethod("fedkd"));
  const fl::MethodConfig config = Config("sage:layers=2,hidden=64");
  ASSERT_OK_AND_ASSIGN(auto server, fedkd.server(config));
  ASSERT_OK_AND_ASSIGN(auto client, fedkd.client(data, config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, client->Train(global, {1, 1}));
  ASSERT_EQ(reply.tensors_size(), 4);  // the GCN mentee: two weights, two biases
  for (int i = 0; i < reply.tensors_size(); ++i) EXPECT_EQ(reply.tensors(i).name(), global.tensors(i).name());
  ASSERT_OK(server->Accumulate(reply));
  ASSERT_OK(server->FinishRound({1, 1}));
  // A mentor whose embedding is not 64 wide cannot be distilled into the mentee's.
  EXPECT_THAT(fedkd.client(data, Config("sage:layers=2,hidden=32")).status(),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("one width")));
}

TEST(FedKdTest, AdaptiveScalingChangesTheMentor) {
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fedkd, fl::FindMethod("fedkd"));
  fl::MethodConfig adaptive = Config("gat:layers=2,heads=1,hidden=64");
  fl::MethodConfig plain = adaptive;
  FedKdParams p;
  p.set_adaptive(false);
  plain.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(auto server, fedkd.server(adaptive));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  ASSERT_OK_AND_ASSIGN(auto a, fedkd.client(data, adaptive));
  ASSERT_OK_AND_ASSIGN(auto b, fedkd.client(data, plain));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message ra, a->Train(global, {1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message rb, b->Train(global, {1, 1}));
  EXPECT_NE(ra.scalars().at("train_loss"), rb.scalars().at("train_loss"));
}

// The authors' options (fedkd.proto 7-8): their loss trains the models differently from ours, the
// reply carries the uniform weight, and their loss without `adaptive` is refused.
TEST(FedKdTest, AuthorsLossAndWeighting) {
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fedkd, fl::FindMethod("fedkd"));
  const fl::MethodConfig ours = Config("gat:layers=2,heads=1,hidden=64");
  fl::MethodConfig authors = ours;
  FedKdParams p;
  p.set_loss(FedKdParams::AUTHORS_CODE);
  p.set_weighting(fl::proto::UNIFORM);
  authors.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(auto server, fedkd.server(authors));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  ASSERT_OK_AND_ASSIGN(auto a, fedkd.client(data, ours));
  ASSERT_OK_AND_ASSIGN(auto b, fedkd.client(data, authors));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message ra, a->Train(global, {1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message rb, b->Train(global, {1, 1}));
  EXPECT_NE(ra.scalars().at("train_loss"), rb.scalars().at("train_loss"));
  EXPECT_EQ(ra.scalars().count("uniform_weight"), 0);
  EXPECT_EQ(rb.scalars().at("uniform_weight"), 1);
  ASSERT_OK(server->Accumulate(rb));
  ASSERT_OK(server->FinishRound({1, 1}));

  fl::FederationOptions o = fl::testing::SmallFederation("fedkd");
  p.set_adaptive(false);
  o.spec.add_method_params()->PackFrom(p);
  EXPECT_EQ(fl::RunFederation(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FedKdTest, HeterogeneousFederationRunsAndRepeats) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedkd");
  o.spec.set_model("gcn:layers=2,hidden=64;sage:layers=2,hidden=64;gat:layers=2,heads=1,hidden=64");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult a, fl::RunFederation(o));
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult b, fl::RunFederation(o));
  EXPECT_GT(a.result().test_acc(), 40.0);
  EXPECT_EQ(a.result().test_acc(), b.result().test_acc());
}

// [S]'s SVD compression: less travels up and down, the run still learns and repeats, a resumed
// run continues exactly, and bad thresholds are refused.
TEST(FedKdTest, SvdCompressedUpdatesShrinkTheTraffic) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedkd");
  o.spec.set_model("gcn:layers=2,hidden=64;sage:layers=2,hidden=64");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult whole, fl::RunFederation(o));
  FedKdParams p;
  p.set_svd_compression(true);
  o.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult a, fl::RunFederation(o));
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult b, fl::RunFederation(o));
  EXPECT_EQ(a.result().test_acc(), b.result().test_acc());
  EXPECT_EQ(a.result().bytes_up(), b.result().bytes_up());
  EXPECT_LT(a.result().bytes_up(), whole.result().bytes_up());
  EXPECT_LT(a.result().bytes_down(), whole.result().bytes_down());
  EXPECT_GT(a.result().test_acc(), 40.0);
  // Round 1 travels whole both ways; later rounds as factors.
  EXPECT_LT(a.rounds(2).bytes_up(), whole.rounds(2).bytes_up());
  p.set_svd_energy_start(0.99);
  p.set_svd_energy_end(0.9);
  o.spec.clear_method_params();
  o.spec.add_method_params()->PackFrom(p);
  EXPECT_THAT(fl::RunFederation(o).status(),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("svd_energy_start")));
}

}  // namespace
}  // namespace fgl::methods::fedkd
