#include "nn/conv/sage_conv.h"

#include "nn/ops/spmm.h"

namespace fgl::nn {

SAGEConvImpl::SAGEConvImpl(const SAGEConvOptions& options_) : options(options_) { reset(); }

void SAGEConvImpl::reset() {
  lin_l = register_module("lin_l", LinearLayer(LinearLayerOptions(options.in_channels(),
                                                                  options.out_channels())
                                                   .bias(options.bias())));
  if (options.root_weight()) {
    lin_r = register_module("lin_r", LinearLayer(LinearLayerOptions(options.in_channels(),
                                                                    options.out_channels())
                                                     .bias(false)));
  }
}

void SAGEConvImpl::reset_parameters() {
  lin_l->reset_parameters();
  if (lin_r) lin_r->reset_parameters();
}

void SAGEConvImpl::pretty_print(std::ostream& stream) const {
  stream << "SAGEConv(" << options.in_channels() << ", " << options.out_channels()
         << ", aggr=mean, root_weight=" << options.root_weight() << ")";
}

torch::Tensor SAGEConvImpl::forward(const NodeFeatures& x, const GraphView& graph) {
  TORCH_CHECK(x.num_nodes() == graph.num_nodes(), "SAGEConv: ", x.num_nodes(),
              " feature rows for a graph of ", graph.num_nodes(), " nodes");
  TORCH_CHECK(x.width() == options.in_channels(), "SAGEConv: input width ", x.width(),
              " != in_channels ", options.in_channels());
  // mean_j(x_j) W_l = mean_j(x_j W_l): transform first, so sparse features stay sparse.
  torch::Tensor h = x.MatMul(lin_l->weight);
  torch::Tensor out = Spmm(graph.adjacency(), graph.mean_weights(), h);
  if (lin_l->bias.defined()) out = out + lin_l->bias;
  if (lin_r) out = out + lin_r->forward(x);
  return out;
}

}  // namespace fgl::nn
