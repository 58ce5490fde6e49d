#include "graph/dataset.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fgl::graph {
namespace {

absl::Status CheckMask(const torch::Tensor& mask, int64_t n, const std::string& what) {
  if (!mask.defined()) return absl::OkStatus();
  if (mask.dim() != 1 || mask.scalar_type() != torch::kBool || mask.size(0) != n) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be bool [", n, "]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateDataset(const Dataset& d) {
  const int64_t n = d.graph.num_nodes();
  const std::string& w = d.name;
  if (!d.features.defined() || d.features.dim() != 2 || d.features.size(0) != n ||
      d.features.scalar_type() != torch::kFloat32) {
    return absl::InvalidArgumentError(
        absl::StrCat(w, ": features must be float32 [", n, ", num_features]"));
  }
  if (!d.labels.defined() || d.labels.dim() != 1 || d.labels.size(0) != n ||
      d.labels.scalar_type() != torch::kInt64) {
    return absl::InvalidArgumentError(absl::StrCat(w, ": labels must be int64 [", n, "]"));
  }
  if (n > 0) {
    const int64_t lo = d.labels.min().item<int64_t>(), hi = d.labels.max().item<int64_t>();
    if (lo < 0 || hi >= d.num_classes) {
      return absl::InvalidArgumentError(absl::StrCat(w, ": labels span [", lo, ", ", hi,
                                                     "] outside [0, ", d.num_classes, ")"));
    }
  }
  for (size_t i = 0; i < d.provided_splits.size(); ++i) {
    const NodeSplit& s = d.provided_splits[i];
    const std::string p = absl::StrCat(w, ": split ", i, " ");
    if (auto st = CheckMask(s.train, n, p + "train"); !st.ok()) return st;
    if (auto st = CheckMask(s.val, n, p + "val"); !st.ok()) return st;
    if (auto st = CheckMask(s.test, n, p + "test"); !st.ok()) return st;
  }
  return absl::OkStatus();
}

std::vector<int64_t> LabelCounts(const Dataset& d) {
  std::vector<int64_t> counts(d.num_classes, 0);
  const int64_t* y = d.labels.data_ptr<int64_t>();
  for (int64_t v = 0; v < d.num_nodes(); ++v) ++counts[y[v]];
  return counts;
}

absl::StatusOr<Dataset> SubDataset(const Dataset& d, absl::Span<const int64_t> nodes,
                                   int64_t* dropped_entries) {
  auto sub = InducedSubgraph(d.graph, nodes);
  if (!sub.ok()) return sub.status();
  if (dropped_entries) *dropped_entries = sub->dropped_entries;
  torch::Tensor index =
      torch::from_blob(const_cast<int64_t*>(nodes.data()), {static_cast<int64_t>(nodes.size())},
                       torch::kInt64)
          .clone();
  Dataset out;
  out.name = d.name;
  out.graph = std::move(sub->graph);
  out.features = d.features.index_select(0, index);
  out.labels = d.labels.index_select(0, index);
  out.num_classes = d.num_classes;
  for (const NodeSplit& s : d.provided_splits) {
    NodeSplit r;
    if (s.train.defined()) r.train = s.train.index_select(0, index);
    if (s.val.defined()) r.val = s.val.index_select(0, index);
    if (s.test.defined()) r.test = s.test.index_select(0, index);
    out.provided_splits.push_back(std::move(r));
  }
  return out;
}

}  // namespace fgl::graph
