#include "nn/ops/dropout.h"

#include <thread>

#include "graph/random.h"
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

// The mask is the serial stream's, two entries per draw (low half first), whatever the thread
// count: a plain loop over graph::Rng gives the same bits for a mask of several parallel blocks.
TEST(DropoutTest, MaskIsTheSerialStreamAtAnyThreadCount) {
  const int64_t n = 3 * 65536 + 7;  // four blocks, the last one odd
  const double p = 0.4;
  const torch::Tensor x = torch::ones({n});
  graph::Rng seeds(21, "dropout");
  graph::Rng stream(seeds.NextU64());
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  const uint64_t threshold = static_cast<uint64_t>(p * 4294967296.0);
  torch::Tensor expected = torch::empty({n});
  float* e = expected.data_ptr<float>();
  for (int64_t i = 0; i < n; i += 2) {
    const uint64_t r = stream.NextU64();
    e[i] = (r & 0xffffffffu) >= threshold ? scale : 0.0f;
    if (i + 1 < n) e[i + 1] = (r >> 32) >= threshold ? scale : 0.0f;
  }
  const int threads = at::get_num_threads();
  for (int t : {1, 2, 3}) {
    at::set_num_threads(t);
    DropoutSeedScope scope(21);
    // Compared as bits: +0 and -0 are equal as floats.
    EXPECT_TRUE(torch::equal(Dropout(x, p, true).view(torch::kInt32), expected.view(torch::kInt32)))
        << t << " threads";
  }
  at::set_num_threads(threads);
}

}  // namespace
}  // namespace fgl::nn
