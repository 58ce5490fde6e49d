// GATConv with PyG semantics: multi-head attention over each node's in-neighbours including
// itself, e_ij = LeakyReLU(a_src·W x_j + a_dst·W x_i, 0.2), softmax over j, dropout on the
// coefficients, heads concatenated or averaged, plus bias.
#ifndef FGL_NN_CONV_GAT_CONV_H_
#define FGL_NN_CONV_GAT_CONV_H_

#include <torch/torch.h>

#include <vector>

#include "nn/graph_view.h"

namespace fgl::nn {

/// Options for `GATConv`. Example: `GATConv conv(GATConvOptions(1433, 8).heads(8).dropout(0.6));`
struct GATConvOptions {
  GATConvOptions(int64_t in_channels, int64_t out_channels)
      : in_channels_(in_channels), out_channels_(out_channels) {}
  TORCH_ARG(int64_t, in_channels);       ///< No effect after construction.
  TORCH_ARG(int64_t, out_channels);      ///< Per head. No effect after construction.
  TORCH_ARG(int64_t, heads) = 1;         ///< No effect after construction.
  TORCH_ARG(bool, concat) = true;        ///< Concatenate heads (else mean). Takes effect at once.
  TORCH_ARG(double, negative_slope) = 0.2;
  TORCH_ARG(double, dropout) = 0.0;      ///< Dropout on attention coefficients (training only).
  TORCH_ARG(bool, bias) = true;
};

class GATConvImpl : public torch::nn::Cloneable<GATConvImpl> {
 public:
  explicit GATConvImpl(const GATConvOptions& options_);
  void reset() override;    // weight [in, heads*out], att_src/att_dst [heads, out], bias
  void reset_parameters();  // glorot weight and attention vectors, zero bias
  void pretty_print(std::ostream& stream) const override;
  /// Returns float [N, heads*out] (concat) or [N, out] (mean).
  torch::Tensor forward(const NodeFeatures& x, const GraphView& graph);
  int64_t output_width() const;

  GATConvOptions options;
  torch::Tensor weight, att_src, att_dst, bias;
};
TORCH_MODULE(GATConv);

// GATConv's aggregation of already projected features wx [N, heads, out] (split GAT: the users
// project, the server attends): per head, softmax over each node's in-neighbours and itself of
// LeakyReLU(att_dst·wx_i + att_src·wx_j), dropout on the coefficients (training only), and the
// weighted sum. Returns one [N, out] tensor per head.
std::vector<torch::Tensor> GatAttend(const torch::Tensor& wx, const torch::Tensor& att_src,
                                     const torch::Tensor& att_dst, const GraphView& graph,
                                     double negative_slope, double dropout, bool training);

// Softmax of `scores` [nnz, H] over the entries of each CSR row of `pattern`.
torch::Tensor RowSoftmax(const CsrPattern& pattern, const torch::Tensor& scores);

}  // namespace fgl::nn

#endif  // FGL_NN_CONV_GAT_CONV_H_
