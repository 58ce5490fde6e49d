#include "nn/ops/dropout.h"

#include <thread>

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

TEST(DropoutTest, SeedScopeIsPerThreadAndDeterministic) {
  torch::Tensor x = torch::ones({64, 64});
  torch::Tensor a, b, c;
  {
    DropoutSeedScope scope(11);
    a = Dropout(x, 0.5, true);
  }
  std::thread t([&] {
    DropoutSeedScope scope(11);
    b = Dropout(x, 0.5, true);
  });
  t.join();
  {
    DropoutSeedScope scope(12);
    c = Dropout(x, 0.5, true);
  }
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(torch::equal(a, c));
}

}  // namespace
}  // namespace fgl::nn
