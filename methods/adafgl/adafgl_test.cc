// AdaFGL: the normalisation, the reliability estimate, the two steps and what travels.
#include "fl/registry.h"
#include "fl/simulator.h"
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
  o.spec.mutable_eval()->set_model("local");
  AdaFglParams p;
  p.set_vanilla_rounds(vanilla_rounds);
  o.spec.add_method_params()->PackFrom(p);
  return o;
}

TEST(AdaFglTest, StepTwoPersonalisesLocallyAndNothingTravels) {
  ASSERT_OK_AND_ASSIGN(fl::FederationResult a, fl::RunFederation(Small(3, 8)));
  ASSERT_OK_AND_ASSIGN(fl::FederationResult b, fl::RunFederation(Small(3, 8)));
  EXPECT_EQ(a.test_acc, b.test_acc);
  EXPECT_GT(a.test_acc, 40.0);  // 4 balanced classes
  ASSERT_EQ(a.rounds.size(), 8u);
  // Rounds 1-3 upload models; round 4 starts step 2 (the extractor comes down once more); from
  // round 5 on only empty messages travel.
  EXPECT_GT(a.rounds[2].bytes_up, 1000);
  EXPECT_GT(a.rounds[3].bytes_down, 1000);
  EXPECT_LT(a.rounds[5].bytes_up, a.rounds[2].bytes_up / 10);
  EXPECT_LT(a.rounds[5].bytes_down, a.rounds[2].bytes_down / 10);
  // Step 2 changes the scored model: accuracy moves after round 3.
  bool moved = false;
  for (size_t r = 4; r < 8; ++r) moved |= a.rounds[r].test_acc != a.rounds[2].test_acc;
  EXPECT_TRUE(moved);
}

TEST(AdaFglTest, RefusesARunThatNeverReachesStepTwo) {
  absl::Status s = fl::RunFederation(Small(50, 6)).status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("never reach step 2"), std::string::npos) << s;
}

}  // namespace
}  // namespace fgl::methods::adafgl
