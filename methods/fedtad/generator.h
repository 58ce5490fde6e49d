// FedTAD's server-side synthetic data: a conditional generator of pseudo node features and the
// kNN graph the teachers and the global model read them on (B.1.4 of the note).
#ifndef FGL_METHODS_FEDTAD_GENERATOR_H_
#define FGL_METHODS_FEDTAD_GENERATOR_H_

#include <torch/torch.h>

#include "absl/status/statusor.h"
#include "graph/csr_graph.h"

namespace fgl::methods::fedtad {

// x = Linear(256 -> F)(tanh-MLP(concat(Embedding(C, C)(y), z))) with widths 64, 128, 256, as the
// official FedTAD_ConGenerator (no dropout; PyTorch default initialisation).
class ConditionalGeneratorImpl : public torch::nn::Module {
 public:
  ConditionalGeneratorImpl(int64_t noise_dim, int64_t num_classes, int64_t num_features);
  // z [B, noise_dim], labels int64 [B] -> pseudo features [B, num_features].
  torch::Tensor forward(const torch::Tensor& z, const torch::Tensor& labels);

 private:
  torch::nn::Embedding label_embedding_{nullptr};
  torch::nn::Linear l1_{nullptr}, l2_{nullptr}, l3_{nullptr}, out_{nullptr};
};
TORCH_MODULE(ConditionalGenerator);

// B labels, floor(B / C) per class and the remainder in the last class (the official code's
// fixed pseudo labels). Requires B >= C >= 1.
torch::Tensor PseudoLabels(int64_t num_nodes, int64_t num_classes);

// The pseudo graph on generated features x [B, F] (official `construct_graph`): each node's k
// nearest by cosine (itself included), symmetrised, and a self-loop of weight `self_loop_weight`
// on every node. The code adds self-loops twice, but PyG's GCN normalisation replaces existing
// loops by one of weight 1 (add_remaining_self_loops), so 1 is what the official model sees.
// Not differentiable: gradients reach the generator through the features only.
absl::StatusOr<graph::CsrGraph> KnnPseudoGraph(const torch::Tensor& x, int64_t k,
                                               float self_loop_weight);

}  // namespace fgl::methods::fedtad

#endif  // FGL_METHODS_FEDTAD_GENERATOR_H_
