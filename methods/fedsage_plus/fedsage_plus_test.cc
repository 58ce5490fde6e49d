// The FedSage family: fedsage is FedAvg with a GraphSAGE model; fedsage_plus exchanges NeighGen
// during the generator rounds only, mends once, and survives a checkpoint in either phase;
// locsage sends nothing; all three learn in a small federation.
#include <google/protobuf/text_format.h>
#include <cmath>
#include <cstdlib>
#include <set>
#include <utility>

#include "absl/status/statusor.h"
#include "methods/fedsage_plus/fedsage_plus.pb.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_macros.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::fedsage_plus {
namespace {

// `p` as the config's only method params.
void SetParams(const FedSagePlusParams& p, fl::MethodConfig* config) {
  config->spec.clear_method_params();
  config->spec.add_method_params()->PackFrom(p);
}

FedSagePlusParams Params(const fl::MethodConfig& config) { return *fl::MethodParams<FedSagePlusParams>(config); }

fl::MethodConfig SmallConfig() {
  fl::MethodConfig config = fl::testing::TestMethodConfig();
  config.model_spec = "sage:layers=2,hidden=16,dropout=0.5";
  config.num_features = 8;
  config.num_classes = 3;
  config.spec.set_local_epochs(2);
  // One client, sampled every round: each client trains in every round (NeighGen released).
  config.spec.set_clients(1);
  config.seed = 5;
  FedSagePlusParams p;
  p.set_gen_rounds(2);
  p.set_latent(8);
  p.set_gen_hidden(8);
  SetParams(p, &config);
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
    // The joint optimiser's moments exist after round 1's steps while a generator round is still to
    // come: the last one (round 2) frees them, before the client mends in round 3.
    EXPECT_EQ(CountPrefix(saved, "gen_adam.") > 0, r == 2) << "round " << r;
    EXPECT_EQ(saved.scalars().count("neighgen_trained") > 0, r == 3) << "round " << r;
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
  // After mending NeighGen waits on disk: a restored client saves it again, and a parked client
  // takes a restore, both continuing identically.
  ASSERT_OK_AND_ASSIGN(fl::proto::Message last, c->SaveState());
  EXPECT_GT(CountPrefix(last, "neighgen."), 0);
  ASSERT_OK_AND_ASSIGN(auto again, f.client(data, config));
  ASSERT_OK(again->RestoreState(last));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message resaved, again->SaveState());
  ASSERT_OK(c->RestoreState(resaved));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({5, 105}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message r1, c->Train(global, {5, 105}));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message r2, again->Train(global, {5, 105}));
  EXPECT_DOUBLE_EQ(r1.scalars().at("train_loss"), r2.scalars().at("train_loss"));
  ASSERT_OK_AND_ASSIGN(torch::Tensor p1, c->Predict(&global));
  ASSERT_OK_AND_ASSIGN(torch::Tensor p2, again->Predict(&global));
  EXPECT_TRUE(torch::equal(p1, p2));
}

// After its last generator round a client parks NeighGen on disk until it mends. Mending from the
// parked copy, from one kept in memory (the park's write failed: a missing $TMPDIR) and after a
// checkpoint restore into the parked client itself gives the same graph, bit for bit.
TEST(FedSagePlusTest, MendingFromParkedNeighGenEqualsMendingFromMemory) {
  const fl::MethodConfig config = SmallConfig();  // generator rounds 1 and 2
  auto data = fl::testing::CsbmClient(120, 8, 3, 11);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedsage_plus"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(auto parked, f.client(data, config));
  ASSERT_OK_AND_ASSIGN(auto in_memory, f.client(data, config));
  ASSERT_OK_AND_ASSIGN(auto restored, f.client(data, config));
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string kept_tmpdir = tmpdir == nullptr ? "" : tmpdir;
  for (int r = 1; r <= 3; ++r) {
    const fl::RoundInfo round{r, 200u + r};
    ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast(round));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, parked->Train(global, round));
    if (r == 2) setenv("TMPDIR", "/nonexistent/fedsage_plus_test", 1);
    absl::StatusOr<fl::proto::Message> trained = in_memory->Train(global, round);
    // Put $TMPDIR back before any assertion can end the test, so later tests park normally.
    if (r == 2) kept_tmpdir.empty() ? unsetenv("TMPDIR") : setenv("TMPDIR", kept_tmpdir.c_str(), 1);
    ASSERT_OK_AND_ASSIGN(fl::proto::Message reply2, std::move(trained));
    if (r == 3) {  // restore the parked client's own checkpoint, taken between round 2 and mending
      ASSERT_OK_AND_ASSIGN(fl::proto::Message saved, restored->SaveState());
      EXPECT_EQ(saved.scalars().count("neighgen_trained"), 1u);
      EXPECT_GT(CountPrefix(saved, "neighgen."), 0);
      ASSERT_OK(restored->RestoreState(saved));
    }
    ASSERT_OK_AND_ASSIGN(fl::proto::Message reply3, restored->Train(global, round));
    ASSERT_OK_AND_ASSIGN(auto t1, fl::DecodeTensors(reply));
    for (const fl::proto::Message* other : {&reply2, &reply3}) {
      ASSERT_OK_AND_ASSIGN(auto t2, fl::DecodeTensors(*other));
      ASSERT_EQ(t1.size(), t2.size());
      for (const auto& [name, t] : t1) EXPECT_TRUE(torch::equal(t2.at(name), t)) << name << ", round " << r;
    }
    ASSERT_OK_AND_ASSIGN(torch::Tensor p1, parked->Predict(&global));
    ASSERT_OK_AND_ASSIGN(torch::Tensor p2, in_memory->Predict(&global));
    ASSERT_OK_AND_ASSIGN(torch::Tensor p3, restored->Predict(&global));
    EXPECT_TRUE(torch::equal(p1, p2)) << "round " << r;
    EXPECT_TRUE(torch::equal(p1, p3)) << "round " << r;
    ASSERT_OK(server->Accumulate(reply));
    ASSERT_OK(server->FinishRound(round));
  }
}

