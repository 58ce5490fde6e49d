#include "nn/conv/gat_conv.h"

#include "nn/conv/init.h"
#include "nn/ops/dropout.h"
#include "nn/ops/spmm.h"

namespace fgl::nn {

GATConvImpl::GATConvImpl(const GATConvOptions& options_) : options(options_) { reset(); }

void GATConvImpl::reset() {
  const int64_t h = options.heads(), c = options.out_channels();
  weight = register_parameter("weight", torch::empty({options.in_channels(), h * c}));
  att_src = register_parameter("att_src", torch::empty({h, c}));
  att_dst = register_parameter("att_dst", torch::empty({h, c}));
  const int64_t bias_width = options.concat() ? h * c : c;
  bias = options.bias() ? register_parameter("bias", torch::empty({bias_width}))
                        : register_parameter("bias", torch::Tensor(), false);
  reset_parameters();
}

void GATConvImpl::reset_parameters() {
  GlorotUniform(weight);
  // PyG initialises att as [1, heads, out] with glorot over (heads, out).
  GlorotUniform(att_src);
  GlorotUniform(att_dst);
  if (bias.defined()) {
    torch::NoGradGuard no_grad;
    bias.zero_();
  }
}

int64_t GATConvImpl::output_width() const {
  return options.concat() ? options.heads() * options.out_channels() : options.out_channels();
}

void GATConvImpl::pretty_print(std::ostream& stream) const {
  stream << "GATConv(" << options.in_channels() << ", " << options.out_channels()
         << ", heads=" << options.heads() << ", concat=" << options.concat()
         << ", dropout=" << options.dropout() << ")";
}

torch::Tensor RowSoftmax(const CsrPattern& pattern, const torch::Tensor& scores) {
  const torch::Tensor& row = pattern.row_index();
  const int64_t heads = scores.size(1);
  torch::Tensor index = row.unsqueeze(1).expand({row.size(0), heads});
  // The row maximum only stabilises exp(); it carries no gradient.
  torch::Tensor row_max =
      torch::full({pattern.rows(), heads}, -std::numeric_limits<float>::infinity(), scores.options())
          .scatter_reduce(0, index, scores.detach(), "amax", /*include_self=*/true);
  torch::Tensor e = (scores - row_max.index_select(0, row)).exp();
  torch::Tensor denom = torch::zeros({pattern.rows(), heads}, scores.options()).index_add(0, row, e);
  return e / (denom.index_select(0, row) + 1e-16);
}

std::vector<torch::Tensor> GatAttend(const torch::Tensor& wx, const torch::Tensor& att_src,
                                     const torch::Tensor& att_dst, const GraphView& graph,
                                     double negative_slope, double dropout, bool training) {
  const int64_t h = wx.size(1);
  torch::Tensor a_src = (wx * att_src).sum(-1);  // [N, H]
  torch::Tensor a_dst = (wx * att_dst).sum(-1);
  const CsrPattern& p = graph.adjacency_with_self_loops();
  // Row i aggregates messages from its neighbours j (col): e_ij = a_dst[i] + a_src[j].
  torch::Tensor scores = torch::leaky_relu(
      a_dst.index_select(0, p.row_index()) + a_src.index_select(0, p.col()), negative_slope);
  torch::Tensor alpha = RowSoftmax(p, scores);
  alpha = Dropout(alpha, dropout, training);
  std::vector<torch::Tensor> outs;
  outs.reserve(h);
  for (int64_t k = 0; k < h; ++k) {
    outs.push_back(Spmm(p, alpha.select(1, k).contiguous(), wx.select(1, k).contiguous()));
  }
  return outs;
}

torch::Tensor GATConvImpl::forward(const NodeFeatures& x, const GraphView& graph) {
  TORCH_CHECK(x.width() == options.in_channels(), "GATConv: input width ", x.width(),
              " != in_channels ", options.in_channels());
  TORCH_CHECK(x.num_nodes() == graph.num_nodes(), "GATConv: ", x.num_nodes(),
              " feature rows for a graph of ", graph.num_nodes(), " nodes");
  const int64_t n = x.num_nodes(), h = options.heads(), c = options.out_channels();
  torch::Tensor wx = x.MatMul(weight).view({n, h, c});
  std::vector<torch::Tensor> outs =
      GatAttend(wx, att_src, att_dst, graph, options.negative_slope(), options.dropout(), is_training());
  torch::Tensor out = options.concat() ? torch::cat(outs, 1) : torch::stack(outs, 0).mean(0);
  return bias.defined() ? out + bias : out;
}

}  // namespace fgl::nn
