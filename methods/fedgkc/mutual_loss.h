// FedGKC's mutual objective, Eq. 2 (copilot) and Eq. 3 (private model): one function, the student
// and the frozen teacher swapping roles.
#ifndef FGL_METHODS_FEDGKC_MUTUAL_LOSS_H_
#define FGL_METHODS_FEDGKC_MUTUAL_LOSS_H_

#include <torch/torch.h>

#include "methods/fedgkc/fedgkc.pb.h"
#include "nn/graph_view.h"
#include "nn/models/gnn_model.h"

namespace fgl::methods::fedgkc {

// α·CE(y, p_s) on `train` + β·L_neigh(e_t → e_s) + (1 − α − β)·KL(σ(p_t) ‖ σ(p_s)), the last two over
// all nodes; `teacher` is treated as a constant. Without SMKD: α·CE + (1 − α)·KL; without mutual
// distillation: α·CE alone.
torch::Tensor MutualLoss(const nn::ModelOutput& student, const nn::ModelOutput& teacher, const torch::Tensor& labels,
                         const torch::Tensor& train, const nn::GraphView& graph, const FedGkcParams& params);

}  // namespace fgl::methods::fedgkc

#endif  // FGL_METHODS_FEDGKC_MUTUAL_LOSS_H_
