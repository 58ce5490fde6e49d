#include "nn/ops/dropout.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "graph/random.h"

namespace fgl::nn {
namespace {

thread_local graph::Rng* current_stream = nullptr;

}  // namespace

DropoutSeedScope::DropoutSeedScope(uint64_t seed)
    : previous_(current_stream), stream_(new graph::Rng(seed, "dropout")) {
  current_stream = static_cast<graph::Rng*>(stream_);
}

DropoutSeedScope::~DropoutSeedScope() {
  current_stream = static_cast<graph::Rng*>(previous_);
  delete static_cast<graph::Rng*>(stream_);
}

uint64_t NextStochasticSeed() {
  return current_stream != nullptr
             ? current_stream->NextU64()
             : static_cast<uint64_t>(
                   torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kInt64).item<int64_t>());
}

namespace {

// Entries [0, count) of a mask from `rng`: an entry is kept when a 32-bit uniform is >=
// threshold, two entries per 64-bit draw (low half first); an odd last entry takes the low half
// of one more draw. Kept entries hold `scale`, dropped ones +0. Branch-free: an all-ones or zero
// word selects scale's bits (GCC turned `scale * (u >= t)` into a branch on a random bit, which
// mispredicts half the time: a sixth of a Physics GCN epoch).
void FillMask(graph::Rng& rng, int64_t count, uint64_t threshold, uint32_t scale_bits,
              uint32_t* m) {
  int64_t i = 0;
  for (; i + 1 < count; i += 2) {
    const uint64_t r = rng.NextU64();
    m[i] = scale_bits & -static_cast<uint32_t>((r & 0xffffffffu) >= threshold);
    m[i + 1] = scale_bits & -static_cast<uint32_t>((r >> 32) >= threshold);
  }
  if (i < count) m[i] = scale_bits & -static_cast<uint32_t>((rng.NextU64() & 0xffffffffu) >= threshold);
}

// With more than one intra-op thread, a mask is filled in blocks of this many entries, each
// from the stream advanced to the block's first draw, so the mask is the serial one.
constexpr int64_t kBlockEntries = int64_t{1} << 16;

}  // namespace

torch::Tensor Dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0.0) return x;
  if (p >= 1.0) return x * 0.0;
  graph::Rng rng(NextStochasticSeed());
  const int64_t n = x.numel();
  // Written as 32-bit words (the float bits of scale or +0), read as float32.
  torch::Tensor mask_bits = torch::empty({n}, torch::kInt32);
  auto* m = reinterpret_cast<uint32_t*>(mask_bits.data_ptr<int32_t>());
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  uint32_t scale_bits;
  std::memcpy(&scale_bits, &scale, sizeof scale);
  const uint64_t threshold = static_cast<uint64_t>(p * 4294967296.0);
  const int64_t blocks = (n + kBlockEntries - 1) / kBlockEntries;
  if (blocks < 2 || at::get_num_threads() < 2) {
    FillMask(rng, n, threshold, scale_bits, m);
  } else {
    static const graph::RngJump* const block_jump = new graph::RngJump(kBlockEntries / 2);
    std::vector<graph::Rng> starts(blocks, rng);
    for (int64_t b = 1; b < blocks; ++b) {
      starts[b] = starts[b - 1];
      block_jump->Apply(starts[b]);
    }
    at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const int64_t first = b * kBlockEntries;
        FillMask(starts[b], std::min(kBlockEntries, n - first), threshold, scale_bits, m + first);
      }
    });
  }
  return x * mask_bits.view(torch::kFloat32).view(x.sizes()).to(x.device());
}

}  // namespace fgl::nn
