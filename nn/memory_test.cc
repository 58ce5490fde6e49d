#include "nn/memory.h"

#include <cstdint>
#include <limits>
#include <set>
#include <thread>
#include <vector>

#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace fgl::nn {
namespace {

constexpr int64_t kFloatsPerMb = (1 << 20) / 4;
constexpr size_t kMb = size_t{1} << 20;

uintptr_t Address(const torch::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); }

class MemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ReuseFreedTensorMemory();  // installed once; later calls are no-ops
    ReleaseCachedTensorMemory();
  }
};

// A computation whose temporaries are large blocks.
torch::Tensor Compute() {
  torch::manual_seed(7);
  torch::Tensor a = torch::randn({3000, 64});
  torch::Tensor b = torch::randn({64, 3000});
  torch::Tensor c = torch::zeros({3000, 3000});  // 36 MB
  for (int i = 0; i < 4; ++i) c = c * 0.5 + torch::relu(torch::mm(a, b + i)).sqrt();
  return c;
}

TEST_F(MemoryTest, ReusedBlocksHoldingOldBytesDoNotChangeResults) {
  const torch::Tensor fresh = Compute();  // every large block fresh from glibc
  {
    // Fill the cache with blocks of every size the computation asks for, full of NaN: an op that
    // read memory it had not written would now carry a NaN into the result.
    std::vector<torch::Tensor> poison;
    for (int i = 0; i < 8; ++i) poison.push_back(torch::full({3000, 3000}, NAN));
  }
  ASSERT_GT(GetLargeTensorCacheStats().cached_bytes, 0u);
  const int64_t hits = GetLargeTensorCacheStats().hits;
  const torch::Tensor reused = Compute();
  EXPECT_GT(GetLargeTensorCacheStats().hits, hits);  // the computation did take poisoned blocks
  EXPECT_TRUE(torch::equal(fresh, reused));
}

TEST_F(MemoryTest, AFreedLargeBlockServesTheNextRequestItFits) {
  torch::Tensor first = torch::empty({40 * kFloatsPerMb - 3});  // rounded up to a 40 MB class
  const uintptr_t address = Address(first);
  EXPECT_EQ(address % c10::gAlignment, 0u);
  first = torch::Tensor();
  const LargeTensorCacheStats before = GetLargeTensorCacheStats();
  EXPECT_EQ(before.cached_bytes, 40 * kMb);

  torch::Tensor again = torch::empty({40 * kFloatsPerMb});
  EXPECT_EQ(Address(again), address);
  EXPECT_EQ(GetLargeTensorCacheStats().hits, before.hits + 1);
  EXPECT_EQ(GetLargeTensorCacheStats().cached_bytes, 0u);
}

TEST_F(MemoryTest, TheSmallestFitWithinAnEighthIsTaken) {
  torch::Tensor big = torch::empty({80 * kFloatsPerMb});
  torch::Tensor mid = torch::empty({40 * kFloatsPerMb});
  torch::Tensor small = torch::empty({36 * kFloatsPerMb});
  const uintptr_t big_address = Address(big), small_address = Address(small);
  big = mid = small = torch::Tensor();
  EXPECT_EQ(Address(torch::empty({36 * kFloatsPerMb})), small_address);  // not the 40 MB block

  const int64_t misses = GetLargeTensorCacheStats().misses;
  torch::Tensor half = torch::empty({60 * kFloatsPerMb});  // 80 would waste a quarter
  EXPECT_NE(Address(half), big_address);
  EXPECT_EQ(GetLargeTensorCacheStats().misses, misses + 1);
  EXPECT_EQ(Address(torch::empty({72 * kFloatsPerMb})), big_address);  // within an eighth
}

