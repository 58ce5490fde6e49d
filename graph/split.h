// Train/val/test split rules used by the papers. Each returns bool masks over the given labels'
// nodes; the same labels and seed give the same masks.
#ifndef FGL_GRAPH_SPLIT_H_
#define FGL_GRAPH_SPLIT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "graph/dataset.h"

namespace fgl::graph {

// Per class c present: shuffle its n_c nodes, train = floor(n_c * train), val = floor(n_c * val),
// rest test (FedTAD/FedGKC/OpenFGL: 0.2/0.4/0.4; ogbn-arxiv 0.6/0.2/0.2). O(N).
absl::StatusOr<NodeSplit> ClassStratifiedSplit(const torch::Tensor& labels, int64_t num_classes,
                                               double train_ratio, double val_ratio,
                                               uint64_t seed);

// Per class: `train_per_class` to train, `val_per_class` to val, rest to test (Shchur et al.
// 20/30/rest); a class smaller than train + val gives train first, then val. O(N).
absl::StatusOr<NodeSplit> PerClassCountSplit(const torch::Tensor& labels, int64_t num_classes,
                                             int64_t train_per_class, int64_t val_per_class,
                                             uint64_t seed);

// Few labels (FedMpa, 1%/20%/20%): n_train = max(1, round(train_rate * n)), stratified by
// largest-remainder shares when n_train >= #classes present, uniform otherwise; then
// round(val_rate * n) val and round(test_rate * n) test from the rest, uniformly. O(N).
absl::StatusOr<NodeSplit> LabelRateSplit(const torch::Tensor& labels, int64_t num_classes,
                                         double train_rate, double val_rate, double test_rate,
                                         uint64_t seed);

// FedEgo's within-client order split: the last `test_nodes` are test, the floor(n/5) before
// them val, the rest train. O(N).
absl::StatusOr<NodeSplit> OrderedTailSplit(int64_t num_nodes, int64_t test_nodes);

// Builds a split from a rule string: "stratified:train=0.2,val=0.4", "per_class:train=20,val=30",
// "label_rate:train=0.01,val=0.2,test=0.2", "fedego_tail:test=200", "provided:index=0" (the
// dataset's own split k). `dataset` is the (client's) data the split applies to.
absl::StatusOr<NodeSplit> MakeSplit(const std::string& rule, const Dataset& dataset, uint64_t seed);

// Counts of true entries in each mask.
struct SplitSizes {
  int64_t train = 0, val = 0, test = 0;
};
SplitSizes CountSplit(const NodeSplit& split);

}  // namespace fgl::graph

#endif  // FGL_GRAPH_SPLIT_H_
