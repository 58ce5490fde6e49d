// A node-classification dataset: graph, features, labels and any splits the source provides.
#ifndef FGL_GRAPH_DATASET_H_
#define FGL_GRAPH_DATASET_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "graph/csr_graph.h"

namespace fgl::graph {

// Boolean masks over the nodes of one graph: bool [num_nodes] each.
struct NodeSplit {
  torch::Tensor train, val, test;
};

struct Dataset {
  std::string name;
  CsrGraph graph;           // symmetric, no self-loops, no duplicate entries
  torch::Tensor features;   // float32 [num_nodes, num_features]
  torch::Tensor labels;     // int64 [num_nodes], values in [0, num_classes)
  int64_t num_classes = 0;
  // Splits shipped with the data (Planetoid public split, geom-gcn/heterophilous masks).
  std::vector<NodeSplit> provided_splits;

  int64_t num_nodes() const { return graph.num_nodes(); }
  int64_t num_features() const { return features.defined() ? features.size(1) : 0; }
};

// Checks the invariants above (shapes, dtypes, label range, mask shapes); `what` prefixes errors.
absl::Status ValidateDataset(const Dataset& dataset);

// Per-class node counts, int64 [num_classes].
std::vector<int64_t> LabelCounts(const Dataset& dataset);

// The dataset restricted to `nodes` (order kept), with masks restricted likewise.
absl::StatusOr<Dataset> SubDataset(const Dataset& dataset, absl::Span<const int64_t> nodes,
                                   int64_t* dropped_entries = nullptr);

}  // namespace fgl::graph

#endif  // FGL_GRAPH_DATASET_H_
