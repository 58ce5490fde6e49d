// GINConv (Xu et al.) with a two-layer MLP: out = MLP((1 + eps) x_i + sum_{j in N(i)} x_j),
// MLP = Linear(in, hidden) -> ReLU -> Linear(hidden, out).
#ifndef FGL_NN_CONV_GIN_CONV_H_
#define FGL_NN_CONV_GIN_CONV_H_

#include <torch/torch.h>

#include "nn/conv/linear_layer.h"
#include "nn/graph_view.h"

namespace fgl::nn {

/// Options for `GINConv`. Example: `GINConv conv(GINConvOptions(1433, 64, 64).train_eps(true));`
struct GINConvOptions {
  GINConvOptions(int64_t in_channels, int64_t hidden_channels, int64_t out_channels)
      : in_channels_(in_channels), hidden_channels_(hidden_channels), out_channels_(out_channels) {}
  TORCH_ARG(int64_t, in_channels);      ///< No effect after construction.
  TORCH_ARG(int64_t, hidden_channels);  ///< MLP hidden width. No effect after construction.
  TORCH_ARG(int64_t, out_channels);     ///< No effect after construction.
  TORCH_ARG(double, eps) = 0.0;         ///< Initial epsilon.
  TORCH_ARG(bool, train_eps) = false;   ///< Learn epsilon. No effect after construction.
};

class GINConvImpl : public torch::nn::Cloneable<GINConvImpl> {
 public:
  explicit GINConvImpl(const GINConvOptions& options_);
  void reset() override;  // registers mlp1, mlp2 and `eps` (a parameter when train_eps)
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const NodeFeatures& x, const GraphView& graph);

  GINConvOptions options;
  LinearLayer mlp1{nullptr}, mlp2{nullptr};
  torch::Tensor eps;
};
TORCH_MODULE(GINConv);

}  // namespace fgl::nn

#endif  // FGL_NN_CONV_GIN_CONV_H_
