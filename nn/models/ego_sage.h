// FedEgo's backbone (seeds_fedego.md §2): reduction layers Θ = ReLU(Linear(d, h)), then
// personalisation layers Φ = L mean-aggregator SAGE layers on fixed-shape ego-trees (L hops,
// fan-out f, sampled with replacement, graph/ego_graph.h) and a bias-free classifier.
//
// Spec: "ego_sage:layers=2,hidden=512,fanout=6,dropout=0.5,inner_act=relu,batch=32,epoch_fraction=0.2"
// (and reduction=linear|sage, fanout 0 for FedEgo w/o EGO).
// dropout acts after Θ (one mask per node of the batch) and before the classifier; inner_act=none drops the activation between
// SAGE layers (FedEgo-Linear; the last layer keeps its ReLU, as the official code). Trains on
// mini-batches (GnnModel::MiniBatching). Parameter groups: "reduction" (Θ), "body" (the SAGE
// layers) and "head" (the classifier); Φ = body + head.
#ifndef FGL_NN_MODELS_EGO_SAGE_H_
#define FGL_NN_MODELS_EGO_SAGE_H_

#include <torch/torch.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "nn/conv/linear_layer.h"
#include "nn/models/gnn_model.h"

namespace fgl::nn {

struct EgoSageOptions {
  int64_t layers = 2;  // SAGE layers = ego-tree hops
  int64_t hidden = 512;
  int64_t fanout = 6;
  double dropout = 0.5;
  bool inner_relu = true;
  int64_t batch = 32;
  double epoch_fraction = 0.2;
  // Θ: "linear" = ReLU(Linear(d, h)) per node (FedEgo); "sage" = two mean-aggregator SAGE layers
  // d -> h -> h with ReLU over the client's graph (FedEgo w/o EGO, with fanout 0: Φ sees the
  // centre alone, an MLP).
  bool sage_reduction = false;
};

class EgoSage final : public GnnModel {
 public:
  // in_features 0: the personalisation layers only (FedEgo's server model, fed embeddings).
  EgoSage(const EgoSageOptions& options, int64_t in_features, int64_t num_classes);

  // One fresh ego-tree per centre, from the thread's stochastic stream (nn/ops/dropout.h).
  ModelOutput forward(const NodeFeatures& x, const GraphView& graph) override;
  ModelOutput forward_centres(const NodeFeatures& x, const GraphView& graph,
                              const torch::Tensor& centres) override;

  // Θ for every node of `graph`, [N, hidden] (no dropout).
  torch::Tensor Reduce(const NodeFeatures& x, const GraphView& graph);
  // Θ at `nodes` only (int64 [k], ascending ids), [k, hidden]: the rows of Reduce(). A SAGE Θ
  // computes just their two-hop receptive field, not the whole graph.
  torch::Tensor ReduceAt(const NodeFeatures& x, const GraphView& graph, const torch::Tensor& nodes);
  // Φ on position-aligned embeddings `tree_embeddings` [B, tree_size, hidden] (zero rows where
  // `valid` [B, tree_size] is false): the centres' embedding and logits.
  ModelOutput Personalise(const torch::Tensor& tree_embeddings, const torch::Tensor& valid);
  // Φ's SAGE layers alone: the centres' embedding [B, hidden].
  torch::Tensor PersonalisedEmbedding(const torch::Tensor& tree_embeddings, const torch::Tensor& valid);

  const EgoSageOptions& options() const { return o_; }
  int64_t tree_size() const { return tree_size_; }
  int64_t in_features() const override { return in_; }
  int64_t num_classes() const override { return classes_; }
  int64_t embedding_dim() const override { return o_.hidden; }
  std::string spec() const override;
  std::optional<MiniBatching> mini_batching() const override {
    return MiniBatching{o_.batch, o_.epoch_fraction};
  }

 private:
  EgoSageOptions o_;
  int64_t in_, classes_, tree_size_;
  // The classifier (after dropout) on the centres' embedding.
  ModelOutput Classify(const torch::Tensor& embedding);

  LinearLayer reduction_{nullptr}, head_{nullptr};
  torch::nn::ModuleList sage_reduction_{nullptr};  // reduction=sage: two SAGEConv
  torch::nn::ModuleList body_{nullptr};  // per layer: lin_l (bias), lin_r (no bias)
};

// Parses an "ego_sage:..." spec (the keys above); InvalidArgument naming a bad key or value.
absl::StatusOr<EgoSageOptions> ParseEgoSageSpec(const std::string& spec);

}  // namespace fgl::nn

#endif  // FGL_NN_MODELS_EGO_SAGE_H_
