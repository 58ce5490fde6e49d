// FedGTA's client-side summary of its subgraph (Li et al., VLDB 2024, as OpenFGL runs it): soft
// labels propagated over the graph, their mixed moments (what the server compares between
// clients) and a confidence weight (how much the client's model counts in an aggregate).
#ifndef FGL_METHODS_FEDGTA_TOPOLOGY_MOMENTS_H_
#define FGL_METHODS_FEDGTA_TOPOLOGY_MOMENTS_H_

#include <torch/torch.h>

#include "graph/csr_graph.h"

namespace fgl::methods::fedgta {

// PyG LabelPropagation: out_0 = y on `mask` rows, 0 elsewhere; `steps` times
// out = clamp(alpha * D^-1/2 A D^-1/2 out + (1 - alpha) * out_0, 0, 1). A without self-loops.
torch::Tensor LabelPropagation(const graph::CsrGraph& graph, const torch::Tensor& y,
                               const torch::Tensor& mask, int steps, double alpha);

// "hybrid" moments of x [N, C] over nodes: [mean x^p for p = 1..k] ++ [mean (x - mean x)^p for
// p = 1..k], flattened: 2 k C values.
torch::Tensor MixedMoments(const torch::Tensor& x, int num_moments);

// sum_i d_i (C / e - H(x_i)), d_i = 2 deg(i) (each undirected edge counted from both ends, as
// OpenFGL's degree(row) + degree(col)), H the entropy of row i of x [N, C]: >= 0, larger for
// confident predictions on well-connected nodes.
double ConfidenceWeight(const graph::CsrGraph& graph, const torch::Tensor& x);

}  // namespace fgl::methods::fedgta

#endif  // FGL_METHODS_FEDGTA_TOPOLOGY_MOMENTS_H_
