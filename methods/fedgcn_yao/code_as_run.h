// FedEgo's baseline code's FedGCN where it differs from the method (FedGcnYaoParams'
// code_adjacency and code_loss), as functions so that tests can check them by hand.
#ifndef FGL_METHODS_FEDGCN_YAO_CODE_AS_RUN_H_
#define FGL_METHODS_FEDGCN_YAO_CODE_AS_RUN_H_

#include <torch/torch.h>

#include "graph/csr_graph.h"

namespace fgl::methods::fedgcn_yao {

// The graph utils.py fedgcnInit builds: one undirected edge, between the first node (in `g`'s
// order) that has a neighbour other than itself and the first such neighbour; no edges if none.
graph::CsrGraph CodeAdjacency(const graph::CsrGraph& g);

// getMaskLoss on FedGCN.forward's softmax output: -sum_i log(softmax(softmax(output))_i,y_i +
// 1e-7) over the rows `nodes` (int64), divided by `num_nodes` (every node of the client).
torch::Tensor CodeLoss(const torch::Tensor& output, const torch::Tensor& labels, const torch::Tensor& nodes,
                       int64_t num_nodes);

}  // namespace fgl::methods::fedgcn_yao

#endif  // FGL_METHODS_FEDGCN_YAO_CODE_AS_RUN_H_
