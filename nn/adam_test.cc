#include "nn/adam.h"

#include <vector>

#include "gtest/gtest.h"

namespace fgl::nn {
namespace {

// Steps fgl::nn::Adam and torch::optim::Adam on the same parameters and gradients: the
// parameters and both moments must stay equal bit for bit.
void ExpectSameSteps(const std::vector<std::vector<int64_t>>& shapes, double weight_decay, int steps) {
  torch::manual_seed(7);
  std::vector<torch::Tensor> ours, theirs;
  for (const auto& shape : shapes) {
    torch::Tensor init = torch::randn(shape);
    ours.push_back(init.clone().requires_grad_());
    theirs.push_back(init.clone().requires_grad_());
  }
  const auto options = torch::optim::AdamOptions(0.01).weight_decay(weight_decay);
  Adam our_adam(ours, options);
  torch::optim::Adam their_adam(theirs, options);
  for (int t = 0; t < steps; ++t) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      torch::Tensor g = torch::randn(shapes[i]) * (t + 1);
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

}  // namespace
}  // namespace fgl::nn
