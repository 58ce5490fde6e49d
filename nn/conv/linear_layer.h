// A fully connected layer that accepts sparse node features (weight stored [in, out]).
#ifndef FGL_NN_CONV_LINEAR_LAYER_H_
#define FGL_NN_CONV_LINEAR_LAYER_H_

#include <torch/torch.h>

#include "nn/graph_view.h"

namespace fgl::nn {

/// Options for `LinearLayer` (torch.nn.Linear initialisation).
/// Example: `LinearLayer fc(LinearLayerOptions(64, 7).bias(false));`
struct LinearLayerOptions {
  LinearLayerOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  TORCH_ARG(int64_t, in_features);   ///< No effect after construction.
  TORCH_ARG(int64_t, out_features);  ///< No effect after construction.
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(bool, masked) = false;  ///< A learnable elementwise weight mask (ones at init; FED-PUB).
};

class LinearLayerImpl : public torch::nn::Cloneable<LinearLayerImpl> {
 public:
  explicit LinearLayerImpl(const LinearLayerOptions& options_);
  void reset() override;
  void reset_parameters();  // U(-1/sqrt(in), 1/sqrt(in)) for weight and bias
  void pretty_print(std::ostream& stream) const override;
  /// x: float [N, in_features]. Returns float [N, out_features].
  torch::Tensor forward(const NodeFeatures& x);

  LinearLayerOptions options;
  torch::Tensor weight, bias, mask;  // mask: only when options.masked()
};
TORCH_MODULE(LinearLayer);

}  // namespace fgl::nn

#endif  // FGL_NN_CONV_LINEAR_LAYER_H_
