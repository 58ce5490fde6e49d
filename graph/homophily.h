// Label homophily measures of a graph.
#ifndef FGL_GRAPH_HOMOPHILY_H_
#define FGL_GRAPH_HOMOPHILY_H_

#include <torch/torch.h>

#include <vector>

#include "graph/csr_graph.h"

namespace fgl::graph {

// Fraction of stored entries (u, v) with y[u] == y[v] (Zhu et al. 2020). 0 for no edges. O(E).
double EdgeHomophily(const CsrGraph& graph, const torch::Tensor& labels);

// Mean over nodes with degree > 0 of the fraction of same-label neighbours (Pei et al. 2020). O(E).
double NodeHomophily(const CsrGraph& graph, const torch::Tensor& labels);

// Per class c: h_c = (same-label entries from class-c nodes) / (entries from class-c nodes),
// 0 for classes without edges (Lim et al. 2021). O(E + C).
std::vector<double> ClassWiseHomophily(const CsrGraph& graph, const torch::Tensor& labels,
                                       int64_t num_classes);

// Class-insensitive homophily: 1/(C-1) * sum_c max(0, h_c - |class c| / N) (Lim et al. 2021).
double ClassHomophily(const CsrGraph& graph, const torch::Tensor& labels, int64_t num_classes);

}  // namespace fgl::graph

#endif  // FGL_GRAPH_HOMOPHILY_H_
