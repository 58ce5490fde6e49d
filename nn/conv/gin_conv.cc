#include "nn/conv/gin_conv.h"

#include "nn/ops/spmm.h"

namespace fgl::nn {

GINConvImpl::GINConvImpl(const GINConvOptions& options_) : options(options_) { reset(); }

void GINConvImpl::reset() {
  mlp1 = register_module("mlp1", LinearLayer(LinearLayerOptions(options.in_channels(),
                                                                options.hidden_channels())));
  mlp2 = register_module("mlp2", LinearLayer(LinearLayerOptions(options.hidden_channels(),
                                                                options.out_channels())));
  eps = options.train_eps() ? register_parameter("eps", torch::full({1}, options.eps()))
                            : register_buffer("eps", torch::full({1}, options.eps()));
}

void GINConvImpl::reset_parameters() {
  mlp1->reset_parameters();
  mlp2->reset_parameters();
  torch::NoGradGuard no_grad;
  eps.fill_(options.eps());
}

void GINConvImpl::pretty_print(std::ostream& stream) const {
  stream << "GINConv(" << options.in_channels() << ", " << options.hidden_channels() << ", "
         << options.out_channels() << ", eps=" << options.eps()
         << ", train_eps=" << options.train_eps() << ")";
}

torch::Tensor GINConvImpl::forward(const NodeFeatures& x, const GraphView& graph) {
  TORCH_CHECK(x.width() == options.in_channels(), "GINConv: input width ", x.width(),
              " != in_channels ", options.in_channels());
  TORCH_CHECK(x.num_nodes() == graph.num_nodes(), "GINConv: ", x.num_nodes(),
              " feature rows for a graph of ", graph.num_nodes(), " nodes");
  // ((1 + eps) x + A x) W1 = (1 + eps)(x W1) + A (x W1): transform first (sparse-friendly).
  torch::Tensor h = x.MatMul(mlp1->weight);
  h = (1 + eps) * h + Spmm(graph.adjacency(), graph.sum_weights(), h) + mlp1->bias;
  return mlp2->forward(torch::relu(h));
}

}  // namespace fgl::nn
