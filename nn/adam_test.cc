#include "nn/adam.h"

#include <vector>

#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::nn {
namespace {

// Steps fgl::nn::Adam and torch::optim::Adam on the same parameters and gradients: the
// parameters and both moments must stay equal bit for bit.
void ExpectSameSteps(const std::vector<std::vector<int64_t>>& shapes, double weight_decay, int steps,
                     torch::optim::AdamOptions options = torch::optim::AdamOptions(0.01), bool transposed = false) {
  torch::manual_seed(7);
  std::vector<torch::Tensor> ours, theirs;
  for (const auto& shape : shapes) {
    torch::Tensor init = torch::randn(shape);
    if (transposed) init = init.t();  // not contiguous: the op-by-op step
    ours.push_back(init.clone().requires_grad_());
    theirs.push_back(init.clone().requires_grad_());
  }
  options.weight_decay(weight_decay);
  Adam our_adam(ours, options);
  torch::optim::Adam their_adam(theirs, options);
  for (int t = 0; t < steps; ++t) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      torch::Tensor g = torch::randn(ours[i].sizes()) * (t + 1);
      ours[i].mutable_grad() = g.clone();
      theirs[i].mutable_grad() = g.clone();
    }
    our_adam.step();
    their_adam.step();
    for (size_t i = 0; i < shapes.size(); ++i) {
      ASSERT_TRUE(torch::equal(ours[i], theirs[i])) << "parameter " << i << " step " << t;
    }
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string key = c10::guts::to_string(ours[i].unsafeGetTensorImpl());
    const std::string their_key = c10::guts::to_string(theirs[i].unsafeGetTensorImpl());
    const auto& a = static_cast<torch::optim::AdamParamState&>(*our_adam.state().at(key));
    const auto& b = static_cast<torch::optim::AdamParamState&>(*their_adam.state().at(their_key));
    EXPECT_EQ(a.step(), b.step());
    EXPECT_TRUE(torch::equal(a.exp_avg(), b.exp_avg()));
    EXPECT_TRUE(torch::equal(a.exp_avg_sq(), b.exp_avg_sq()));
  }
}

// Odd sizes exercise the vector kernels' scalar tails; a larger parameter after a smaller one
// grows the scratch buffer, a smaller one after it reuses a prefix.
TEST(AdamTest, EqualsLibTorchAdamWithWeightDecay) {
  ExpectSameSteps({{7}, {33, 65}, {3, 5}, {1000, 37}}, 5e-4, 6);
}

TEST(AdamTest, EqualsLibTorchAdamWithoutWeightDecay) { ExpectSameSteps({{129, 3}, {4}}, 0, 5); }

// The fused one-pass step (the run binaries' case; this test pins LibTorch's AVX2 kernels as they
// do) against LibTorch's ops: FedEgo's shapes, sizes of every remainder mod 16, other
// hyperparameters, many steps, and non-contiguous parameters (which take the op-by-op step).
TEST(AdamTest, FusedStepEqualsLibTorchAdam) {
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) GTEST_SKIP() << "no AVX2/FMA";
  EXPECT_TRUE(Adam::FusedStepApplies());
  std::vector<std::vector<int64_t>> shapes = {{1433, 512}, {512}, {7, 512}};
  for (int64_t n = 1; n <= 17; ++n) shapes.push_back({n});
  ExpectSameSteps(shapes, 0, 30, torch::optim::AdamOptions(3e-4));
  ExpectSameSteps(shapes, 5e-4, 30, torch::optim::AdamOptions(0.05).betas({0.8, 0.99}).eps(1e-6));
  ExpectSameSteps({{33, 65}, {9, 2}}, 1e-2, 10, torch::optim::AdamOptions(0.01), /*transposed=*/true);
}

