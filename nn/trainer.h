// Centralised full-batch training of a node classifier: Adam, best-validation model selection,
// optional early stopping. The baseline every federated number is compared with.
#ifndef FGL_NN_TRAINER_H_
#define FGL_NN_TRAINER_H_

#include <torch/torch.h>

#include "absl/status/statusor.h"
#include "graph/dataset.h"
#include "nn/graph_view.h"
#include "nn/models/gnn_model.h"

namespace fgl::nn {

struct TrainOptions {
  int epochs = 200;
  double lr = 0.01;
  double weight_decay = 5e-4;
  int patience = 0;  // stop after this many epochs without a better val accuracy; 0 = never
};

struct TrainResult {
  double val_acc = 0;    // best validation accuracy
  double test_acc = 0;   // test accuracy at the best-validation epoch (ties: lower val loss)
  int best_epoch = 0;
  int epochs_run = 0;
  double median_epoch_ms = 0;  // forward + backward + optimiser step
};

// Fraction of `mask` nodes whose argmax logit equals the label (0 for an empty mask).
double Accuracy(const torch::Tensor& logits, const torch::Tensor& labels, const torch::Tensor& mask);

// Trains `model` in place. Errors (not crashes) for mismatched widths, node counts, labels
// outside [0, num_classes), NaN features or an empty training mask.
absl::StatusOr<TrainResult> TrainNodeClassifier(GnnModel& model, const NodeFeatures& x,
                                                const GraphView& graph, const torch::Tensor& labels,
                                                const graph::NodeSplit& split,
                                                const TrainOptions& options);

}  // namespace fgl::nn

#endif  // FGL_NN_TRAINER_H_
