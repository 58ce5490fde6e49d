// FedTAD's class-wise knowledge reliability (Eqs. 3-5): how much a client's model can be trusted
// on each class, from its labelled nodes' count and topology-aware homophily. Computed once per
// client and uploaded as C floats.
#ifndef FGL_METHODS_FEDTAD_RELIABILITY_H_
#define FGL_METHODS_FEDTAD_RELIABILITY_H_

#include <torch/torch.h>

#include "absl/status/statusor.h"
#include "graph/csr_graph.h"

namespace fgl::methods::fedtad {

enum class ReliabilityKind {
  kTopology = 0,   // Eq. 5 on hybrid embeddings (FedTAD)
  kEqual = 1,      // phi = 1 for every class (Fig. 4a "eq")
  kNodeCount = 2,  // phi = labelled nodes of the class (Fig. 4a "nv")
};

// float32 [num_classes] for the nodes of `train` (bool [N]) with int64 `labels`:
//   phi^c = sum_{i in train, y_i = c} (1 + sum_{j in N(i)} cos(h_i, h_j)) / (|N(i)| + 1)
// with h = features ‖ [T^1_ii .. T^p_ii] (random-walk return probabilities with self-loops,
// p = walk_length): the official code's form, which counts the node itself and so stays finite
// on isolated nodes. 0 for a class without labelled nodes. InvalidArgument on mismatched shapes
// or labels outside [0, num_classes).
absl::StatusOr<torch::Tensor> ClassReliability(const graph::CsrGraph& graph,
                                               const torch::Tensor& features,
                                               const torch::Tensor& labels,
                                               const torch::Tensor& train, int64_t num_classes,
                                               ReliabilityKind kind, int walk_length = 5);

// The privacy variant ("10% noise"): phi * (1 + sigma * eps), eps ~ N(0, 1) per class from
// `seed`, clipped at 0.
torch::Tensor PerturbReliability(const torch::Tensor& phi, double sigma, uint64_t seed);

}  // namespace fgl::methods::fedtad

#endif  // FGL_METHODS_FEDTAD_RELIABILITY_H_
