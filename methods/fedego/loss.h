// FedEgo's authors' training loss at the centres: logits [B, C] against label distributions
// [B, C] (one-hot for a client's own nodes, the mashed soft labels on the server). FedEgoParams.loss
// picks it or Eq. 2's cross-entropy (nn::SoftCrossEntropy) for local and server training alike.
#ifndef FGL_METHODS_FEDEGO_LOSS_H_
#define FGL_METHODS_FEDEGO_LOSS_H_

#include <torch/torch.h>

namespace fgl::methods::fedego {

// The epsilon inside the authors' log [FedEgo/FedEgo@534c1de Client.py:111, Server.py:65].
inline constexpr double kAuthorsCodeEpsilon = 1e-7;

// The authors' form (AUTHORS_CODE) [FedEgo/FedEgo@534c1de Client.py:108-113, Server.py:62-67]:
// their classifier returns log_softmax(z) (models.py:76) and getLoss takes softmax of that, so
// −mean_b Σ_c y_bc · log(softmax(log_softmax(z_b))_c + 1e-7), in that order of operations. It
// differs from the cross-entropy where p_y is small: a node's gradient is scaled by
// p_y / (p_y + 1e-7), and a node whose p_y underflows to 0 costs −log(1e-7) ≈ 16.12 and sends no
// gradient at all.
torch::Tensor AuthorsCodeLoss(const torch::Tensor& logits, const torch::Tensor& targets);

}  // namespace fgl::methods::fedego

#endif  // FGL_METHODS_FEDEGO_LOSS_H_
