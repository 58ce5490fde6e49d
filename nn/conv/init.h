// Parameter initialisations with PyG's semantics.
#ifndef FGL_NN_CONV_INIT_H_
#define FGL_NN_CONV_INIT_H_

#include <torch/torch.h>

namespace fgl::nn {

// Glorot/Xavier uniform over the last two dims: U(-a, a), a = sqrt(6 / (fan_in + fan_out)).
void GlorotUniform(torch::Tensor& t);
// torch.nn.Linear / PyG Linear ('kaiming_uniform'): weight and bias U(-1/sqrt(fan_in), ...).
void LinearUniform(torch::Tensor& weight, torch::Tensor& bias, int64_t fan_in);

}  // namespace fgl::nn

#endif  // FGL_NN_CONV_INIT_H_
