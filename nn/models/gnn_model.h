// GNN models built from a short spec, each returning the last hidden layer (embedding) and the
// logits, with named parameter groups so a method can share part of a model.
//
// Specs: "gcn:layers=2,hidden=64,dropout=0.5", "gcn:layers=8,jk=max", "gat:heads=8,hidden=8",
// "sage", "gin", "sgc:k=2", "sgc:k=2,hidden=64", "appnp:k=10,alpha=0.1", "mlp".
// Common keys: layers, hidden, dropout, input_dropout; gcn/gat/sage/gin also act=relu|elu. GAT: heads, out_heads, attn_dropout.
// mlp/appnp: init=torch|glorot (glorot: Keras's Glorot-uniform weights and zero biases).
// APPNP: k, alpha, prop_dropout (dropout on the propagated term at every step, as stellargraph).
// GIN: train_eps. JK (gcn/gat/sage/gin): jk=max|cat|last (last: the last hidden layer feeds a
// linear head). gcn also masked=true: learnable elementwise weight masks (FED-PUB).
// "ego_sage:..." is FedEgo's ego-tree model (nn/models/ego_sage.h).
#ifndef FGL_NN_MODELS_GNN_MODEL_H_
#define FGL_NN_MODELS_GNN_MODEL_H_

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nn/graph_view.h"

namespace fgl::nn {

struct ModelOutput {
  // [N, embedding_dim]: the last hidden layer after its activation, before dropout (FedGKC §A.1.3); with
  // JK, the JK readout.
  torch::Tensor embedding;
  torch::Tensor logits;     // [N, num_classes]
  // [N, width]: the last message-passing layer's output before its activation (FED-PUB's
  // functional embedding in the authors' code); undefined for models without one.
  torch::Tensor pre_activation;
};

class GnnModel : public torch::nn::Module {
 public:
  virtual ModelOutput forward(const NodeFeatures& x, const GraphView& graph) = 0;
  virtual int64_t in_features() const = 0;
  virtual int64_t num_classes() const = 0;
  virtual int64_t embedding_dim() const = 0;
  // The spec it was built from, normalised with every default spelled out.
  virtual std::string spec() const = 0;

  // How a model trains on sampled mini-batches of centre nodes (ego-tree models) instead of
  // full-batch: each local epoch takes floor(epoch_fraction * num_nodes) random training nodes in
  // batches of batch_size, one optimiser step per batch. nullopt: full-batch (every other model).
  struct MiniBatching {
    int64_t batch_size = 32;
    double epoch_fraction = 0.2;
  };
  virtual std::optional<MiniBatching> mini_batching() const { return std::nullopt; }
  // The output on `centres` (int64 node ids) only, rows in their order. Default: the full
  // forward pass, then those rows.
  virtual ModelOutput forward_centres(const NodeFeatures& x, const GraphView& graph,
                                      const torch::Tensor& centres);

  // "body" (everything but the classifier) and "head" (the final layer).
  std::vector<std::string> parameter_groups() const { return {"body", "head"}; }
  // Parameters of one group, in registration order; empty for an unknown group.
  std::vector<torch::Tensor> group_parameters(const std::string& group) const;
  // Named parameters of one group ("head.weight", "body.0.weight", ...).
  std::vector<std::pair<std::string, torch::Tensor>> named_group_parameters(
      const std::string& group) const;
};

// Builds a model; InvalidArgument for an unknown key or bad value, NotFound for an unknown name.
absl::StatusOr<std::shared_ptr<GnnModel>> MakeModel(const std::string& spec, int64_t in_features,
                                                     int64_t num_classes);

// The memory a model may take (--max_model_memory_gb, default 80% of the machine's): MakeModel
// refuses a GNN or MLP whose parameters with gradients and Adam state exceed it
// (ResourceExhausted, naming the spec), and a stacked GNN's forward on a graph whose activations
// would (an exception naming the spec and the node count).
double ModelMemoryLimitBytes();

// Checks x and graph against the model: widths, node counts, finite features.
absl::Status CheckModelInput(const GnnModel& model, const NodeFeatures& x, const GraphView& graph);

}  // namespace fgl::nn

#endif  // FGL_NN_MODELS_GNN_MODEL_H_
