// Tiny named graphs for tests, each drawn in a comment.
#ifndef FGL_GRAPH_TESTING_TINY_GRAPHS_H_
#define FGL_GRAPH_TESTING_TINY_GRAPHS_H_

#include <cstdint>

#include "graph/csr_graph.h"
#include "graph/dataset.h"

namespace fgl::graph::testing {

// 0-1-2-...-(n-1)-0.
CsrGraph CycleGraph(int64_t n);
// 0-1-2-...-(n-1).
CsrGraph PathGraph(int64_t n);
// 0-1-2 and 3-4-5 triangles, bridge 2-3.
CsrGraph TwoTrianglesJoinedByOneEdge();
// A dataset on `graph` with features = one-hot(node % num_features) and labels node % num_classes.
Dataset TinyDataset(CsrGraph graph, int64_t num_classes, int64_t num_features = 4);

}  // namespace fgl::graph::testing

#endif  // FGL_GRAPH_TESTING_TINY_GRAPHS_H_