// Moments in and near float's subnormal range, where FusedStep takes its closed form for zero
// gradients: compared bit for bit (signed zeros included) with LibTorch's op-by-op step. Moments
// are set by hand across every binade down to the smallest subnormal, gradients are mostly +-0 with
// some tiny ones, parameters include zeros and values below the closed form's 2^-45; each option
// set is run where the closed form applies (no weight decay, small lr) and where it must not.
TEST(AdamTest, FusedStepEqualsLibTorchAdamWithSubnormalMoments) {
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) GTEST_SKIP() << "no AVX2/FMA";
  auto same_bits = [](const torch::Tensor& a, const torch::Tensor& b) {
    return torch::equal(a.contiguous().view(torch::kInt32), b.contiguous().view(torch::kInt32));
  };
  // |x| = 2^-k * u with k uniform in [0, 160) (below 2^-149 it underflows to a subnormal or zero).
  auto across_binades = [](const std::vector<int64_t>& shape) {
    torch::Tensor e = torch::randint(0, 160, shape).to(torch::kFloat64);
    return (torch::rand(shape, torch::kFloat64) * torch::pow(2.0, -e)).to(torch::kFloat32);
  };
  const std::vector<torch::optim::AdamOptions> option_sets = {
      torch::optim::AdamOptions(3e-4), torch::optim::AdamOptions(0.01).betas({0.5, 0.9}),
      torch::optim::AdamOptions(3e-4).weight_decay(5e-4), torch::optim::AdamOptions(2.0),
      torch::optim::AdamOptions(1e-3).eps(1e-30)};
  for (size_t o = 0; o < option_sets.size(); ++o) {
    torch::manual_seed(11 + o);
    const std::vector<std::vector<int64_t>> shapes = {{1433, 64}, {4099}, {13}};
    std::vector<torch::Tensor> ours, theirs;
    for (const auto& shape : shapes) {
      torch::Tensor init = torch::randn(shape);
      const torch::Tensor pick = torch::rand(shape);
      init = torch::where(pick < 0.05, torch::zeros_like(init), init);
      init = torch::where(pick > 0.95, init * 1e-15, init);  // below 2^-45
      ours.push_back(init.clone().requires_grad_());
      theirs.push_back(init.clone().requires_grad_());
    }
    Adam our_adam(ours, option_sets[o]);
    torch::optim::Adam their_adam(theirs, option_sets[o]);
    for (int t = 0; t < 40; ++t) {
      for (size_t i = 0; i < shapes.size(); ++i) {
        const torch::Tensor pick = torch::rand(shapes[i]);
        torch::Tensor g = torch::randn(shapes[i]);
        g = torch::where(pick < 0.7, torch::zeros_like(g), g);
        g = torch::where(pick < 0.1, -torch::zeros_like(g), g);
        g = torch::where((pick > 0.9) & (pick < 0.95), across_binades(shapes[i]), g);
        ours[i].mutable_grad() = g.clone();
        theirs[i].mutable_grad() = g.clone();
      }
      our_adam.step();
      their_adam.step();
      if (t % 10 == 0) {  // moments re-drawn across binades (both optimisers alike), signs mixed
        for (size_t i = 0; i < shapes.size(); ++i) {
          auto& a = static_cast<torch::optim::AdamParamState&>(
              *our_adam.state().at(c10::guts::to_string(ours[i].unsafeGetTensorImpl())));
          auto& b = static_cast<torch::optim::AdamParamState&>(
              *their_adam.state().at(c10::guts::to_string(theirs[i].unsafeGetTensorImpl())));
          torch::Tensor m = across_binades(shapes[i]) * torch::sign(torch::randn(shapes[i]));
          m = torch::where(torch::rand(shapes[i]) < 0.05, -torch::zeros_like(m), m);
          const torch::Tensor v = across_binades(shapes[i]);
          a.exp_avg(m.clone());
          b.exp_avg(m.clone());
          a.exp_avg_sq(v.clone());
          b.exp_avg_sq(v.clone());
        }
      }
      for (size_t i = 0; i < shapes.size(); ++i) {
        ASSERT_TRUE(same_bits(ours[i], theirs[i])) << "options " << o << " parameter " << i << " step " << t;
        const auto& a = static_cast<torch::optim::AdamParamState&>(
            *our_adam.state().at(c10::guts::to_string(ours[i].unsafeGetTensorImpl())));
        const auto& b = static_cast<torch::optim::AdamParamState&>(
            *their_adam.state().at(c10::guts::to_string(theirs[i].unsafeGetTensorImpl())));
        ASSERT_TRUE(same_bits(a.exp_avg(), b.exp_avg())) << "options " << o << " parameter " << i << " step " << t;
        ASSERT_TRUE(same_bits(a.exp_avg_sq(), b.exp_avg_sq())) << "options " << o << " parameter " << i << " step " << t;
      }
    }
  }
}

