// A randomly augmented copy of a graph and its features, as contrastive and self-distilling
// methods feed their models (FedGKC's weak and strong views, FGSSL's): each undirected edge
// dropped and each feature column zeroed (one mask for all nodes) with the given probabilities.
#ifndef FGL_NN_AUGMENTED_VIEW_H_
#define FGL_NN_AUGMENTED_VIEW_H_

#include "absl/status/statusor.h"
#include "graph/csr_graph.h"
#include "graph/random.h"
#include "nn/graph_view.h"

namespace fgl::nn {

struct AugmentedView {
  NodeFeatures features;
  GraphView graph;
};

// Draws the edges first, then the columns, from `rng`; a probability of 0 draws nothing and keeps
// that part as it is.
absl::StatusOr<AugmentedView> Augment(const graph::CsrGraph& graph, const NodeFeatures& features, torch::Device device,
                                      double edge_drop, double feature_mask, graph::Rng& rng);

}  // namespace fgl::nn

#endif  // FGL_NN_AUGMENTED_VIEW_H_
