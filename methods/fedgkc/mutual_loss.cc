#include "methods/fedgkc/mutual_loss.h"

#include "nn/losses/losses.h"

namespace fgl::methods::fedgkc {

torch::Tensor MutualLoss(const nn::ModelOutput& student, const nn::ModelOutput& teacher, const torch::Tensor& labels,
                         const torch::Tensor& train, const nn::GraphView& graph, const FedGkcParams& params) {
  const double alpha = params.alpha(), t = params.temperature();
  torch::Tensor loss = alpha * nn::MaskedCrossEntropy(student.logits, labels, train);
  if (!params.mutual_distillation()) return loss;
  if (!params.smkd()) return loss + (1 - alpha) * nn::KlDivergence(student.logits, teacher.logits.detach(), t);
  return loss + params.beta() * nn::NeighborhoodKl(student.embedding, teacher.embedding, graph) +
         (1 - alpha - params.beta()) * nn::KlDivergence(student.logits, teacher.logits.detach(), t);
}

}  // namespace fgl::methods::fedgkc
