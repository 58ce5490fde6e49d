// How freed tensor memory is kept for reuse.
#ifndef FGL_NN_MEMORY_H_
#define FGL_NN_MEMORY_H_

#include <cstddef>
#include <cstdint>

namespace fgl::nn {

// Freed memory that goes back to the kernel is faulted in and zero-filled again at the next
// allocation (`clear_page` was 8% of FedTAD's server step and 38% of a FedSage+ Physics
// generator round). This keeps it in the process:
// - glibc's mmap threshold is pinned at its maximum (32 MB) and up to 128 MB of free heap top is
//   kept, so blocks of a few MB are reused by malloc;
// - LibTorch's CPU allocator becomes one that keeps freed blocks of about `kLargeBlockBytes` and
//   more (glibc maps those afresh each time), up to `kLargeTensorCacheBytes` per process, the
//   oldest dropped first, and hands each to the next request it fits with at most 1/8 to spare.
// A reused block holds its old bytes where glibc's fresh ones held zeros; results are unchanged
// because no code reads tensor memory it has not written (`memory_test` poisons the cache to
// check). LibTorch's profiler memory reports and its zero/junk-fill debug flags are bypassed.
// Call once, right after `PinCpuKernels`, before any tensor exists: a buffer allocated by one
// allocator must not be freed after the switch to the other. Calling it again is a no-op.
void ReuseFreedTensorMemory();

inline constexpr size_t kLargeBlockBytes = size_t{32} << 20;
inline constexpr size_t kLargeTensorCacheBytes = size_t{1} << 30;

// Gives every cached large block back to glibc (and so to the kernel).
void ReleaseCachedTensorMemory();

// What the large-block cache holds now and has done since the process started.
struct LargeTensorCacheStats {
  size_t cached_bytes = 0;  // free blocks held for reuse
  int64_t hits = 0;         // large requests served from the cache
  int64_t misses = 0;       // large requests that needed fresh memory
  int64_t dropped = 0;      // freed large blocks given back to glibc over capacity
};
LargeTensorCacheStats GetLargeTensorCacheStats();

}  // namespace fgl::nn

#endif  // FGL_NN_MEMORY_H_