// Between generator rounds, with every client in every round, a client drops NeighGen's
// parameters (the next broadcast overwrites them); when clients are sampled it keeps them. A
// client that missed the last generator round after dropping them cannot mend, and says so.
TEST(FedSagePlusTest, ReleasesNeighGenBetweenGeneratorRoundsOnlyWhenEveryClientTrains) {
  auto data = fl::testing::CsbmClient(120, 8, 3, 11);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedsage_plus"));
  for (const int per_round : {4, 2}) {
    fl::MethodConfig config = SmallConfig();
    config.spec.set_clients(4);
    config.spec.set_client_fraction(per_round / 4.0);
    ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
    ASSERT_OK_AND_ASSIGN(auto c, f.client(data, config));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 7}));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, c->Train(global, {1, 7}));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message saved, c->SaveState());
    const bool released = per_round == 4;
    EXPECT_EQ(saved.scalars().count("neighgen_released") > 0, released);
    EXPECT_EQ(CountPrefix(saved, "neighgen.") == 0, released);
    ASSERT_OK(server->Accumulate(reply));
    ASSERT_OK(server->FinishRound({1, 7}));
    // Round 2 (the last generator round) skipped: round 3 mends, or cannot.
    ASSERT_OK_AND_ASSIGN(fl::proto::Message third, server->Broadcast({3, 8}));
    const absl::Status mended = c->Train(third, {3, 8}).status();
    EXPECT_EQ(mended.ok(), !released) << mended;
    if (released) {
      EXPECT_NE(mended.message().find("missed generator round 2"), std::string::npos) << mended;
    }
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
  FedSagePlusParams p = Params(config);
  p.set_neighgen(true);  // fedsage with a locally trained NeighGen
  SetParams(p, &config);
  auto data = fl::testing::CsbmClient(120, 8, 3, 11);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedsage"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(auto c, f.client(data, config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 1}));
  EXPECT_EQ(CountPrefix(global, "neighgen."), 0);
  ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, c->Train(global, {1, 1}));
  EXPECT_EQ(CountPrefix(reply, "neighgen."), 0);
  EXPECT_OK(server->Accumulate(reply));
  p.set_cross_client(true);
  SetParams(p, &config);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories loc, fl::FindMethod("locsage"));
  EXPECT_FALSE(loc.server(config).ok());  // locsage has no server to exchange NeighGen through
}

// The references' behaviours (README, "Independent review") as options: each reaches the run,
// and the ones that need another variant's machinery are refused naming the field.
TEST(FedSagePlusTest, ReferenceOptionsAreRefusedWhereTheyCannotApply) {
  fl::MethodConfig config = SmallConfig();
  FedSagePlusParams p = Params(config);
  p.set_mend_with_average(true);
  SetParams(p, &config);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories sage, fl::FindMethod("fedsage"));
  EXPECT_THAT(sage.server(config), fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                          ::testing::HasSubstr("mend_with_average")));
  p = Params(SmallConfig());
  p.set_mend_with_average(true);
  SetParams(p, &config);
  config.spec.set_clients(4);
  config.spec.set_client_fraction(0.5);  // 2 of 4 per round: the mean goes out once: an unsampled client could never mend
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories plus, fl::FindMethod("fedsage_plus"));
  EXPECT_THAT(plus.server(config), fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                          ::testing::HasSubstr("every client in every round")));
  config = SmallConfig();
  p = Params(SmallConfig());
  p.set_weighting(fl::proto::UNIFORM);
  SetParams(p, &config);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories loc, fl::FindMethod("locsage"));
  EXPECT_THAT(loc.server(config),
              fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("weighting")));
  p = Params(SmallConfig());
  p.set_average_classifier_in_gen_rounds(false);
  SetParams(p, &config);
  EXPECT_THAT(sage.server(config), fgl::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                          ::testing::HasSubstr("average_classifier_in_gen_rounds")));
}

