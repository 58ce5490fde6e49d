#include "nn/memory.h"

#include <malloc.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

namespace fgl::nn {
namespace {

constexpr size_t kAlignment = 64;  // c10's gAlignment: what vectorised kernels expect
// Each block starts with its usable size, so one deleter (and `raw_deleter`) serves every block;
// the header is a whole alignment unit so the data stays 64-byte aligned.
constexpr size_t kHeader = kAlignment;
// Large requests are rounded up to whole huge pages (glibc backs them with 2 MB pages), so that
// requests a few bytes apart can share cached blocks.
constexpr size_t kLargeRounding = size_t{2} << 20;

size_t& UsableSize(void* base) { return *static_cast<size_t*>(base); }

// The freed large blocks, oldest first, and the counters behind `LargeTensorCacheStats`.
class FreeLargeBlocks {
 public:
  // The smallest cached block of at least `usable` bytes and at most 1/8 more (of those, the
  // last freed: its pages are the likeliest to be in cache), or null.
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
    std::vector<void*> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (size > kLargeTensorCacheBytes) {
        dropped.push_back(base);
      } else {
        size_t oldest = 0;
        while (stats_.cached_bytes + size > kLargeTensorCacheBytes) {
          stats_.cached_bytes -= UsableSize(blocks_[oldest]);
          dropped.push_back(blocks_[oldest++]);
        }
        blocks_.erase(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(oldest));
        blocks_.push_back(base);
        stats_.cached_bytes += size;
      }
      stats_.dropped += static_cast<int64_t>(dropped.size());
    }
    for (void* block : dropped) std::free(block);  // outside the lock: munmap takes a while
  }

  void Release() {
    std::vector<void*> blocks;
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
  std::vector<void*> blocks_;  // a few dozen at most (capacity / kLargeBlockBytes)
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
    const size_t usable = n < kLargeBlockBytes ? n : (n + kLargeRounding - 1) / kLargeRounding * kLargeRounding;
    void* base = usable >= kLargeBlockBytes ? Cache().Take(usable) : nullptr;
    if (base == nullptr) {
      TORCH_CHECK(posix_memalign(&base, kAlignment, kHeader + usable) == 0,
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
}

void ReleaseCachedTensorMemory() { Cache().Release(); }

LargeTensorCacheStats GetLargeTensorCacheStats() { return Cache().Stats(); }

}  // namespace fgl::nn
