// GCNConv (Kipf & Welling) with PyG semantics: out = D^-1/2 (A + I) D^-1/2 X W + b.
#ifndef FGL_NN_CONV_GCN_CONV_H_
#define FGL_NN_CONV_GCN_CONV_H_

#include <torch/torch.h>

#include "nn/graph_view.h"

namespace fgl::nn {

/// Options for `GCNConv` (PyG `GCNConv` defaults).
/// Example: `GCNConv conv(GCNConvOptions(1433, 64).bias(false));`
struct GCNConvOptions {
  GCNConvOptions(int64_t in_channels, int64_t out_channels)
      : in_channels_(in_channels), out_channels_(out_channels) {}
  TORCH_ARG(int64_t, in_channels);   ///< Input width. No effect after construction.
  TORCH_ARG(int64_t, out_channels);  ///< Output width. No effect after construction.
  TORCH_ARG(bool, bias) = true;      ///< Learnable additive bias (zeros at init).
  TORCH_ARG(bool, masked) = false;   ///< A learnable elementwise weight mask (ones at init; FED-PUB).
  TORCH_ARG(bool, row_norm) = false; ///< D^-1 (A + I) instead of D^-1/2 (A + I) D^-1/2 (FedGCN).
};

class GCNConvImpl : public torch::nn::Cloneable<GCNConvImpl> {
 public:
  explicit GCNConvImpl(const GCNConvOptions& options_);
  void reset() override;    // registers `weight` [in, out] and `bias`
  void reset_parameters();  // glorot weight, zero bias (PyG)
  void pretty_print(std::ostream& stream) const override;
  /// x: float [num_nodes, in_channels]. Returns float [num_nodes, out_channels].
  torch::Tensor forward(const NodeFeatures& x, const GraphView& graph);

  GCNConvOptions options;
  torch::Tensor weight, bias, mask;  // mask: only when options.masked()
};
TORCH_MODULE(GCNConv);

// GCN propagation alone: D^-1/2 (A + I) D^-1/2 h (SGC, APPNP and GCN use it).
torch::Tensor GcnPropagate(const torch::Tensor& h, const GraphView& graph);
// Row-normalised propagation D^-1 (A + I) h: each node's mean over itself and its neighbours.
torch::Tensor RowPropagate(const torch::Tensor& h, const GraphView& graph);

}  // namespace fgl::nn

#endif  // FGL_NN_CONV_GCN_CONV_H_
