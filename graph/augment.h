// Graph augmentations for contrastive methods: edge dropping and feature masking.
#ifndef FGL_GRAPH_AUGMENT_H_
#define FGL_GRAPH_AUGMENT_H_

#include <torch/torch.h>

#include "graph/csr_graph.h"
#include "graph/random.h"

namespace fgl::graph {

// Drops each undirected edge {u, v} with probability `p`, keeping the graph symmetric. O(E).
CsrGraph DropEdges(const CsrGraph& graph, double p, Rng& rng);

// What DropEdges keeps, drawn from `rng` exactly as DropEdges draws: bool [num_entries] over the
// CSR entries, one draw per undirected edge {u, v} (at its u < v entry), both directions alike.
// For tests that hand our draws to another implementation. O(E).
torch::Tensor EdgeKeepMask(const CsrGraph& graph, double p, Rng& rng);

// The keep mask of MaskFeatureColumns: float [f], each entry 0 with probability `p`, else 1.
torch::Tensor FeatureColumnKeepMask(int64_t f, double p, Rng& rng);

// Zeroes each feature column with probability `p` (the same columns for every node, GraphCL). O(N F).
torch::Tensor MaskFeatureColumns(const torch::Tensor& features, double p, Rng& rng);

}  // namespace fgl::graph

#endif  // FGL_GRAPH_AUGMENT_H_
