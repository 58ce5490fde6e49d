// AdaFGL: the normalisation, the reliability estimate, the two steps and what travels.
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "fl/client_channel.h"
#include "fl/federation_driver.h"
#include "fl/registry.h"
#include "fl/simulator.h"
#include "fl/tensor_codec.h"
#include "fl/testing/client_data.h"
#include "gtest/gtest.h"
#include "methods/adafgl/adafgl.pb.h"
#include "methods/adafgl/personalisation.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::methods::adafgl {
namespace {

TEST(AdaFglTest, NormalisedAdjacencyIsSymmetricGcnNormAtHalf) {
  // A path 0 - 1 - 2: degrees with self-loops 2, 3, 2.
  const torch::Tensor a = torch::tensor({{0.f, 1.f, 0.f}, {1.f, 0.f, 1.f}, {0.f, 1.f, 0.f}});
  const torch::Tensor n = NormalisedAdjacency(a, 0.5);
  EXPECT_NEAR(n[0][0].item<float>(), 1.0 / 2, 1e-6);
  EXPECT_NEAR(n[0][1].item<float>(), 1.0 / std::sqrt(6.0), 1e-6);
  EXPECT_NEAR(n[1][1].item<float>(), 1.0 / 3, 1e-6);
  EXPECT_TRUE(torch::allclose(n, n.t()));
  // r = 1: row-normalised D^0 (A + I) D^-1 ... transposed: columns sum to one.
  EXPECT_TRUE(torch::allclose(NormalisedAdjacency(a, 1.0).sum(0), torch::ones({3})));
}

TEST(AdaFglTest, ReliabilityIsHighOnAHomophilousGraphAndLowWhenLabelsAlternate) {
  // Two cliques of 6 with labels by clique: propagation from half the nodes recovers the rest.
  const int n = 12;
  torch::Tensor a = torch::zeros({n, n});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j && (i < 6) == (j < 6)) a[i][j] = 1;
  torch::Tensor labels = torch::cat({torch::zeros({6}, torch::kInt64), torch::ones({6}, torch::kInt64)});
  const torch::Tensor order = torch::tensor({0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11}, torch::kInt64);
  const torch::Tensor none = torch::zeros({n}, torch::kBool);
  AdaFglParams p;
  EXPECT_EQ(PropagationReliability(a, labels, 2, order, none, p), 1.0);
  // Labels alternating inside each clique: the held-out nodes get their clique's majority.
  torch::Tensor alternating = torch::arange(n, torch::kInt64) % 2;
  EXPECT_LT(PropagationReliability(a, alternating, 2, torch::arange(n, torch::kInt64), none, p), 0.6);
}

fl::FederationOptions Small(int vanilla_rounds, int rounds) {
  fl::FederationOptions o = fl::testing::SmallFederation("adafgl");
  o.spec.set_rounds(rounds);
  o.spec.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  AdaFglParams p;
  p.set_vanilla_rounds(vanilla_rounds);
  o.spec.add_method_params()->PackFrom(p);
  return o;
}

TEST(AdaFglTest, StepTwoPersonalisesLocallyAndNothingTravels) {
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult a, fl::RunFederation(Small(3, 8)));
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult b, fl::RunFederation(Small(3, 8)));
  EXPECT_EQ(a.result().test_acc(), b.result().test_acc());
  EXPECT_GT(a.result().test_acc(), 40.0);  // 4 balanced classes
  ASSERT_EQ(a.rounds_size(), 8);
  // Rounds 1-3 upload models; round 4 starts step 2 (the extractor comes down once more); from
  // round 5 on only empty messages travel.
  EXPECT_GT(a.rounds(2).bytes_up(), 1000);
  EXPECT_GT(a.rounds(3).bytes_down(), 1000);
  EXPECT_LT(a.rounds(5).bytes_up(), a.rounds(2).bytes_up() / 10);
  EXPECT_LT(a.rounds(5).bytes_down(), a.rounds(2).bytes_down() / 10);
  // Step 2 changes the scored model: accuracy moves after round 3.
  bool moved = false;
  for (size_t r = 4; r < 8; ++r) moved |= a.rounds(r).test_acc() != a.rounds(2).test_acc();
  EXPECT_TRUE(moved);
}

// With client sampling: 3 clients, 2 sampled per round, step 2 from round 3. What each client was
// sent and replied in each round it trained.
struct Exchanged {
  std::map<int, std::map<int, fl::proto::Message>> sent;  // round -> client -> the server's message
  std::map<int, std::map<int, std::string>> replied;      // round -> client -> the reply's type
};

fl::FederationOptions Sampled(int rounds) {
  fl::FederationOptions o = Small(2, rounds);
  o.spec.set_clients(3);
  o.spec.set_client_fraction(0.67);
  o.strict = true;  // a client left out fails the run
  return o;
}

