// The built-in synthetic dataset `csbm`: a contextual stochastic block model, fully determined by
// its options and seed. Needs no files: the quickstart and data-independent tests use it.
#ifndef FGL_GRAPH_CSBM_H_
#define FGL_GRAPH_CSBM_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "graph/dataset.h"

namespace fgl::graph {

struct CsbmOptions {
  int64_t num_nodes = 2000;
  int64_t num_classes = 5;
  int64_t num_features = 64;
  double average_degree = 8;  // undirected edges drawn = num_nodes * average_degree / 2
  double homophily = 0.8;     // probability that an edge joins two nodes of the same class
  double feature_signal = 2.0;  // class means are ~signal*sqrt(2) apart; noise is N(0, I)
};

// Balanced labels; x_v = mu_{y_v} + N(0, I) with mu_c ~ N(0, (signal^2 / F) I);
// each edge picks u uniformly and v uniformly within y_u (probability h) or outside it.
// Duplicate draws and self-loops are merged/dropped. complexity: O(N F + E log d).
absl::StatusOr<Dataset> MakeCsbm(const CsbmOptions& options, uint64_t seed);

}  // namespace fgl::graph

#endif  // FGL_GRAPH_CSBM_H_
