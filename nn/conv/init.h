// Parameter initialisations with PyG's semantics.
#ifndef FGL_NN_CONV_INIT_H_
#define FGL_NN_CONV_INIT_H_

#include <torch/torch.h>

namespace fgl::nn {

// Glorot/Xavier uniform over the last two dims: U(-a, a), a = sqrt(6 / (fan_in + fan_out)).
void GlorotUniform(torch::Tensor& t);
// torch.nn.Linear / PyG Linear ('kaiming_uniform'): weight and bias U(-1/sqrt(fan_in), ...).
void LinearUniform(torch::Tensor& weight, torch::Tensor& bias, int64_t fan_in);

// A weight under a learnable elementwise mask (FED-PUB's masked layers): weight * mask while
// training; at evaluation, mask entries with |m| < prune_below count as 0.
torch::Tensor MaskedWeight(const torch::Tensor& weight, const torch::Tensor& mask, bool training,
                           double prune_below = 1e-3);

}  // namespace fgl::nn

#endif  // FGL_NN_CONV_INIT_H_