absl::StatusOr<fl::proto::FederationResult> RunSampled(const fl::FederationOptions& o, Exchanged* seen) {
  fl::DriverHooks hooks;
  hooks.on_exchange = [seen](int k, const fl::ClientTask& task, const fl::ClientAnswer& answer) {
    if (task.kind != fl::ClientTask::Kind::kTrain) return;
    seen->sent[task.round][k] = *task.message.message;
    if (answer.reply) seen->replied[task.round][k] = answer.reply->header().type();
  };
  return fl::RunFederation(o, hooks);
}

bool SameTensors(const fl::proto::Message& a, const fl::proto::Message& b) {
  absl::StatusOr<std::map<std::string, torch::Tensor>> ta = fl::DecodeTensors(a), tb = fl::DecodeTensors(b);
  if (!ta.ok() || !tb.ok() || ta->empty() || ta->size() != tb->size()) return false;
  for (const auto& [name, t] : *ta) {
    auto it = tb->find(name);
    if (it == tb->end() || !torch::equal(t, it->second)) return false;
  }
  return true;
}

TEST(AdaFglTest, AClientNotSampledWhenStepTwoStartsStartsItLaterFromTheStepOneModel) {
  Exchanged seen;
  ASSERT_OK_AND_ASSIGN(fl::proto::FederationResult result, RunSampled(Sampled(5), &seen));
  for (const fl::proto::RoundRecord& rec : result.rounds()) {
    EXPECT_EQ(rec.participants(), 2) << "round " << rec.round();
    EXPECT_EQ(rec.failed_clients(), 0) << "round " << rec.round();
  }
  // Round 3 starts step 2: its two clients get the step-1 model; the third (this seed's sampling)
  // is sampled again later and gets that same model then, in a message of its own.
  ASSERT_EQ(seen.sent[3].size(), 2u);
  int late = -1;
  for (int k = 0; k < 3; ++k) {
    if (!seen.sent[3].count(k)) late = k;
  }
  ASSERT_GE(late, 0);
  const fl::proto::Message& on_time = seen.sent[3].begin()->second;
  int late_round = 0;
  for (int r = 4; r <= 5 && late_round == 0; ++r) {
    if (seen.sent[r].count(late)) late_round = r;
  }
  ASSERT_GT(late_round, 0) << "the sampling never picks client " << late << " after round 3: change the seed";
  EXPECT_TRUE(SameTensors(seen.sent[late_round][late], on_time));
  EXPECT_EQ(seen.sent[late_round][late].header().type(), on_time.header().type());
  // Every other step-2 message is empty, and every client ends in step 2 (its replies are idle).
  std::set<int> started;
  for (int r = 3; r <= 5; ++r) {
    for (const auto& [k, m] : seen.sent[r]) {
      const bool first = r == 3 || (k == late && r == late_round);
      if (!first) {
        EXPECT_EQ(m.tensors_size(), 0) << "round " << r << " client " << k;
      }
      EXPECT_EQ(seen.replied[r][k], "adafgl.idle") << "round " << r << " client " << k;
      started.insert(k);
    }
  }
  EXPECT_EQ(started, (std::set<int>{0, 1, 2}));
  EXPECT_GT(result.rounds(late_round - 1).clients(late).bytes_down(), 1000);
}

TEST(AdaFglTest, ASampledRunResumesWithTheClientsThatStartedStepTwo) {
  Exchanged whole_seen, resumed_seen;
  ASSERT_OK_AND_ASSIGN(const fl::proto::FederationResult whole, RunSampled(Sampled(5), &whole_seen));
  fl::FederationOptions o = Sampled(3);  // stops after the round-3 checkpoint: one client not started
  const std::string dir = std::string(::testing::TempDir()) + "/adafgl_sampled_resume";
  ASSERT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  o.checkpoint_dir = dir;
  o.checkpoint_every = 3;
  ASSERT_OK(fl::RunFederation(o).status());
  o.spec.set_rounds(5);
  o.resume = true;
  ASSERT_OK_AND_ASSIGN(const fl::proto::FederationResult resumed, RunSampled(o, &resumed_seen));
  ASSERT_EQ(resumed.rounds_size(), whole.rounds_size());
  for (int r = 3; r < whole.rounds_size(); ++r) {
    EXPECT_EQ(resumed.rounds(r).test_acc(), whole.rounds(r).test_acc()) << "round " << r + 1;
    EXPECT_EQ(resumed.rounds(r).bytes_down(), whole.rounds(r).bytes_down()) << "round " << r + 1;
    for (const auto& [k, m] : whole_seen.sent[r + 1]) {
      EXPECT_EQ(resumed_seen.sent[r + 1][k].tensors_size(), m.tensors_size()) << "round " << r + 1 << " client " << k;
    }
  }
}

TEST(AdaFglTest, RefusesARunThatNeverReachesStepTwo) {
  absl::Status s = fl::RunFederation(Small(50, 6)).status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("never reach step 2"), std::string::npos) << s;
}

}  // namespace
}  // namespace fgl::methods::adafgl
