// FedProto: only prototypes travel; the server averages them per class; λ = 0 is local training from the client's own init.
#include "fl/aggregate/prototypes.h"
#include "fl/local_model.h"
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "methods/fedproto/fedproto.pb.h"
#include "nn/losses/losses.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedproto {
namespace {

TEST(Prototypes, ClassMeansAndTheAlignmentLoss) {
  const torch::Tensor emb = torch::tensor({{1.0f, 0.0f}, {3.0f, 2.0f}, {5.0f, 5.0f}, {7.0f, 7.0f}});
  const torch::Tensor labels = torch::tensor({0, 0, 1, 2}, torch::kInt64);
  const torch::Tensor mask = torch::tensor({true, true, true, false});
  const nn::ClassPrototypes p = nn::ComputeClassPrototypes(emb, labels, mask, 3);
  EXPECT_TRUE(torch::equal(p.prototypes, torch::tensor({{2.0f, 1.0f}, {5.0f, 5.0f}, {0.0f, 0.0f}})));
  EXPECT_TRUE(torch::equal(p.counts, torch::tensor({2.0f, 1.0f, 0.0f})));
  // Class 0: mean of ((1-2)², (0-1)², (3-2)², (2-1)²) = 1; class 1 absent from `present`; class 2
  // has no node in the mask.
  const torch::Tensor global = torch::tensor({{2.0f, 1.0f}, {0.0f, 0.0f}, {9.0f, 9.0f}});
  EXPECT_FLOAT_EQ(
      nn::PrototypeAlignment(emb, labels, mask, global, torch::tensor({true, false, true})).item<float>(), 1.0f);
}

TEST(Prototypes, ServerAveragesPerClassByCountsOrOpenFglBySize) {
  const std::vector<torch::Tensor> protos = {torch::tensor({{1.0f}, {0.0f}, {0.0f}}),
                                             torch::tensor({{4.0f}, {6.0f}, {0.0f}})};
  const std::vector<torch::Tensor> counts = {torch::tensor({1.0f, 0.0f, 0.0f}), torch::tensor({2.0f, 3.0f, 0.0f})};
  const fl::GlobalPrototypes paper = fl::CountWeightedPrototypes(protos, counts);
  EXPECT_TRUE(torch::allclose(paper.prototypes, torch::tensor({{3.0f}, {6.0f}, {0.0f}})));
  EXPECT_TRUE(torch::equal(paper.present, torch::tensor({true, true, false})));
  const fl::GlobalPrototypes openfgl = fl::ClientSizeWeightedPrototypes(protos, {1, 3});
  EXPECT_TRUE(torch::allclose(openfgl.prototypes, torch::tensor({{3.25f}, {4.5f}, {0.0f}})));
}

TEST(FedProtoTest, OnlyPrototypesTravelAndTheyShapeTheSecondRound) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_features = 8;
  config.num_classes = 3;
  config.seed = 4;
  config.model_spec = "gat:layers=2,heads=1,hidden=64";
  auto data = fl::testing::CsbmClient(200, 8, 3, 10);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fedproto, fl::FindMethod("fedproto"));
  ASSERT_OK_AND_ASSIGN(auto server, fedproto.server(config));
  ASSERT_OK_AND_ASSIGN(auto client, fedproto.client(data, config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  EXPECT_EQ(global.tensors_size(), 0);  // round 1: no prototypes yet, cross-entropy only
  ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, client->Train(global, {1, 1}));
  ASSERT_EQ(reply.tensors_size(), 2);
  EXPECT_EQ(reply.tensors(0).name(), "prototypes");
  EXPECT_EQ(reply.tensors(1).name(), "counts");
  EXPECT_EQ(reply.tensors(0).shape(0), 3);
  EXPECT_EQ(reply.tensors(0).shape(1), 64);  // the embedding, whatever the architecture
  ASSERT_OK(server->Accumulate(reply));
  ASSERT_OK(server->FinishRound({1, 1}));
  ASSERT_OK_AND_ASSIGN(global, server->Broadcast({2, 2}));
  ASSERT_EQ(global.tensors_size(), 2);  // prototypes and their presence, nothing else
  // With λ = 1 the second round's loss carries the alignment term; with λ = 0 it does not.
  ASSERT_OK_AND_ASSIGN(fl::proto::Message saved, client->SaveState());
  ASSERT_OK_AND_ASSIGN(fl::proto::Message with, client->Train(global, {2, 2}));
  FedProtoParams zero;
  zero.set_proto_weight(0);
  fl::MethodConfig plain = config;
  plain.spec.add_method_params()->PackFrom(zero);
  ASSERT_OK_AND_ASSIGN(auto plain_client, fedproto.client(data, plain));
  ASSERT_OK(plain_client->RestoreState(saved));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message without, plain_client->Train(global, {2, 2}));
  EXPECT_GT(with.scalars().at("train_loss"), without.scalars().at("train_loss"));
}

