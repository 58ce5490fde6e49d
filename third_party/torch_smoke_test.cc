// Checks that LibTorch links and that matmul agrees with a hand computation.
#include <torch/torch.h>

#include "gtest/gtest.h"

TEST(TorchSmokeTest, MatmulMatchesHandComputation) {
  // [[1,2],[3,4]] x [[5],[6]] = [[17],[39]]
  torch::Tensor a = torch::tensor({{1.0f, 2.0f}, {3.0f, 4.0f}});
  torch::Tensor b = torch::tensor({{5.0f}, {6.0f}});
  torch::Tensor c = torch::matmul(a, b);
  EXPECT_FLOAT_EQ(c[0][0].item<float>(), 17.0f);
  EXPECT_FLOAT_EQ(c[1][0].item<float>(), 39.0f);
}
