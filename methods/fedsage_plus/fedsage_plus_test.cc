// The FedSage family: fedsage is FedAvg with a GraphSAGE model; fedsage_plus exchanges NeighGen
// during the generator rounds only, mends once, and survives a checkpoint in either phase;
// locsage sends nothing; all three learn in a small federation.
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedsage_plus {
namespace {

fl::MethodConfig SmallConfig() {
  fl::MethodConfig config;
  config.model_spec = "sage:layers=2,hidden=16,dropout=0.5";
  config.num_features = 8;
  config.num_classes = 3;
  config.local_epochs = 2;
  config.seed = 5;
  config.params = {{"gen_rounds", 2}, {"latent", 8}, {"gen_hidden", 8}};
  return config;
}

int CountPrefix(const fl::proto::Message& m, const std::string& prefix) {
  int n = 0;
  for (const auto& t : m.tensors()) n += t.name().rfind(prefix, 0) == 0;
  return n;
}

TEST(FedSageTest, IsFedAvgWithTheSameModel) {
  const fl::MethodConfig config = SmallConfig();
  auto data = fl::testing::CsbmClient(120, 8, 3, 11);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories sage, fl::FindMethod("fedsage"));
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories avg, fl::FindMethod("fedavg"));
  ASSERT_OK_AND_ASSIGN(auto server, sage.server(config));
  ASSERT_OK_AND_ASSIGN(auto s, sage.client(data, config));
  ASSERT_OK_AND_ASSIGN(auto a, avg.client(data, config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 9}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message rs, s->Train(global, {1, 9}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message ra, a->Train(global, {1, 9}));
  EXPECT_EQ(rs.header().type(), "fedsage.weights");
  EXPECT_DOUBLE_EQ(rs.scalars().at("train_loss"), ra.scalars().at("train_loss"));
  ASSERT_OK_AND_ASSIGN(auto ts, fl::DecodeTensors(rs));
  ASSERT_OK_AND_ASSIGN(auto ta, fl::DecodeTensors(ra));
  ASSERT_EQ(ts.size(), ta.size());
  for (const auto& [name, t] : ta) EXPECT_TRUE(torch::equal(ts.at(name), t)) << name;
  ASSERT_OK(server->Accumulate(rs));
  ASSERT_OK(server->FinishRound({1, 9}));
}

TEST(FedSagePlusTest, NeighGenTravelsOnlyInGeneratorRoundsAndCheckpointsRoundTrip) {
  const fl::MethodConfig config = SmallConfig();
  auto data = fl::testing::CsbmClient(120, 8, 3, 11);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedsage_plus"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(auto c, f.client(data, config));
  for (int r = 1; r <= 4; ++r) {
    const fl::RoundInfo round{r, 100u + r};
    ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast(round));
    const bool gen_round = r <= 2;
    EXPECT_EQ(CountPrefix(global, "neighgen.") > 0, gen_round) << "round " << r;
    // A restored client continues exactly as the original (generator phase, then mended).
    ASSERT_OK_AND_ASSIGN(fl::proto::Message saved, c->SaveState());
    ASSERT_OK_AND_ASSIGN(auto restored, f.client(data, config));
    ASSERT_OK(restored->RestoreState(saved));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, c->Train(global, round));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message again, restored->Train(global, round));
    EXPECT_EQ(CountPrefix(reply, "neighgen.") > 0, gen_round) << "round " << r;
    EXPECT_DOUBLE_EQ(reply.scalars().at("train_loss"), again.scalars().at("train_loss")) << "round " << r;
    ASSERT_OK_AND_ASSIGN(torch::Tensor p1, c->Predict(&global));
    ASSERT_OK_AND_ASSIGN(torch::Tensor p2, restored->Predict(&global));
    EXPECT_EQ(p1.size(0), 120);
    EXPECT_TRUE(torch::equal(p1, p2)) << "round " << r;
    ASSERT_OK(server->Accumulate(reply));
    ASSERT_OK(server->FinishRound(round));
    // The server's checkpoint round-trips too (global model and NeighGen).
    ASSERT_OK_AND_ASSIGN(fl::proto::Message state, server->SaveState());
    ASSERT_OK_AND_ASSIGN(auto server2, f.server(config));
    ASSERT_OK(server2->RestoreState(state));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message b1, server->Broadcast({r + 1, 0}));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message b2, server2->Broadcast({r + 1, 0}));
    EXPECT_EQ(b1.SerializeAsString(), b2.SerializeAsString());
  }
}

TEST(FedSagePlusTest, ServerRejectsMissingOrUnexpectedNeighGen) {
  const fl::MethodConfig config = SmallConfig();
  auto data = fl::testing::CsbmClient(120, 8, 3, 11);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedsage_plus"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(auto c, f.client(data, config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, c->Train(global, {1, 1}));
  fl::proto::Message stripped = reply;
  ASSERT_OK(fl::TakeTensors("neighgen.", &stripped).status());
  EXPECT_FALSE(server->Accumulate(stripped).ok());  // round 1 needs NeighGen
  fl::proto::Message late = reply;
  late.mutable_header()->set_round(3);
  EXPECT_FALSE(server->Accumulate(late).ok());  // after the generator rounds it must not come
  EXPECT_OK(server->Accumulate(reply));
}

TEST(FedSagePlusTest, WithoutCrossClientTermNothingButTheClassifierLeaves) {
  fl::MethodConfig config = SmallConfig();
  config.params["neighgen"] = 1;  // fedsage with a locally trained NeighGen
  auto data = fl::testing::CsbmClient(120, 8, 3, 11);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedsage"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(auto c, f.client(data, config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  EXPECT_EQ(CountPrefix(global, "neighgen."), 0);
  ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, c->Train(global, {1, 1}));
  EXPECT_EQ(CountPrefix(reply, "neighgen."), 0);
  EXPECT_OK(server->Accumulate(reply));
  config.params["cross_client"] = 1;
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories loc, fl::FindMethod("locsage"));
  EXPECT_FALSE(loc.server(config).ok());  // locsage has no server to exchange NeighGen through
}

TEST(FedSageRunTest, FamilyLearnsInASmallFederation) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedsage_plus");
  o.model = "sage:layers=2,hidden=16,dropout=0.5";
  o.method_params = {{"gen_rounds", 2}, {"latent", 16}, {"gen_hidden", 16}};
  ASSERT_OK_AND_ASSIGN(fl::FederationResult plus, fl::RunFederation(o));
  EXPECT_GT(plus.test_acc, 50.0);
  o.method = "fedsage";
  ASSERT_OK_AND_ASSIGN(fl::FederationResult sage, fl::RunFederation(o));
  EXPECT_GT(sage.test_acc, 50.0);
  o.method = "locsage";
  o.eval.model = fl::EvalProtocol::Model::kLocal;
  ASSERT_OK_AND_ASSIGN(fl::FederationResult loc, fl::RunFederation(o));
  EXPECT_GT(loc.test_acc, 50.0);
  EXPECT_LT(sage.bytes_up, plus.bytes_up);  // NeighGen travels in fedsage_plus's generator rounds
}

}  // namespace
}  // namespace fgl::methods::fedsage_plus
