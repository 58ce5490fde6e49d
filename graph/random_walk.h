// Random-walk return probabilities, FedTAD's topology embedding (Eq. 3).
#ifndef FGL_GRAPH_RANDOM_WALK_H_
#define FGL_GRAPH_RANDOM_WALK_H_

#include <torch/torch.h>

#include "graph/csr_graph.h"

namespace fgl::graph {

// Returns float32 [num_nodes, steps] with entry (i, k-1) = (T^k)_ii, T = D^-1 A the random-walk
// transition matrix, with self-loops added first when `add_self_loops` (FedTAD's code does),
// so that (T^1)_ii = 1 / (d_i + 1). Exact: blocks of 64 sources are pushed k steps through the
// CSR graph. complexity: O(steps * E * N / 64) time, O(64 N) space per thread; the result does
// not depend on the thread count.
torch::Tensor RandomWalkReturnProbabilities(const CsrGraph& graph, int steps,
                                            bool add_self_loops = true);

}  // namespace fgl::graph

#endif  // FGL_GRAPH_RANDOM_WALK_H_