// OpenFGL keeps each client's classifier through the generator rounds: scoring the global model
// must leave it in place, and the averaged classifier is taken only after them. With
// mend_with_average the round after them carries NeighGen's mean once more, for mending.
TEST(FedSagePlusTest, OwnClassifierThroughGeneratorRoundsAndMendingWithTheMean) {
  fl::MethodConfig config = SmallConfig();
  FedSagePlusParams p = Params(config);
  p.set_average_classifier_in_gen_rounds(false);
  p.set_mend_with_average(true);
  SetParams(p, &config);
  auto data = fl::testing::CsbmClient(120, 8, 3, 11);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedsage_plus"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(auto c, f.client(data, config));
  ASSERT_OK_AND_ASSIGN(auto twin, f.client(data, config));  // trains in every round, never scored
  fl::MethodConfig own_config = config;  // mends with its own NeighGen instead of the mean
  p.set_mend_with_average(false);
  SetParams(p, &own_config);
  ASSERT_OK_AND_ASSIGN(auto own, f.client(data, own_config));
  for (int r = 1; r <= 3; ++r) {
    const fl::RoundInfo round{r, 200u + r};
    ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast(round));
    EXPECT_EQ(CountPrefix(global, "neighgen.") > 0, r <= 3) << "round " << r;
    if (r > 1) {  // a second client's reply moved the mean away from c's own classifier
      ASSERT_OK(c->Predict(&global).status());
    }
    ASSERT_OK_AND_ASSIGN(fl::proto::Message reply, c->Train(global, round));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message same, twin->Train(global, round));
    ASSERT_OK_AND_ASSIGN(fl::proto::Message alone, own->Train(global, round));
    EXPECT_DOUBLE_EQ(reply.scalars().at("train_loss"), same.scalars().at("train_loss")) << "round " << r;
    // Identical until mending (round 3), where the mean differs from the client's own NeighGen.
    EXPECT_EQ(reply.scalars().at("train_loss") == alone.scalars().at("train_loss"), r < 3) << "round " << r;
    ASSERT_OK(server->Accumulate(reply));
    fl::proto::Message other = reply;  // a second client whose classifier and NeighGen are zero
    other.mutable_header()->set_sender(1);
    for (auto& t : *other.mutable_tensors()) std::fill(t.mutable_data()->begin(), t.mutable_data()->end(), 0);
    if (r <= 2) {
      ASSERT_OK(server->Accumulate(other));
    }
    ASSERT_OK(server->FinishRound(round));
  }
  ASSERT_OK_AND_ASSIGN(fl::proto::Message fourth, server->Broadcast({4, 204}));
  EXPECT_EQ(CountPrefix(fourth, "neighgen."), 0);
}

TEST(FedSagePlusTest, TruncatedCountsAndTrainNodeLossesChangeTheGenerator) {
  fl::MethodConfig config = SmallConfig();
  auto data = fl::testing::CsbmClient(120, 8, 3, 11);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedsage_plus"));
  ASSERT_OK_AND_ASSIGN(auto server, f.server(config));
  ASSERT_OK_AND_ASSIGN(fl::proto::Message global, server->Broadcast({1, 3}));
  auto loss_with = [&](const FedSagePlusParams& p) -> absl::StatusOr<double> {
    SetParams(p, &config);
    FGL_ASSIGN_OR_RETURN(auto c, f.client(data, config));
    FGL_ASSIGN_OR_RETURN(fl::proto::Message reply, c->Train(global, {1, 3}));
    return reply.scalars().at("train_loss");
  };
  const FedSagePlusParams ours = Params(SmallConfig());
  FedSagePlusParams train_only = ours, truncated = ours, per_client = ours;
  train_only.set_gen_loss_nodes(FedSagePlusParams::TRAIN);
  truncated.set_truncate_counts(true);
  per_client.set_gen_loss_per_client(true);
  config.spec.set_clients(4);
  config.spec.set_local_epochs(1);  // the reported loss is the first step's
  ASSERT_OK_AND_ASSIGN(double base, loss_with(ours));
  ASSERT_OK_AND_ASSIGN(double again, loss_with(ours));
  ASSERT_OK_AND_ASSIGN(double on_train, loss_with(train_only));
  ASSERT_OK_AND_ASSIGN(double cut, loss_with(truncated));
  ASSERT_OK_AND_ASSIGN(double quarter, loss_with(per_client));
  EXPECT_EQ(base, again);
  EXPECT_NEAR(quarter, base / 4, 1e-6 * base);
  EXPECT_NE(base, on_train);
  EXPECT_NE(base, cut);
}

