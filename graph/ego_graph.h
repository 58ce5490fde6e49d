// Fixed-shape k-hop ego-graph sampling with replacement (FedEgo: 2 hops, fan-out 6, 43 nodes).
#ifndef FGL_GRAPH_EGO_GRAPH_H_
#define FGL_GRAPH_EGO_GRAPH_H_

#include <torch/torch.h>

#include <cstdint>

#include "absl/types/span.h"
#include "graph/csr_graph.h"
#include "graph/random.h"

namespace fgl::graph {

// Positions of a complete fan-out tree: position 0 is the centre; position p at depth < hops has
// children fanout*p + 1 .. fanout*p + fanout. Size 1 + f + f^2 + ... + f^hops; fanout 0 is the
// centre alone (FedEgo w/o EGO).
int64_t EgoTreeSize(int hops, int fanout);

// For each centre, draws every child uniformly with replacement from its parent's neighbours.
// Returns int64 [centres, EgoTreeSize] of node ids; -1 where the parent is -1 or has no
// neighbour (an isolated centre's tree is just the root). complexity: O(centres * size).
torch::Tensor SampleEgoTrees(const CsrGraph& graph, absl::Span<const int64_t> centres, int hops,
                             int fanout, Rng& rng);

// FedEgo's server view of a mashed ego-tree: a fresh tree of the same shape whose every node's
// children are drawn with replacement from its source's children. Returns int64 [count, size]:
// new position q reads source position out[., q] (the centre reads 0).
torch::Tensor ResampleEgoTreePositions(int hops, int fanout, int64_t count, Rng& rng);

}  // namespace fgl::graph

#endif  // FGL_GRAPH_EGO_GRAPH_H_
