#include "nn/memory.h"

#include <cstdint>
#include <vector>

#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace fgl::nn {
namespace {

constexpr int64_t kFloatsPerMb = (1 << 20) / 4;

uintptr_t Address(const torch::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); }

class MemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ReuseFreedTensorMemory();  // idempotent: the same allocator each time
    ReleaseCachedTensorMemory();
  }
};

TEST_F(MemoryTest, ResultsAreTheSameAsWithLibTorchsAllocator) {
  auto compute = [] {
    torch::manual_seed(7);
    torch::Tensor a = torch::randn({3000, 64});
    torch::Tensor b = torch::randn({64, 3000});
    torch::Tensor c = torch::zeros({3000, 3000});  // 36 MB: the products are large blocks
    for (int i = 0; i < 4; ++i) c = c * 0.5 + torch::relu(torch::mm(a, b + i)).sqrt();
    return c;
  };
  c10::SetCPUAllocator(c10::GetDefaultCPUAllocator());
  const torch::Tensor before = compute();
  ReuseFreedTensorMemory();
  const int64_t hits = GetLargeTensorCacheStats().hits;
  const torch::Tensor after = compute();
  EXPECT_TRUE(torch::equal(before, after));
  EXPECT_GT(GetLargeTensorCacheStats().hits, hits);  // the computation did reuse blocks
}

TEST_F(MemoryTest, AFreedLargeBlockServesTheNextRequestItFits) {
  torch::Tensor first = torch::empty({40 * kFloatsPerMb});
  const uintptr_t address = Address(first);
  EXPECT_EQ(address % 64, 0u);
  first = torch::Tensor();
  const LargeTensorCacheStats before = GetLargeTensorCacheStats();
  EXPECT_EQ(before.cached_bytes, size_t{40} << 20);

  torch::Tensor again = torch::empty({40 * kFloatsPerMb - 3});  // rounds up to the same 40 MB
  EXPECT_EQ(Address(again), address);
  EXPECT_EQ(GetLargeTensorCacheStats().hits, before.hits + 1);
  EXPECT_EQ(GetLargeTensorCacheStats().cached_bytes, before.cached_bytes - (size_t{40} << 20));

  // A reused block carries old bytes; zeros() must still be zeros.
  again.fill_(3.0f);
  again = torch::Tensor();
  torch::Tensor zeros = torch::zeros({40 * kFloatsPerMb});
  EXPECT_EQ(Address(zeros), address);
  EXPECT_EQ(zeros.abs().max().item<float>(), 0.0f);
}

TEST_F(MemoryTest, ABlockMuchLargerThanTheRequestIsNotUsed) {
  torch::Tensor big = torch::empty({80 * kFloatsPerMb});
  const uintptr_t address = Address(big);
  big = torch::Tensor();
  const int64_t misses = GetLargeTensorCacheStats().misses;
  torch::Tensor half = torch::empty({40 * kFloatsPerMb});  // would waste half the block
  EXPECT_NE(Address(half), address);
  EXPECT_EQ(GetLargeTensorCacheStats().misses, misses + 1);
  torch::Tensor near = torch::empty({75 * kFloatsPerMb});  // within 1/8: takes it
  EXPECT_EQ(Address(near), address);
}

TEST_F(MemoryTest, TheCacheStaysWithinItsCapacityDroppingTheOldestFirst) {
  // Never written, so these take address space, not memory.
  std::vector<torch::Tensor> blocks;
  for (int i = 0; i < 6; ++i) blocks.push_back(torch::empty({256 * kFloatsPerMb}));
  const uintptr_t last = Address(blocks.back());
  const int64_t dropped = GetLargeTensorCacheStats().dropped;
  blocks.clear();  // frees in order: the first ones freed are dropped to make room
  const LargeTensorCacheStats after = GetLargeTensorCacheStats();
  EXPECT_LE(after.cached_bytes, kLargeTensorCacheBytes);
  EXPECT_EQ(after.dropped, dropped + 2);
  EXPECT_EQ(after.cached_bytes, 4 * (size_t{256} << 20));
  EXPECT_EQ(Address(torch::empty({256 * kFloatsPerMb})), last);  // of equal fits, the newest

  torch::Tensor over = torch::empty({1100 * kFloatsPerMb});  // alone over capacity
  over = torch::Tensor();
  EXPECT_EQ(GetLargeTensorCacheStats().dropped, after.dropped + 1);
  EXPECT_LE(GetLargeTensorCacheStats().cached_bytes, kLargeTensorCacheBytes);

  ReleaseCachedTensorMemory();
  EXPECT_EQ(GetLargeTensorCacheStats().cached_bytes, 0u);
}

TEST_F(MemoryTest, SmallAndEmptyTensorsWork) {
  torch::Tensor small = torch::arange(1000, torch::kFloat);
  EXPECT_EQ(Address(small) % 64, 0u);
  EXPECT_EQ(small.sum().item<float>(), 499500.0f);
  torch::Tensor empty = torch::empty({0});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(torch::cat({empty, small}).numel(), 1000);
}

}  // namespace
}  // namespace fgl::nn
