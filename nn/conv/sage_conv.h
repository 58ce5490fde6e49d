// SAGEConv with PyG semantics (mean aggregation, root weight):
// out_i = W_l mean_{j in N(i)} x_j + W_r x_i + b.
#ifndef FGL_NN_CONV_SAGE_CONV_H_
#define FGL_NN_CONV_SAGE_CONV_H_

#include <torch/torch.h>

#include "nn/conv/linear_layer.h"
#include "nn/graph_view.h"

namespace fgl::nn {

/// Options for `SAGEConv`. Example: `SAGEConv conv(SAGEConvOptions(1433, 64));`
struct SAGEConvOptions {
  SAGEConvOptions(int64_t in_channels, int64_t out_channels)
      : in_channels_(in_channels), out_channels_(out_channels) {}
  TORCH_ARG(int64_t, in_channels);   ///< No effect after construction.
  TORCH_ARG(int64_t, out_channels);  ///< No effect after construction.
  TORCH_ARG(bool, root_weight) = true;  ///< Add W_r x_i (PyG default).
  TORCH_ARG(bool, bias) = true;         ///< Bias of the neighbour transform (PyG lin_l).
};

class SAGEConvImpl : public torch::nn::Cloneable<SAGEConvImpl> {
 public:
  explicit SAGEConvImpl(const SAGEConvOptions& options_);
  void reset() override;  // registers lin_l (with bias) and lin_r (no bias)
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  /// x: float [N, in]. Returns float [N, out]. Nodes without neighbours aggregate zeros.
  torch::Tensor forward(const NodeFeatures& x, const GraphView& graph);

  SAGEConvOptions options;
  LinearLayer lin_l{nullptr}, lin_r{nullptr};
};
TORCH_MODULE(SAGEConv);

}  // namespace fgl::nn

#endif  // FGL_NN_CONV_SAGE_CONV_H_
