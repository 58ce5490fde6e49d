// MOON: the first round is plain FedAvg (no negative yet); later rounds add the contrastive term,
// and the previous embedding survives a checkpoint.
#include "fl/registry.h"
#include "fl/simulator.h"
#include "methods/moon/moon.pb.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::moon {
namespace {

TEST(MoonTest, ContrastiveTermFromTheSecondRoundAndCheckpoint) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_features = 8;
  config.num_classes = 3;
  config.seed = 4;
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories moon, fl::FindMethod("moon"));
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fedavg, fl::FindMethod("fedavg"));
  ASSERT_OK_AND_ASSIGN(auto server, moon.server(config));
  ASSERT_OK_AND_ASSIGN(auto m, moon.client(data, config));
  ASSERT_OK_AND_ASSIGN(auto a, fedavg.client(data, config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message rm, m->Train(global, {1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message ra, a->Train(global, {1, 1}));
  // Round 1: identical to FedAvg (same loss), apart from the message type.
  EXPECT_DOUBLE_EQ(rm.scalars().at("train_loss"), ra.scalars().at("train_loss"));
  ASSERT_OK(server->Accumulate(rm));
  ASSERT_OK(server->FinishRound({1, 1}));
  ASSERT_OK_AND_ASSIGN(global, server->Broadcast({2, 2}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message saved, m->SaveState());
  ASSERT_OK_AND_ASSIGN(auto restored, moon.client(data, config));
  ASSERT_OK(restored->RestoreState(saved));
  ASSERT_OK_AND_ASSIGN(rm, m->Train(global, {2, 2}));
  ASSERT_OK_AND_ASSIGN(ra, a->Train(global, {2, 2}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message rr, restored->Train(global, {2, 2}));
  // Round 2: the contrastive term (a cross-entropy over two logits, > 0) is added.
  EXPECT_GT(rm.scalars().at("train_loss"), ra.scalars().at("train_loss"));
  EXPECT_DOUBLE_EQ(rr.scalars().at("train_loss"), rm.scalars().at("train_loss"));
}

// OpenFGL's post-dropout z is an option: it changes the run, and a rate of 1 is refused.
TEST(MoonTest, EmbeddingDropoutChangesTheRunAndIsChecked) {
  fl::FederationOptions o = fl::testing::SmallFederation("moon");
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult plain, fl::RunFederation(o));
  MoonParams p;
  p.set_embedding_dropout(0.5);
  o.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult dropped, fl::RunFederation(o));
  EXPECT_NE(plain.final_global(), dropped.final_global());
  EXPECT_GT(dropped.result().test_acc(), 40.0);  // 4 classes
  p.set_embedding_dropout(1);
  o.spec.clear_method_params();
  o.spec.add_method_params()->PackFrom(p);
  EXPECT_THAT(fl::RunFederation(o).status(),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("embedding_dropout")));
}

}  // namespace
}  // namespace fgl::methods::moon
