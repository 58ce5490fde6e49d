// Dropout with a fast mask generator. LibTorch 1.13's CPU bernoulli_ draws one 64-bit random per
// element through a virtual generator call: ~20% of a Cora MLP epoch. This draws the mask from a
// xoshiro stream seeded by one draw from LibTorch's default generator, so torch::manual_seed
// still fixes it.
#ifndef FGL_NN_OPS_DROPOUT_H_
#define FGL_NN_OPS_DROPOUT_H_

#include <torch/torch.h>

namespace fgl::nn {

// In training: x * mask / (1 - p), mask ~ Bernoulli(1 - p) per entry; otherwise x.
// Differentiable in x (the gradient is the same mask). Any device: the mask is made on the CPU.
torch::Tensor Dropout(const torch::Tensor& x, double p, bool training);

// While alive, Dropout on this thread draws its masks from a stream seeded with `seed` instead
// of LibTorch's global generator, so clients trained on different threads are deterministic.
// Other stochastic forward passes (ego-tree sampling) draw from the same stream through
// NextStochasticSeed(). Scopes nest; the innermost wins.
// The next seed of this thread's stream (a DropoutSeedScope's, else LibTorch's generator).
uint64_t NextStochasticSeed();

class DropoutSeedScope {
 public:
  explicit DropoutSeedScope(uint64_t seed);
  ~DropoutSeedScope();
  DropoutSeedScope(const DropoutSeedScope&) = delete;
  DropoutSeedScope& operator=(const DropoutSeedScope&) = delete;

 private:
  void* previous_;
  void* stream_;
};

}  // namespace fgl::nn

#endif  // FGL_NN_OPS_DROPOUT_H_
