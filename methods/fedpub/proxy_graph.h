// FED-PUB's proxy graph: a random graph every client feeds its model, so that models can be
// compared by function (their mean output) without any client's data.
#ifndef FGL_METHODS_FEDPUB_PROXY_GRAPH_H_
#define FGL_METHODS_FEDPUB_PROXY_GRAPH_H_

#include <torch/torch.h>

#include "absl/status/statusor.h"
#include "graph/csr_graph.h"

namespace fgl::methods::fedpub {

struct ProxyGraph {
  graph::CsrGraph graph;
  torch::Tensor features;  // float32 [num_nodes, num_features], N(0, 1)
};

// networkx random_partition_graph([block] * blocks, p_in, 0): `blocks` Erdos-Renyi G(block, p_in)
// components, and standard normal features; everything drawn from `seed` (every client builds
// the same graph from the seed the server sends). FED-PUB: 5 blocks of 100, p_in 0.1.
absl::StatusOr<ProxyGraph> MakeProxyGraph(int64_t num_features, uint64_t seed, int blocks = 5,
                                          int block_size = 100, double p_in = 0.1);

}  // namespace fgl::methods::fedpub

#endif  // FGL_METHODS_FEDPUB_PROXY_GRAPH_H_
