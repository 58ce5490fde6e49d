#include "nn/conv/linear_layer.h"

#include "nn/conv/init.h"

namespace fgl::nn {

LinearLayerImpl::LinearLayerImpl(const LinearLayerOptions& options_) : options(options_) { reset(); }

void LinearLayerImpl::reset() {
  weight = register_parameter("weight", torch::empty({options.in_features(), options.out_features()}));
  bias = options.bias() ? register_parameter("bias", torch::empty({options.out_features()}))
                        : register_parameter("bias", torch::Tensor(), false);
  if (options.masked()) mask = register_parameter("mask", torch::ones({options.in_features(), options.out_features()}));
  reset_parameters();
}

void LinearLayerImpl::reset_parameters() { LinearUniform(weight, bias, options.in_features()); }

void LinearLayerImpl::pretty_print(std::ostream& stream) const {
  stream << "LinearLayer(" << options.in_features() << ", " << options.out_features()
         << ", bias=" << options.bias() << ")";
}

torch::Tensor LinearLayerImpl::forward(const NodeFeatures& x) {
  TORCH_CHECK(x.width() == options.in_features(), "LinearLayer: input width ", x.width(),
              " != in_features ", options.in_features());
  const torch::Tensor w = mask.defined() ? MaskedWeight(weight, mask, is_training()) : weight;
  torch::Tensor out = x.MatMul(w);
  return bias.defined() ? out + bias : out;
}

}  // namespace fgl::nn
