// GraphSAGE on sampled neighbours as stellargraph builds it (the FedSage code's LocSage /
// FedSage / FedSage+ classifier, seeds_fedmpa_nodelevel.md A.6): L mean-aggregator layers on a
// fixed-shape tree of `fanout` neighbours per hop, drawn with replacement (graph/ego_graph.h);
// each layer is concat(x_self W_self, mean(x_neigh) W_neigh) + b (out - out/2 and out/2 wide),
// dropout on both inputs, ReLU except after the last; the output is L2-normalised and a dense
// head gives the logits. Glorot kernels, zero biases (Keras).
//
// Spec: "sampled_sage:sizes=64-32,fanout=5,dropout=0,batch=32,epoch_fraction=1,project_first=0".
// Trains on mini-batches (GnnModel::MiniBatching): each epoch passes over epoch_fraction of the nodes.
// project_first=1: the first layer multiplies every node's features by its kernels once and reads
// the trees' rows from the products, when the trees have more positions than the graph has nodes
// and no dropout acts (a whole-graph forward: 31 positions per centre at fanout 5, 2 layers).
// The same function rounded differently, so it is a key of its own; it never gathers the
// [positions, F] rows (5.9 GB for a FedSage+ client on Coauthor-Physics, M = 3).
#ifndef FGL_NN_MODELS_SAMPLED_SAGE_H_
#define FGL_NN_MODELS_SAMPLED_SAGE_H_

#include <torch/torch.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nn/models/gnn_model.h"

namespace fgl::nn {

struct SampledSageOptions {
  std::vector<int64_t> sizes = {64, 32};  // per layer; the self half gets the odd unit
  int64_t fanout = 5;
  double dropout = 0.0;  // stellargraph's default, which the FedSage code keeps
  int64_t batch = 32;
  double epoch_fraction = 1.0;
  bool project_first = false;
};

class SampledSage final : public GnnModel {
 public:
  SampledSage(const SampledSageOptions& options, int64_t in_features, int64_t num_classes);

  // One fresh tree per centre, from the thread's stochastic stream (nn/ops/dropout.h).
  ModelOutput forward(const NodeFeatures& x, const GraphView& graph) override;
  ModelOutput forward_centres(const NodeFeatures& x, const GraphView& graph, const torch::Tensor& centres) override;

  int64_t in_features() const override { return in_; }
  int64_t num_classes() const override { return classes_; }
  int64_t embedding_dim() const override { return o_.sizes.back(); }
  std::string spec() const override;
  std::optional<MiniBatching> mini_batching() const override { return MiniBatching{o_.batch, o_.epoch_fraction}; }

 private:
  SampledSageOptions o_;
  int64_t in_, classes_;
  torch::nn::ModuleList body_{nullptr};
  torch::nn::Linear head_{nullptr};
};

// Parses a "sampled_sage:..." spec; InvalidArgument naming a bad key or value.
absl::StatusOr<SampledSageOptions> ParseSampledSageSpec(const std::string& spec);

}  // namespace fgl::nn

#endif  // FGL_NN_MODELS_SAMPLED_SAGE_H_
