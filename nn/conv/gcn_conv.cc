#include "nn/conv/gcn_conv.h"

#include "nn/conv/init.h"
#include "nn/ops/spmm.h"

namespace fgl::nn {

GCNConvImpl::GCNConvImpl(const GCNConvOptions& options_) : options(options_) { reset(); }

void GCNConvImpl::reset() {
  weight = register_parameter("weight", torch::empty({options.in_channels(), options.out_channels()}));
  bias = options.bias() ? register_parameter("bias", torch::empty({options.out_channels()}))
                        : register_parameter("bias", torch::Tensor(), /*requires_grad=*/false);
  if (options.masked()) mask = register_parameter("mask", torch::ones({options.in_channels(), options.out_channels()}));
  reset_parameters();
}

void GCNConvImpl::reset_parameters() {
  GlorotUniform(weight);
  if (bias.defined()) {
    torch::NoGradGuard no_grad;
    bias.zero_();
  }
}

void GCNConvImpl::pretty_print(std::ostream& stream) const {
  stream << "GCNConv(" << options.in_channels() << ", " << options.out_channels()
         << ", bias=" << options.bias() << ")";
}

torch::Tensor GcnPropagate(const torch::Tensor& h, const GraphView& graph) {
  return Spmm(graph.adjacency_with_self_loops(), graph.gcn_weights(), h);
}

torch::Tensor RowPropagate(const torch::Tensor& h, const GraphView& graph) {
  return Spmm(graph.adjacency_with_self_loops(), graph.row_weights(), h);
}

torch::Tensor GCNConvImpl::forward(const NodeFeatures& x, const GraphView& graph) {
  TORCH_CHECK(x.width() == options.in_channels(), "GCNConv: input width ", x.width(),
              " != in_channels ", options.in_channels());
  TORCH_CHECK(x.num_nodes() == graph.num_nodes(), "GCNConv: ", x.num_nodes(),
              " feature rows for a graph of ", graph.num_nodes(), " nodes");
  const torch::Tensor w = mask.defined() ? MaskedWeight(weight, mask, is_training()) : weight;
  torch::Tensor out = options.row_norm() ? RowPropagate(x.MatMul(w), graph) : GcnPropagate(x.MatMul(w), graph);
  return bias.defined() ? out + bias : out;
}

}  // namespace fgl::nn