TEST_F(MemoryTest, RequestsJustUnderThirtyTwoMbAreCachedToo) {
  torch::Tensor t = torch::empty({static_cast<int64_t>((kLargeBlockBytes - 100) / 4)});
  t = torch::Tensor();
  EXPECT_EQ(GetLargeTensorCacheStats().cached_bytes, kLargeBlockBytes);
  torch::Tensor small = torch::empty({4 * kFloatsPerMb});  // glibc's, not cached
  small = torch::Tensor();
  EXPECT_EQ(GetLargeTensorCacheStats().cached_bytes, kLargeBlockBytes);
}

TEST_F(MemoryTest, TheCacheStaysWithinItsCapacityDroppingTheOldestFirst) {
  // Never written, so these take address space, not memory.
  std::vector<torch::Tensor> blocks;
  for (int i = 0; i < 6; ++i) blocks.push_back(torch::empty({256 * kFloatsPerMb}));
  std::set<uintptr_t> newest;
  for (int i = 2; i < 6; ++i) newest.insert(Address(blocks[i]));
  const int64_t dropped = GetLargeTensorCacheStats().dropped;
  for (torch::Tensor& block : blocks) block = torch::Tensor();  // freed oldest first
  const LargeTensorCacheStats after = GetLargeTensorCacheStats();
  EXPECT_EQ(after.cached_bytes, 4 * 256 * kMb);
  EXPECT_EQ(after.dropped, dropped + 2);
  std::vector<torch::Tensor> again;
  std::set<uintptr_t> taken;
  for (int i = 0; i < 4; ++i) {
    again.push_back(torch::empty({256 * kFloatsPerMb}));
    taken.insert(Address(again.back()));
  }
  EXPECT_EQ(taken, newest);
  again.clear();

  torch::Tensor over = torch::empty({1100 * kFloatsPerMb});  // alone over capacity
  const int64_t before_over = GetLargeTensorCacheStats().dropped;
  over = torch::Tensor();
  EXPECT_EQ(GetLargeTensorCacheStats().dropped, before_over + 1);
  EXPECT_LE(GetLargeTensorCacheStats().cached_bytes, kLargeTensorCacheBytes);

  ReleaseCachedTensorMemory();
  EXPECT_EQ(GetLargeTensorCacheStats().cached_bytes, 0u);
}

TEST_F(MemoryTest, RawAllocationsAndBadSizes) {
  c10::Allocator* allocator = c10::GetCPUAllocator();
  void* raw = allocator->raw_allocate(40 * kMb);
  ASSERT_NE(raw, nullptr);
  allocator->raw_deallocate(raw);
  EXPECT_EQ(GetLargeTensorCacheStats().cached_bytes, 40 * kMb);
  EXPECT_EQ(allocator->allocate(0).get(), nullptr);
  EXPECT_THROW(allocator->allocate(std::numeric_limits<size_t>::max()), c10::Error);
  EXPECT_THROW(allocator->allocate(std::numeric_limits<size_t>::max() - (1 << 20)), c10::Error);
}

TEST_F(MemoryTest, ThreadsSharingTheCacheKeepItConsistent) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 50; ++i) {
        torch::Tensor x = torch::empty({(34 + 2 * ((t + i) % 3)) * kFloatsPerMb});
        x.data_ptr<float>()[0] = static_cast<float>(i);  // touch one page
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const LargeTensorCacheStats stats = GetLargeTensorCacheStats();
  EXPECT_LE(stats.cached_bytes, kLargeTensorCacheBytes);
  EXPECT_GT(stats.cached_bytes, 0u);
  ReleaseCachedTensorMemory();
}

TEST_F(MemoryTest, SmallAndEmptyTensorsWork) {
  torch::Tensor small = torch::arange(1000, torch::kFloat);
  EXPECT_EQ(Address(small) % c10::gAlignment, 0u);
  EXPECT_EQ(small.sum().item<float>(), 499500.0f);
  torch::Tensor empty = torch::empty({0});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(torch::cat({empty, small}).numel(), 1000);
}

}  // namespace
}  // namespace fgl::nn
