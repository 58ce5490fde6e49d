#include "nn/memory.h"

#include <malloc.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <vector>

#include <c10/core/CPUAllocator.h>
#include <c10/core/alignment.h>
#include <c10/util/Exception.h>

namespace fgl::nn {
namespace {

// Each block starts with its usable size, so one deleter (and `raw_deleter`) serves every block;
// the header is a whole alignment unit so the data keeps c10's alignment.
constexpr size_t kHeader = c10::gAlignment;
static_assert(kHeader >= sizeof(size_t));
// Large requests are rounded up to multiples of this, so that requests a few bytes apart fall in
// one size class and can share cached blocks.
constexpr size_t kLargeRounding = size_t{2} << 20;
// glibc maps a chunk once header and bookkeeping reach its 32 MB threshold, so requests this
// close below `kLargeBlockBytes` are made large too (else they would be mapped and not cached).
constexpr size_t kLargeFrom = kLargeBlockBytes - 4096;
// The most blocks the cache can hold: none is smaller than `kLargeBlockBytes`.
constexpr size_t kMaxCachedBlocks = kLargeTensorCacheBytes / kLargeBlockBytes;

size_t& UsableSize(void* base) { return *static_cast<size_t*>(base); }

// The freed large blocks, oldest first, and the counters behind `LargeTensorCacheStats`.
class FreeLargeBlocks {
 public:
  FreeLargeBlocks() { blocks_.reserve(kMaxCachedBlocks + 1); }  // `Keep` runs in deleters: no allocation

  // The smallest cached block of at least `usable` bytes and at most 1/8 more (of equal ones,
  // the last freed: its pages are the likeliest to be in cache), or null.
  void* Take(size_t usable) {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t best = blocks_.size();
    for (size_t i = 0; i < blocks_.size(); ++i) {
      const size_t size = UsableSize(blocks_[i]);
      if (size >= usable && size - usable <= usable / 8 &&
          (best == blocks_.size() || size <= UsableSize(blocks_[best]))) {
        best = i;
      }
    }
    if (best == blocks_.size()) {
      ++stats_.misses;
      return nullptr;
    }
    void* base = blocks_[best];
    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(best));
    stats_.cached_bytes -= UsableSize(base);
    ++stats_.hits;
    return base;
  }

  // Keeps a freed large block, giving the oldest back to glibc to stay within capacity; a block
  // over the whole capacity goes back itself.
  void Keep(void* base) {
    const size_t size = UsableSize(base);
    std::array<void*, kMaxCachedBlocks + 1> dropped;
    size_t num_dropped = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (size > kLargeTensorCacheBytes) {
        dropped[num_dropped++] = base;
      } else {
        size_t oldest = 0;
        while (stats_.cached_bytes + size > kLargeTensorCacheBytes) {
          stats_.cached_bytes -= UsableSize(blocks_[oldest]);
          dropped[num_dropped++] = blocks_[oldest++];
        }
        blocks_.erase(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(oldest));
        blocks_.push_back(base);  // within the reserved capacity
        stats_.cached_bytes += size;
      }
      stats_.dropped += static_cast<int64_t>(num_dropped);
    }
    for (size_t i = 0; i < num_dropped; ++i) std::free(dropped[i]);  // outside the lock: munmap is slow
  }

  void Release() {
    std::vector<void*> blocks;
    blocks.reserve(kMaxCachedBlocks + 1);  // swapped in: `blocks_` keeps room for `Keep`
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks.swap(blocks_);
      stats_.cached_bytes = 0;
    }
    for (void* block : blocks) std::free(block);
  }

  LargeTensorCacheStats Stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  std::mutex mutex_;
  std::vector<void*> blocks_;  // the cached blocks' bases, in the order they were freed
  LargeTensorCacheStats stats_;
};

FreeLargeBlocks& Cache() {
  static FreeLargeBlocks* const cache = new FreeLargeBlocks();  // outlives every tensor
  return *cache;
}

void Delete(void* data) {
  if (data == nullptr) return;
  void* base = static_cast<char*>(data) - kHeader;
  if (UsableSize(base) >= kLargeBlockBytes) {
    Cache().Keep(base);
  } else {
    std::free(base);
  }
}

class CachingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const override {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (n == 0) return {nullptr, nullptr, &Delete, cpu};  // as c10's alloc_cpu
    // As c10's alloc_cpu, refuse sizes that are negative as ptrdiff_t (and keep the rounding
    // and the header from wrapping around).
    TORCH_CHECK(n <= static_cast<size_t>(PTRDIFF_MAX) - kLargeRounding - kHeader,
                "CPU allocator: cannot allocate ", n, " bytes");
    const size_t usable = n < kLargeFrom ? n : (n + kLargeRounding - 1) / kLargeRounding * kLargeRounding;
    void* base = usable >= kLargeBlockBytes ? Cache().Take(usable) : nullptr;
    if (base == nullptr) {
      TORCH_CHECK(posix_memalign(&base, c10::gAlignment, kHeader + usable) == 0,
                  "CPU allocator: not enough memory for a tensor of ", n, " bytes");
      UsableSize(base) = usable;
    }
    void* data = static_cast<char*>(base) + kHeader;
    return {data, data, &Delete, cpu};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &Delete; }
};

}  // namespace

void ReuseFreedTensorMemory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  static CachingCpuAllocator* const allocator = new CachingCpuAllocator();  // outlives every tensor
  c10::SetCPUAllocator(allocator);
  TORCH_CHECK(c10::GetCPUAllocator() == allocator, "another CPU allocator was installed with a higher priority");
}

void ReleaseCachedTensorMemory() { Cache().Release(); }

LargeTensorCacheStats GetLargeTensorCacheStats() { return Cache().Stats(); }

}  // namespace fgl::nn
