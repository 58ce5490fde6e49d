#include "graph/split.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/option_string.h"
#include "graph/random.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::graph {
namespace {

absl::Status CheckLabels(const torch::Tensor& labels, int64_t num_classes) {
  if (!labels.defined() || labels.dim() != 1 || labels.scalar_type() != torch::kInt64) {
    return absl::InvalidArgumentError("split: labels must be int64 [num_nodes]");
  }
  const int64_t* y = labels.data_ptr<int64_t>();
  for (int64_t v = 0; v < labels.size(0); ++v) {
    if (y[v] < 0 || y[v] >= num_classes) {
      return absl::InvalidArgumentError(
          absl::StrCat("split: label ", y[v], " of node ", v, " outside [0, ", num_classes, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRatios(double a, double b, double c = 0) {
  if (a < 0 || b < 0 || c < 0 || a + b + c > 1 + 1e-9) {
    return absl::InvalidArgumentError(
        absl::StrCat("split: ratios ", a, "/", b, "/", c, " must be >= 0 and sum to <= 1"));
  }
  return absl::OkStatus();
}

NodeSplit EmptySplit(int64_t n) {
  return {torch::zeros({n}, torch::kBool), torch::zeros({n}, torch::kBool),
          torch::zeros({n}, torch::kBool)};
}

std::vector<std::vector<int64_t>> NodesByClass(const torch::Tensor& labels, int64_t num_classes) {
  std::vector<std::vector<int64_t>> by(num_classes);
  const int64_t* y = labels.data_ptr<int64_t>();
  for (int64_t v = 0; v < labels.size(0); ++v) by[y[v]].push_back(v);
  return by;
}

}  // namespace

absl::StatusOr<NodeSplit> ClassStratifiedSplit(const torch::Tensor& labels, int64_t num_classes,
                                               double train_ratio, double val_ratio,
                                               uint64_t seed) {
  FGL_RETURN_IF_ERROR(CheckLabels(labels, num_classes));
  FGL_RETURN_IF_ERROR(CheckRatios(train_ratio, val_ratio));
  NodeSplit s = EmptySplit(labels.size(0));
  bool* tr = s.train.data_ptr<bool>();
  bool* va = s.val.data_ptr<bool>();
  bool* te = s.test.data_ptr<bool>();
  Rng rng(seed, "split/stratified");
  for (std::vector<int64_t>& nodes : NodesByClass(labels, num_classes)) {
    rng.Shuffle(nodes);
    const size_t n_train = static_cast<size_t>(std::floor(nodes.size() * train_ratio + 1e-9));
    const size_t n_val = static_cast<size_t>(std::floor(nodes.size() * val_ratio + 1e-9));
    for (size_t i = 0; i < nodes.size(); ++i) {
      (i < n_train ? tr : i < n_train + n_val ? va : te)[nodes[i]] = true;
    }
  }
  return s;
}

absl::StatusOr<NodeSplit> PerClassCountSplit(const torch::Tensor& labels, int64_t num_classes,
                                             int64_t train_per_class, int64_t val_per_class,
                                             uint64_t seed) {
  FGL_RETURN_IF_ERROR(CheckLabels(labels, num_classes));
  if (train_per_class < 0 || val_per_class < 0) {
    return absl::InvalidArgumentError("split: per-class counts must be >= 0");
  }
  NodeSplit s = EmptySplit(labels.size(0));
  bool* tr = s.train.data_ptr<bool>();
  bool* va = s.val.data_ptr<bool>();
  bool* te = s.test.data_ptr<bool>();
  Rng rng(seed, "split/per_class");
  for (std::vector<int64_t>& nodes : NodesByClass(labels, num_classes)) {
    rng.Shuffle(nodes);
    for (size_t i = 0; i < nodes.size(); ++i) {
      const int64_t k = static_cast<int64_t>(i);
      (k < train_per_class ? tr : k < train_per_class + val_per_class ? va : te)[nodes[i]] = true;
    }
  }
  return s;
}

absl::StatusOr<NodeSplit> LabelRateSplit(const torch::Tensor& labels, int64_t num_classes,
                                         double train_rate, double val_rate, double test_rate,
                                         uint64_t seed) {
  FGL_RETURN_IF_ERROR(CheckLabels(labels, num_classes));
  FGL_RETURN_IF_ERROR(CheckRatios(train_rate, val_rate, test_rate));
  const int64_t n = labels.size(0);
  NodeSplit s = EmptySplit(n);
  if (n == 0) return s;
  bool* tr = s.train.data_ptr<bool>();
  bool* va = s.val.data_ptr<bool>();
  bool* te = s.test.data_ptr<bool>();
  Rng rng(seed, "split/label_rate");
  const int64_t n_train = std::max<int64_t>(1, std::llround(train_rate * n));
  std::vector<std::vector<int64_t>> by = NodesByClass(labels, num_classes);
  const int64_t present = std::count_if(by.begin(), by.end(), [](auto& c) { return !c.empty(); });
  std::vector<int64_t> chosen;
  if (n_train >= present) {
    // Largest-remainder shares, at least one per present class (sklearn's stratify intent).
    std::vector<int64_t> quota(num_classes, 0);
    std::vector<std::pair<double, int64_t>> remainder;
    int64_t given = 0;
    for (int64_t c = 0; c < num_classes; ++c) {
      if (by[c].empty()) continue;
      const double exact = static_cast<double>(n_train) * by[c].size() / n;
      quota[c] = std::max<int64_t>(1, static_cast<int64_t>(std::floor(exact)));
      given += quota[c];
      remainder.emplace_back(-(exact - std::floor(exact)), c);
    }
    std::sort(remainder.begin(), remainder.end());
    for (size_t i = 0; given < n_train && i < remainder.size(); ++i, ++given) ++quota[remainder[i].second];
    // Too many after the one-per-class floor: take back from the largest quotas.
    while (given > n_train) {
      const int64_t c = std::max_element(quota.begin(), quota.end()) - quota.begin();
      --quota[c];
      --given;
    }
    for (int64_t c = 0; c < num_classes; ++c) {
      rng.Shuffle(by[c]);
      const int64_t take = std::min<int64_t>(quota[c], by[c].size());
      chosen.insert(chosen.end(), by[c].begin(), by[c].begin() + take);
    }
  } else {
    std::vector<int64_t> all(n);
    std::iota(all.begin(), all.end(), 0);
    rng.Shuffle(all);
    chosen.assign(all.begin(), all.begin() + std::min(n_train, n));
  }
  for (int64_t v : chosen) tr[v] = true;
  std::vector<int64_t> rest;
  for (int64_t v = 0; v < n; ++v)
    if (!tr[v]) rest.push_back(v);
  rng.Shuffle(rest);
  const size_t n_val = std::min<size_t>(std::llround(val_rate * n), rest.size());
  const size_t n_test = std::min<size_t>(std::llround(test_rate * n), rest.size() - n_val);
  for (size_t i = 0; i < n_val; ++i) va[rest[i]] = true;
  for (size_t i = n_val; i < n_val + n_test; ++i) te[rest[i]] = true;
  return s;
}

absl::StatusOr<NodeSplit> OrderedTailSplit(int64_t num_nodes, int64_t test_nodes) {
  if (test_nodes < 0 || test_nodes > num_nodes) {
    return absl::InvalidArgumentError(absl::StrCat("split: fedego_tail test=", test_nodes,
                                                   " for ", num_nodes, " nodes"));
  }
  NodeSplit s = EmptySplit(num_nodes);
  const int64_t val_nodes = std::min(num_nodes / 5, num_nodes - test_nodes);
  const int64_t train_end = num_nodes - test_nodes - val_nodes;
  for (int64_t v = 0; v < num_nodes; ++v) {
    (v < train_end ? s.train : v < train_end + val_nodes ? s.val : s.test)[v] = true;
  }
  return s;
}

absl::StatusOr<NodeSplit> MakeSplit(const std::string& rule, const Dataset& dataset,
                                    uint64_t seed) {
  FGL_ASSIGN_OR_RETURN(OptionString o, OptionString::Parse(rule));
  absl::StatusOr<NodeSplit> out = absl::NotFoundError(absl::StrCat(
      "unknown split rule '", o.name(),
      "'; known: stratified, per_class, label_rate, fedego_tail, provided"));
  if (o.name() == "stratified") {
    FGL_ASSIGN_OR_RETURN(double train, o.Double("train", 0.2));
    FGL_ASSIGN_OR_RETURN(double val, o.Double("val", 0.4));
    out = ClassStratifiedSplit(dataset.labels, dataset.num_classes, train, val, seed);
  } else if (o.name() == "per_class") {
    FGL_ASSIGN_OR_RETURN(int64_t train, o.Int("train", 20));
    FGL_ASSIGN_OR_RETURN(int64_t val, o.Int("val", 30));
    out = PerClassCountSplit(dataset.labels, dataset.num_classes, train, val, seed);
  } else if (o.name() == "label_rate") {
    FGL_ASSIGN_OR_RETURN(double train, o.Double("train", 0.01));
    FGL_ASSIGN_OR_RETURN(double val, o.Double("val", 0.2));
    FGL_ASSIGN_OR_RETURN(double test, o.Double("test", 0.2));
    out = LabelRateSplit(dataset.labels, dataset.num_classes, train, val, test, seed);
  } else if (o.name() == "fedego_tail") {
    FGL_ASSIGN_OR_RETURN(int64_t test, o.Int("test", 200));
    out = OrderedTailSplit(dataset.num_nodes(), test);
  } else if (o.name() == "provided") {
    FGL_ASSIGN_OR_RETURN(int64_t index, o.Int("index", 0));
    if (index < 0 || index >= static_cast<int64_t>(dataset.provided_splits.size())) {
      return absl::InvalidArgumentError(absl::StrCat("split 'provided:index=", index, "': ",
                                                     dataset.name, " ships ",
                                                     dataset.provided_splits.size(), " split(s)"));
    }
    out = dataset.provided_splits[index];
  }
  FGL_RETURN_IF_ERROR(o.CheckAllUsed());
  return out;
}

SplitSizes CountSplit(const NodeSplit& s) {
  return {s.train.sum().item<int64_t>(), s.val.sum().item<int64_t>(), s.test.sum().item<int64_t>()};
}

}  // namespace fgl::graph
