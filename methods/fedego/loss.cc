#include "methods/fedego/loss.h"

namespace fgl::methods::fedego {

torch::Tensor SoftLabelCrossEntropy(const torch::Tensor& logits, const torch::Tensor& targets) {
  // FedEgoServer's expression since fedego@1: changing its order of operations moves every
  // recorded run's numbers.
  return -(targets * torch::log_softmax(logits, 1)).sum(1).mean();
}

torch::Tensor AuthorsCodeLoss(const torch::Tensor& logits, const torch::Tensor& targets) {
  const torch::Tensor p = torch::softmax(torch::log_softmax(logits, 1), 1);
  return -(targets * torch::log(p + kAuthorsCodeEpsilon)).sum(1).mean();
}

}  // namespace fgl::methods::fedego
