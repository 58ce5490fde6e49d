#include "nn/conv/init.h"

#include <cmath>

namespace fgl::nn {

void GlorotUniform(torch::Tensor& t) {
  torch::NoGradGuard no_grad;
  const int64_t fan_out = t.size(-1), fan_in = t.size(-2);
  const double a = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  t.uniform_(-a, a);
}

void LinearUniform(torch::Tensor& weight, torch::Tensor& bias, int64_t fan_in) {
  torch::NoGradGuard no_grad;
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  weight.uniform_(-bound, bound);
  if (bias.defined()) bias.uniform_(-bound, bound);
}

torch::Tensor MaskedWeight(const torch::Tensor& weight, const torch::Tensor& mask, bool training,
                           double prune_below) {
  if (training) return weight * mask;
  return weight * (mask * (mask.abs() >= prune_below).to(mask.scalar_type()));
}

}  // namespace fgl::nn