TEST(AdamTest, SkipsParametersWithoutGradient) {
  torch::Tensor a = torch::ones({3}).requires_grad_();
  torch::Tensor b = torch::ones({3}).requires_grad_();
  Adam adam({a, b}, torch::optim::AdamOptions(0.1));
  a.mutable_grad() = torch::ones({3});
  adam.step();
  EXPECT_FALSE(torch::equal(a, torch::ones({3})));
  EXPECT_TRUE(torch::equal(b, torch::ones({3})));
  EXPECT_EQ(adam.state().size(), 1u);
  Adam::ReleaseScratch();
  a.mutable_grad() = torch::ones({3});
  adam.step();  // scratch reallocated after release
  EXPECT_EQ(static_cast<torch::optim::AdamParamState&>(*adam.state().begin()->second).step(), 2);
}

// Moments spilled to disk between steps come back bit for bit: the spilling optimiser keeps
// stepping as one that never spilled. Below the size threshold a moment stays in memory.
TEST(AdamTest, SpilledMomentsContinueBitForBit) {
  torch::manual_seed(3);
  const std::vector<std::vector<int64_t>> shapes = {{5}, {300, 41}};
  std::vector<torch::Tensor> ours, theirs;
  for (const auto& shape : shapes) {
    torch::Tensor init = torch::randn(shape);
    ours.push_back(init.clone().requires_grad_());
    theirs.push_back(init.clone().requires_grad_());
  }
  const auto options = torch::optim::AdamOptions(0.01).weight_decay(1e-3);
  Adam spilling(ours, options);
  Adam resident(theirs, options);
  const std::string big = c10::guts::to_string(ours[1].unsafeGetTensorImpl());
  const std::string small = c10::guts::to_string(ours[0].unsafeGetTensorImpl());
  for (int t = 0; t < 4; ++t) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      torch::Tensor g = torch::randn(shapes[i]);
      ours[i].mutable_grad() = g.clone();
      theirs[i].mutable_grad() = g.clone();
    }
    spilling.step();
    resident.step();
    ASSERT_THAT(spilling.Spill(::testing::TempDir(), /*min_bytes=*/int64_t{1} << 30), ::fgl::testing::IsOk());
    EXPECT_FALSE(spilling.spilled());  // nothing that large: no file
    ASSERT_THAT(spilling.Spill(::testing::TempDir(), /*min_bytes=*/1024), ::fgl::testing::IsOk());
    EXPECT_TRUE(spilling.spilled());
    const auto& freed = static_cast<torch::optim::AdamParamState&>(*spilling.state().at(big));
    EXPECT_EQ(freed.exp_avg().numel(), 0);
    EXPECT_EQ(freed.exp_avg_sq().numel(), 0);
    const auto& kept = static_cast<torch::optim::AdamParamState&>(*spilling.state().at(small));
    EXPECT_EQ(kept.exp_avg().numel(), 5);
    ASSERT_THAT(spilling.Unspill(), ::fgl::testing::IsOk());
    EXPECT_FALSE(spilling.spilled());
  }
  for (size_t i = 0; i < shapes.size(); ++i) EXPECT_TRUE(torch::equal(ours[i], theirs[i])) << "parameter " << i;
  const auto& a = static_cast<torch::optim::AdamParamState&>(*spilling.state().at(big));
  const auto& b =
      static_cast<torch::optim::AdamParamState&>(*resident.state().at(c10::guts::to_string(theirs[1].unsafeGetTensorImpl())));
  EXPECT_TRUE(torch::equal(a.exp_avg(), b.exp_avg()));
  EXPECT_TRUE(torch::equal(a.exp_avg_sq(), b.exp_avg_sq()));
}

TEST(AdamTest, SpillToAMissingDirectoryNamesItAndKeepsTheMoments) {
  torch::Tensor a = torch::ones({64, 64}).requires_grad_();
  Adam adam({a}, torch::optim::AdamOptions(0.1));
  a.mutable_grad() = torch::ones({64, 64});
  adam.step();
  const absl::Status s = adam.Spill("/nonexistent-fgl-dir", 0);
  EXPECT_THAT(s, ::fgl::testing::StatusIs(absl::StatusCode::kUnavailable, ::testing::HasSubstr("/nonexistent-fgl-dir")));
  EXPECT_FALSE(adam.spilled());
  a.mutable_grad() = torch::ones({64, 64});
  adam.step();  // still usable
  EXPECT_EQ(static_cast<torch::optim::AdamParamState&>(*adam.state().begin()->second).exp_avg().numel(), 64 * 64);
}

}  // namespace
}  // namespace fgl::nn
