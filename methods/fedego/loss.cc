#include "methods/fedego/loss.h"

namespace fgl::methods::fedego {

torch::Tensor AuthorsCodeLoss(const torch::Tensor& logits, const torch::Tensor& targets) {
  const torch::Tensor p = torch::softmax(torch::log_softmax(logits, 1), 1);
  return -(targets * torch::log(p + kAuthorsCodeEpsilon)).sum(1).mean();
}

}  // namespace fgl::methods::fedego