// λ = 0: a FedProto client is a Local client whose model starts from the client's own seed
// (fl::PrivateInitSeed), whatever prototypes the server sends.
TEST(FedProtoTest, WithoutTheTermItIsLocalTrainingFromTheClientsOwnInit) {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.num_features = 8;
  config.num_classes = 3;
  config.seed = 4;
  config.spec.set_local_epochs(2);
  config.model_spec = "sage:layers=2,hidden=64";
  auto data = fl::testing::CsbmClient(200, 8, 3, 11);
  FedProtoParams zero;
  zero.set_proto_weight(0);
  fl::MethodConfig proto0 = config;
  proto0.spec.add_method_params()->PackFrom(zero);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories fedproto, fl::FindMethod("fedproto"));
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories local, fl::FindMethod("local"));
  ASSERT_OK_AND_ASSIGN(auto proto_client, fedproto.client(data, proto0));
  fl::MethodConfig own_init = config;
  own_init.seed = fl::PrivateInitSeed(config, *data);
  ASSERT_OK_AND_ASSIGN(auto local_client, local.client(data, own_init));
  // Prototypes from another client's model: they would pull the embedding if λ were not 0.
  auto other = fl::testing::CsbmClient(200, 8, 3, 12, /*id=*/1);
  ASSERT_OK_AND_ASSIGN(auto other_client, fedproto.client(other, config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message other_reply, other_client->Train(fl::proto::Message(), {1, 1}));
  ASSERT_OK_AND_ASSIGN(auto server, fedproto.server(config));
  ASSERT_OK(server->Accumulate(other_reply));
  ASSERT_OK(server->FinishRound({1, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({2, 2}));
  ASSERT_GT(global.tensors_size(), 0);
  for (int r = 1; r <= 3; ++r) {
    const fl::RoundInfo round{r, static_cast<uint64_t>(100 + r)};
    ASSERT_OK(proto_client->Train(r == 1 ? fl::proto::Message() : global, round).status());
    ASSERT_OK(local_client->Train(fl::proto::Message(), round).status());
  }
  ASSERT_OK_AND_ASSIGN(torch::Tensor a, proto_client->Predict(nullptr));
  ASSERT_OK_AND_ASSIGN(torch::Tensor b, local_client->Predict(nullptr));
  EXPECT_TRUE(torch::equal(a, b));
  // Clients start from different models: the seed is their own.
  EXPECT_NE(fl::PrivateInitSeed(config, *data), fl::PrivateInitSeed(config, *other));
}

// λ = 1 changes the numbers of a heterogeneous federation.
TEST(FedProtoTest, TheTermChangesAHeterogeneousFederation) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedproto");
  o.spec.set_model("gcn:layers=2,hidden=64;sage:layers=2,hidden=64;gat:layers=2,heads=1,hidden=64");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  FedProtoParams zero;
  zero.set_proto_weight(0);
  o.spec.add_method_params()->PackFrom(zero);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult proto0, fl::RunFederation(o));
  o.spec.clear_method_params();
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult proto1, fl::RunFederation(o));
  ASSERT_EQ(proto0.rounds_size(), proto1.rounds_size());
  EXPECT_NE(proto1.rounds(proto1.rounds_size() - 1).test_acc() + proto1.rounds(proto1.rounds_size() - 1).val_acc(),
            proto0.rounds(proto0.rounds_size() - 1).test_acc() + proto0.rounds(proto0.rounds_size() - 1).val_acc());
}

// OpenFGL's post-dropout embeddings are an option: they change the run; a rate of 1 is refused.
TEST(FedProtoTest, EmbeddingDropoutChangesTheRunAndIsChecked) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedproto");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult plain, fl::RunFederation(o));
  FedProtoParams p;
  p.set_embedding_dropout(0.5);
  o.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult dropped, fl::RunFederation(o));
  EXPECT_NE(plain.rounds(plain.rounds_size() - 1).clients(0).train_loss(), dropped.rounds(dropped.rounds_size() - 1).clients(0).train_loss());
  p.set_embedding_dropout(1);
  o.spec.clear_method_params();
  o.spec.add_method_params()->PackFrom(p);
  EXPECT_THAT(fl::RunFederation(o).status(),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("embedding_dropout")));
}

}  // namespace
}  // namespace fgl::methods::fedproto
