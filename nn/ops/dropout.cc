#include "nn/ops/dropout.h"

#include <cstdint>

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

torch::Tensor Dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0.0) return x;
  if (p >= 1.0) return x * 0.0;
  graph::Rng rng(NextStochasticSeed());
  const int64_t n = x.numel();
  torch::Tensor mask = torch::empty({n}, torch::kFloat32);
  float* m = mask.data_ptr<float>();
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  // Keep an entry when a 32-bit uniform is >= p * 2^32: two entries per 64-bit draw. Branch-free
  // (scale * 1 or scale * 0): a branch on a random bit mispredicts half the time.
  const uint64_t threshold = static_cast<uint64_t>(p * 4294967296.0);
  int64_t i = 0;
  for (; i + 1 < n; i += 2) {
    const uint64_t r = rng.NextU64();
    m[i] = scale * static_cast<float>((r & 0xffffffffu) >= threshold);
    m[i + 1] = scale * static_cast<float>((r >> 32) >= threshold);
  }
  if (i < n) m[i] = (rng.NextU64() & 0xffffffffu) >= threshold ? scale : 0.0f;
  return x * mask.view(x.sizes()).to(x.device());
}

}  // namespace fgl::nn