// OpenFGL's one-way edges: no original node reads a generated neighbour, so NeighGen's own loss
// weights cannot move the classifier, in the generator rounds or after mending; joined both ways
// they do.
TEST(FedSagePlusTest, OneWayGeneratedEdgesKeepNeighGenAwayFromTheClassifier) {
  fl::MethodConfig config = SmallConfig();
  auto data = fl::testing::CsbmClient(120, 8, 3, 11);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedsage_plus"));
  // The classifier's tensors in each of rounds 1-3 (2 generator rounds, then mending).
  auto classifier_after = [&](FedSagePlusParams p) -> absl::StatusOr<std::vector<fl::NamedTensors>> {
    SetParams(p, &config);
    FGL_ASSIGN_OR_RETURN(auto server, f.server(config));
    FGL_ASSIGN_OR_RETURN(auto c, f.client(data, config));
    std::vector<fl::NamedTensors> out;
    for (int r = 1; r <= 3; ++r) {
      const fl::RoundInfo round{r, 300u + r};
      FGL_ASSIGN_OR_RETURN(fl::proto::Message global, server->Broadcast(round));
      FGL_ASSIGN_OR_RETURN(fl::proto::Message reply, c->Train(global, round));
      FGL_ASSIGN_OR_RETURN(auto tensors, fl::DecodeTensors(reply));
      fl::NamedTensors classifier;
      for (auto& [name, t] : tensors) {
        if (name.rfind("neighgen.", 0) != 0) classifier.emplace_back(name, t);
      }
      out.push_back(std::move(classifier));
      FGL_RETURN_IF_ERROR(server->Accumulate(reply));
      FGL_RETURN_IF_ERROR(server->FinishRound(round));
    }
    return out;
  };
  auto same = [](const std::vector<fl::NamedTensors>& a, const std::vector<fl::NamedTensors>& b, size_t r) {
    if (a[r].size() != b[r].size() || a[r].empty()) return false;
    for (size_t i = 0; i < a[r].size(); ++i) {
      if (a[r][i].first != b[r][i].first || !torch::equal(a[r][i].second, b[r][i].second)) return false;
    }
    return true;
  };
  FedSagePlusParams p = Params(SmallConfig());
  p.set_generated_edges(FedSagePlusParams::INTO_GENERATED);
  FedSagePlusParams heavier = p;
  heavier.set_feat_weight(5);
  heavier.set_num_weight(3);
  ASSERT_OK_AND_ASSIGN(auto one_way, classifier_after(p));
  ASSERT_OK_AND_ASSIGN(auto one_way_heavier, classifier_after(heavier));
  p.set_generated_edges(FedSagePlusParams::BOTH_WAYS);
  heavier.set_generated_edges(FedSagePlusParams::BOTH_WAYS);
  ASSERT_OK_AND_ASSIGN(auto both, classifier_after(p));
  ASSERT_OK_AND_ASSIGN(auto both_heavier, classifier_after(heavier));
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_TRUE(same(one_way, one_way_heavier, r)) << "round " << r + 1;
    EXPECT_FALSE(same(both, both_heavier, r)) << "round " << r + 1;
  }
  FedSagePlusParams no_generator;
  no_generator.set_neighgen(false);
  no_generator.set_generated_edges(FedSagePlusParams::INTO_GENERATED);
  SetParams(no_generator, &config);
  EXPECT_FALSE(f.client(data, config).ok());  // refused: nothing is generated
}

