#include "nn/ops/dropout.h"

#include "gtest/gtest.h"

namespace fgl::nn {
namespace {

TEST(DropoutTest, RateScaleSeedAndGradient) {
  torch::Tensor x = torch::ones({1000, 101}).requires_grad_(true);
  torch::manual_seed(4);
  torch::Tensor y = Dropout(x, 0.3, true);
  const double kept = (y != 0).sum().item<double>() / y.numel();
  EXPECT_NEAR(kept, 0.7, 0.01);
  EXPECT_NEAR(y.max().item<float>(), 1 / 0.7, 1e-6);
  torch::manual_seed(4);
  EXPECT_TRUE(torch::equal(y, Dropout(x, 0.3, true)));
  EXPECT_FALSE(torch::equal(y, Dropout(x, 0.3, true)));
  y.sum().backward();
  EXPECT_TRUE(torch::equal(x.grad() != 0, y != 0));
  EXPECT_TRUE(torch::equal(Dropout(x, 0.3, false), x));
}

}  // namespace
}  // namespace fgl::nn
