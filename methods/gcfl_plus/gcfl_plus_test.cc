// GCFL+: DTW and the minimum cut on hand-made inputs, the server's split on a constructed case
// (two groups whose updates cancel, with different gradient-norm sequences), and a federated run.
#include <cmath>
#include <functional>
#include <string>

#include <google/protobuf/text_format.h>
#include "methods/gcfl_plus/gcfl_plus.pb.h"
#include "methods/fedtad/fedtad.pb.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/typed_state.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "methods/gcfl_plus/clustering.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::gcfl_plus {
namespace {

TEST(ClusteringTest, DtwDistance) {
  EXPECT_DOUBLE_EQ(DtwDistance({1, 2, 3}, {1, 2, 3}), 0);
  // Warping absorbs the repeated value: 1 2 2 3 vs 1 2 3 costs nothing.
  EXPECT_DOUBLE_EQ(DtwDistance({1, 2, 2, 3}, {1, 2, 3}), 0);
  // Every point of {0, 0} against {3}: sqrt(9 + 9).
  EXPECT_NEAR(DtwDistance({0, 0}, {3}), std::sqrt(18.0), 1e-12);
  EXPECT_NEAR(DtwDistance({0, 1}, {1, 2}), std::sqrt(1.0 + 0 + 1), 1e-12);  // 0-1, 1-1, 1-2
}

TEST(ClusteringTest, MinimumCutSeparatesTwoGroups) {
  // {0, 2, 4} and {1, 3} are tightly connected inside, weakly across.
  std::vector<std::vector<double>> w(5, std::vector<double>(5, 0.1));
  for (int i : {0, 2, 4}) for (int j : {0, 2, 4}) w[i][j] = 5;
  w[1][3] = w[3][1] = 5;
  const auto [a, b] = MinimumCut(w);
  EXPECT_EQ(a, (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(b, (std::vector<int>{1, 3}));
}

fl::proto::Message Reply(int k, const fl::proto::Message& received, float shift, double grad_norm) {
  fl::NamedTensors shifted;
  const auto tensors = *fl::DecodeTensors(received);
  for (const auto& [name, t] : tensors) shifted.emplace_back(name, t + shift);
  fl::proto::Message m = fl::ModelReply(shifted, /*num_nodes=*/10, k, {}, "gcfl_plus.weights");
  (*m.mutable_scalars())["grad_norm"] = grad_norm;
  return m;
}

fl::MethodConfig TinyConfig() {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.model_spec = "gcn:layers=2,hidden=4,dropout=0.5";
  config.num_features = 3;
  config.num_classes = 2;
  return config;
}

TEST(GcflPlusServerTest, SplitsOpposedGroupsAfterRound20) {
  fl::MethodConfig config = TinyConfig();
  config.spec.set_clients(4);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("gcfl_plus"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  for (int round = 1; round <= 21; ++round) {
    for (int k = 0; k < 4; ++k) {
      ASSERT_OK_AND_ASSIGN(fl::proto::Message received, server->personalised()->BroadcastTo(k, {round, 1}));
      // Clients 0, 1 move by +0.05 per entry, 2, 3 by -0.05 (26 parameters: norm 0.25): the mean
      // update is 0 (< eps1) and each is large (> eps2). Their gradient norms differ (1 vs 5 with a little wobble).
      const bool first = k < 2;
      ASSERT_OK(server->Accumulate(Reply(k, received, first ? 0.05f : -0.05f, (first ? 1.0 : 5.0) + 0.1 * (k % 2))));
    }
    ASSERT_OK(server->FinishRound({round, 1}));
    const auto aggregates = fl::AggregatesOf(*server);
    if (round <= 20) {
      ASSERT_EQ(aggregates.size(), 1u) << "round " << round;  // no split before round 21
    } else {
      ASSERT_EQ(aggregates.size(), 2u);
      EXPECT_EQ(aggregates[0].clients, (std::vector<int>{0, 1}));
      EXPECT_EQ(aggregates[1].clients, (std::vector<int>{2, 3}));
    }
  }
  // After the split each cluster moves by its own members' mean update: the two models differ.
  ASSERT_OK_AND_ASSIGN(fl::proto::Message m0, server->personalised()->BroadcastTo(0, {22, 1}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message m2, server->personalised()->BroadcastTo(2, {22, 1}));
  const auto t0 = *fl::DecodeTensors(m0), t2 = *fl::DecodeTensors(m2);
  EXPECT_NEAR((t0.begin()->second - t2.begin()->second).abs().max().item<float>(), 0.1f, 1e-5);
  // The checkpoint keeps the clusters.
  ASSERT_OK_AND_ASSIGN(fl::proto::Message saved, server->SaveState());
  ASSERT_OK_AND_ASSIGN(auto restored, f.server(config));
  ASSERT_OK(restored->RestoreState(saved));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message r2, restored->personalised()->BroadcastTo(2, {22, 1}));
  EXPECT_TRUE(torch::equal(fl::DecodeTensors(r2)->begin()->second, t2.begin()->second));
  // Saved again, the restored server gives the same bytes: clusters, models and sequences.
  ASSERT_OK_AND_ASSIGN(fl::proto::Message again, restored->SaveState());
  EXPECT_EQ(again.SerializeAsString(), saved.SerializeAsString());
  ASSERT_OK_AND_ASSIGN(const GcflPlusServerState typed, fl::UnpackState<GcflPlusServerState>(saved, "test"));
  ASSERT_EQ(typed.clusters_size(), 2);
  EXPECT_EQ(typed.clusters(1).members().size(), 2);
  ASSERT_EQ(typed.sequences_size(), 4);
  EXPECT_EQ(typed.sequences(2).grad_norms_size(), 0);  // cleared by the split in round 21, kept as an entry
}

// A bad checkpoint state is refused naming the cluster or client and the field, and leaves the
// server as it was.
TEST(GcflPlusServerTest, RestoreRefusesABadStateAndChangesNothing) {
  fl::MethodConfig config = TinyConfig();
  config.spec.set_clients(4);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("gcfl_plus"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  for (int round = 1; round <= 22; ++round) {  // split in round 21, as above; one norm each since
    for (int k = 0; k < 4; ++k) {
      ASSERT_OK_AND_ASSIGN(fl::proto::Message received, server->personalised()->BroadcastTo(k, {round, 1}));
      const bool first = k < 2;
      ASSERT_OK(server->Accumulate(Reply(k, received, first ? 0.05f : -0.05f, (first ? 1.0 : 5.0) + 0.1 * (k % 2))));
    }
    ASSERT_OK(server->FinishRound({round, 1}));
  }
  ASSERT_OK_AND_ASSIGN(const fl::proto::Message saved, server->SaveState());
  ASSERT_OK_AND_ASSIGN(const GcflPlusServerState good, fl::UnpackState<GcflPlusServerState>(saved, "test"));
  ASSERT_EQ(good.clusters_size(), 2);
  ASSERT_EQ(good.sequences_size(), 4);
  for (const auto& seq : good.sequences()) ASSERT_EQ(seq.grad_norms_size(), 1);
  ASSERT_OK_AND_ASSIGN(auto restored, f.server(config));
  ASSERT_OK(restored->RestoreState(saved));
  auto refused = [&](const std::function<void(GcflPlusServerState*)>& spoil, const std::string& error) {
    SCOPED_TRACE(error);
    GcflPlusServerState bad = good;
    spoil(&bad);
    fl::proto::Message m;
    fl::PackState(bad, &m);
    EXPECT_THAT(restored->RestoreState(m),
                fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr(error)));
  };
  using State = GcflPlusServerState;
  refused([](State* s) { s->clear_clusters(); }, "gcfl_plus state: no clusters");
  refused([](State* s) { s->mutable_clusters(1)->add_members(0); },
          "cluster 1: client 0 is listed twice (also in cluster 0)");
  refused([](State* s) { s->mutable_clusters(1)->add_members(4); }, "cluster 1 member: client 4 is not in [0, 4)");
  refused([](State* s) { s->mutable_clusters(0)->set_members(0, -1); }, "cluster 0 member: client -1 is not in");
  refused([](State* s) { s->mutable_clusters(0)->mutable_members()->SwapElements(0, 1); },
          "cluster 0: members not in ascending order at client 0");
  refused([](State* s) { s->mutable_clusters(1)->mutable_parameters()->RemoveLast(); }, "cluster 1: 3 tensors, expected 4");
  refused([](State* s) { s->mutable_clusters(1)->mutable_parameters(0)->set_name("no_such_parameter"); },
          "cluster 1: missing, misshapen or non-finite");
  refused([](State* s) {
            const fl::proto::Tensor& p = s->clusters(1).parameters(0);
            *s->mutable_clusters(1)->mutable_parameters(0) = fl::EncodeTensor(p.name(), fl::DecodeTensor(p)->unsqueeze(0));
          },
          "cluster 1: missing, misshapen or non-finite");
  refused([](State* s) {
            const fl::proto::Tensor& p = s->clusters(0).parameters(0);
            *s->mutable_clusters(0)->mutable_parameters(0) =
                fl::EncodeTensor(p.name(), fl::DecodeTensor(p)->to(torch::kDouble));
          },
          "is Double, expected Float");
  refused([](State* s) {
            const fl::proto::Tensor& p = s->clusters(0).parameters(0);
            torch::Tensor t = *fl::DecodeTensor(p);
            t.view(-1)[0] = std::nanf("");
            *s->mutable_clusters(0)->mutable_parameters(0) = fl::EncodeTensor(p.name(), t);
          },
          "cluster 0: missing, misshapen or non-finite");
  refused([](State* s) { s->mutable_sequences(2)->set_grad_norms(0, std::nan("")); },
          "sequence of client 2: grad_norms[0] = nan is not a finite norm");
  refused([](State* s) { s->mutable_sequences(3)->set_grad_norms(0, -1); }, "sequence of client 3: grad_norms[0] = -1");
  refused([](State* s) { *s->add_sequences() = s->sequences(1); }, "sequence of client 1: listed twice");
  refused([](State* s) { s->mutable_sequences(0)->set_client(9); }, "sequence of client 9: client 9 is not in [0, 4)");
  refused([](State* s) { s->mutable_sequences(0)->clear_client(); }, "a sequence without a client");
  refused([](State* s) { s->mutable_clusters(1)->mutable_members()->RemoveLast(); },
          "sequence of client 3: the client is in no cluster");
  EXPECT_THAT(restored->RestoreState(fl::proto::Message()),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("holds none")));
  // Nothing changed: the restored server still saves exactly what it restored.
  ASSERT_OK_AND_ASSIGN(fl::proto::Message after, restored->SaveState());
  EXPECT_EQ(after.SerializeAsString(), saved.SerializeAsString());
}

// OpenFGL splits only when every client's gradient-norm sequence is long enough: a cluster member
// that never replied (here client 4, broadcast to but silent) has none, so the cluster stays whole
// (before, its empty sequence was read past its end).
TEST(GcflPlusServerTest, AMemberWithoutASequenceBlocksTheSplit) {
  const fl::MethodConfig config = TinyConfig();
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("gcfl_plus"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  for (int round = 1; round <= 25; ++round) {
    for (int k = 0; k < 5; ++k) {
      ASSERT_OK_AND_ASSIGN(fl::proto::Message received, server->personalised()->BroadcastTo(k, {round, 1}));
      if (k == 4) continue;
      const bool first = k < 2;
      ASSERT_OK(server->Accumulate(Reply(k, received, first ? 0.05f : -0.05f, (first ? 1.0 : 5.0) + 0.1 * (k % 2))));
    }
    ASSERT_OK(server->FinishRound({round, 1}));
    ASSERT_EQ(fl::AggregatesOf(*server).size(), 1u) << "round " << round;
  }
}

TEST(GcflPlusRunTest, LearnsAloneAndWithTheFedTadPlugin) {
  fl::FederationOptions o = fl::testing::SmallFederation("gcfl_plus");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult r, fl::RunFederation(o));
  EXPECT_GT(r.result().test_acc(), 60.0);
  o.spec.set_method("gcfl_plus+fedtad");
  methods::fedtad::FedTadParams tad;
  tad.set_num_pseudo(20);
  o.spec.add_method_params()->PackFrom(tad);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult t, fl::RunFederation(o));
  EXPECT_GT(t.result().test_acc(), 40.0);  // 4 balanced classes: chance is 25%
}

// eps1, eps2, seq_length and min_round could not be set before typed parameters: thresholds that
// split at once (from a textproto) change the run, which with the defaults never splits in 6 rounds.
TEST(GcflPlusRunTest, SplitThresholdsFromATextprotoTakeEffect) {
  fl::FederationOptions o = fl::testing::SmallFederation("gcfl_plus");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult defaults, fl::RunFederation(o));
  GcflPlusParams p;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString("eps1: 1e9 eps2: 0 seq_length: 1 min_round: 0", &p));
  o.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult split, fl::RunFederation(o));
  bool differs = false;
  for (int r = 0; r < defaults.rounds_size(); ++r) {
    for (int k = 0; k < defaults.rounds(r).clients_size(); ++k) {
      differs |= defaults.rounds(r).clients(k).test_acc() != split.rounds(r).clients(k).test_acc();
    }
  }
  EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace fgl::methods::gcfl_plus