// one_optimizer: the classifier's Adam continues from the joint optimiser's step count and
// moments (2 generator rounds of 2 epochs, then one classifier round: 6 steps, not 2).
TEST(FedSagePlusTest, OneOptimizerCarriesTheJointMomentsIntoTheClassifierRounds) {
  fl::MethodConfig config = SmallConfig();
  auto data = fl::testing::CsbmClient(120, 8, 3, 11);
  ASSERT_OK_AND_ASSIGN(fl::MethodFactories f, fl::FindMethod("fedsage_plus"));
  auto after_three_rounds = [&](bool one) -> absl::StatusOr<std::pair<double, fl::proto::Message>> {
    FedSagePlusParams p = Params(SmallConfig());
    p.set_one_optimizer(one);
    SetParams(p, &config);
    FGL_ASSIGN_OR_RETURN(auto server, f.server(config));
    FGL_ASSIGN_OR_RETURN(auto c, f.client(data, config));
    double loss = 0;
    for (int r = 1; r <= 3; ++r) {
      const fl::RoundInfo round{r, 500u + r};
      FGL_ASSIGN_OR_RETURN(fl::proto::Message global, server->Broadcast(round));
      FGL_ASSIGN_OR_RETURN(fl::proto::Message reply, c->Train(global, round));
      loss = reply.scalars().at("train_loss");
      FGL_RETURN_IF_ERROR(server->Accumulate(reply));
      FGL_RETURN_IF_ERROR(server->FinishRound(round));
    }
    FGL_ASSIGN_OR_RETURN(fl::proto::Message state, c->SaveState());
    return std::make_pair(loss, state);
  };
  auto steps = [](const fl::proto::Message& state) {
    std::set<double> out;
    for (const auto& [name, v] : state.scalars()) {
      if (name.rfind("adam.step.", 0) == 0) out.insert(v);
    }
    return out;
  };
  ASSERT_OK_AND_ASSIGN(auto own, after_three_rounds(false));
  ASSERT_OK_AND_ASSIGN(auto one, after_three_rounds(true));
  EXPECT_EQ(steps(own.second), std::set<double>({2}));
  EXPECT_EQ(steps(one.second), std::set<double>({6}));
  EXPECT_NE(own.first, one.first);  // the first classifier round's loss moves with the moments
  FedSagePlusParams no_generator;
  no_generator.set_neighgen(false);
  no_generator.set_one_optimizer(true);
  SetParams(no_generator, &config);
  EXPECT_FALSE(f.client(data, config).ok());
}

TEST(FedSageRunTest, FamilyLearnsInASmallFederation) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedsage_plus");
  o.spec.set_model("sage:layers=2,hidden=16,dropout=0.5");
  FedSagePlusParams small;
  small.set_gen_rounds(2);
  small.set_latent(16);
  small.set_gen_hidden(16);
  o.spec.add_method_params()->PackFrom(small);
  // The FedSage code's protocol beside ours: the original whole graph's test nodes.
  o.spec.mutable_eval()->set_global_test(fl::proto::EvalProtocol::WHOLE_GRAPH);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult plus, fl::RunFederation(o));
  EXPECT_GT(plus.result().test_acc(), 50.0);
  EXPECT_GT(plus.result().global_test_acc(), 50.0);
  o.spec.set_method("fedsage");
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult sage, fl::RunFederation(o));
  EXPECT_GT(sage.result().test_acc(), 50.0);
  EXPECT_GT(sage.result().global_test_acc(), 50.0);
  o.spec.set_method("locsage");
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult loc, fl::RunFederation(o));
  EXPECT_GT(loc.result().test_acc(), 50.0);
  EXPECT_TRUE(loc.result().has_global_test_acc());
  EXPECT_LT(sage.result().bytes_up(), plus.result().bytes_up());  // NeighGen travels in fedsage_plus's generator rounds
}

// hidden_portion and neighgen could not be set before typed parameters: from a textproto, each
// changes the run.
TEST(FedSageRunTest, HiddenPortionAndNeighGenFromATextprotoTakeEffect) {
  fl::FederationOptions o = fl::testing::SmallFederation("fedsage_plus");
  o.spec.set_model("sage:layers=2,hidden=16,dropout=0.5");
  o.spec.set_rounds(3);
  FedSagePlusParams p;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString("gen_rounds: 2 latent: 16 gen_hidden: 16", &p));
  o.spec.add_method_params()->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult half, fl::RunFederation(o));
  ASSERT_TRUE(google::protobuf::TextFormat::MergeFromString("hidden_portion: 0.2", &p));
  o.spec.mutable_method_params(0)->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult fifth, fl::RunFederation(o));
  EXPECT_NE(half.final_global(), fifth.final_global());
  ASSERT_TRUE(google::protobuf::TextFormat::MergeFromString("neighgen: false", &p));
  o.spec.mutable_method_params(0)->PackFrom(p);
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult plain, fl::RunFederation(o));
  EXPECT_NE(fifth.final_global(), plain.final_global());
  EXPECT_LT(plain.result().bytes_up(), fifth.result().bytes_up());  // no NeighGen travels
}

}  // namespace
}  // namespace fgl::methods::fedsage_plus
