#include "nn/trainer.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nn/adam.h"
#include "nn/losses/losses.h"
#include "nn/threads.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::nn {

double Accuracy(const torch::Tensor& logits, const torch::Tensor& labels, const torch::Tensor& mask) {
  const int64_t n = mask.sum().item<int64_t>();
  if (n == 0) return 0.0;
  torch::Tensor correct = (logits.argmax(1) == labels).logical_and(mask);
  return static_cast<double>(correct.sum().item<int64_t>()) / static_cast<double>(n);
}

absl::StatusOr<TrainResult> TrainNodeClassifier(GnnModel& model, const NodeFeatures& x,
                                                const GraphView& graph, const torch::Tensor& labels,
                                                const graph::NodeSplit& split,
                                                const TrainOptions& options) {
  FGL_RETURN_IF_ERROR(CheckModelInput(model, x, graph));
  if (labels.size(0) != graph.num_nodes()) {
    return absl::InvalidArgumentError(
        absl::StrCat(labels.size(0), " labels for ", graph.num_nodes(), " nodes"));
  }
  const int64_t lo = labels.min().item<int64_t>(), hi = labels.max().item<int64_t>();
  if (lo < 0 || hi >= model.num_classes()) {
    return absl::InvalidArgumentError(absl::StrCat("labels span [", lo, ", ", hi,
                                                   "] but the model has ", model.num_classes(),
                                                   " classes"));
  }
  if (split.train.sum().item<int64_t>() == 0) {
    return absl::InvalidArgumentError("the training mask selects no node");
  }
  if (options.epochs < 1 || !(options.lr > 0) || options.weight_decay < 0) {
    return absl::InvalidArgumentError("TrainOptions: need epochs >= 1, lr > 0, weight_decay >= 0");
  }
  Adam opt(model.parameters(), torch::optim::AdamOptions(options.lr).weight_decay(options.weight_decay));
  TrainResult result;
  result.val_acc = -1;
  std::vector<double> epoch_ms;
  int since_best = 0;
  double best_val_loss = std::numeric_limits<double>::infinity();
  const GraphSizedThreads threads(graph.num_nodes());
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    model.train();
    opt.zero_grad();
    torch::Tensor loss = MaskedCrossEntropy(model.forward(x, graph).logits, labels, split.train);
    loss.backward();
    opt.step();
    epoch_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (!std::isfinite(loss.item<double>())) {
      return absl::InternalError(absl::StrCat("training loss became ", loss.item<double>(),
                                              " at epoch ", epoch));
    }
    torch::NoGradGuard no_grad;
    model.eval();
    torch::Tensor logits = model.forward(x, graph).logits;
    const double val = Accuracy(logits, labels, split.val);
    const double val_loss = MaskedCrossEntropy(logits, labels, split.val).item<double>();
    result.epochs_run = epoch;
    // Best validation accuracy; ties go to the lower validation loss (as GAT's early stopping).
    if (val > result.val_acc || (val == result.val_acc && val_loss < best_val_loss)) {
      best_val_loss = val_loss;
      result.val_acc = val;
      result.test_acc = Accuracy(logits, labels, split.test);
      result.best_epoch = epoch;
      since_best = 0;
    } else if (options.patience > 0 && ++since_best >= options.patience) {
      break;
    }
  }
  std::sort(epoch_ms.begin(), epoch_ms.end());
  result.median_epoch_ms = epoch_ms[epoch_ms.size() / 2];
  return result;
}

}  // namespace fgl::nn
