#include "graph/io/wikics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/io/json.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::graph::io {
namespace {

// Wiki-CS features are 300-dimensional averaged GloVe vectors.
constexpr int64_t kNumFeatures = 300;
// Larger label values mean a corrupt file, and would make per-class arrays huge.
constexpr int64_t kMaxClasses = int64_t{1} << 16;

// The real file is about 80 MB with 4.7 million values and nesting depth 3.
JsonLimits WikiCsLimits() {
  JsonLimits limits;
  limits.max_bytes = size_t{512} << 20;
  limits.max_depth = 16;
  limits.max_values = size_t{1} << 25;
  return limits;
}

// The array under `key` in the top-level object.
absl::StatusOr<JsonValue> ArrayMember(const JsonValue& root, absl::string_view key) {
  const std::optional<JsonValue> v = root.Find(key);
  if (!v.has_value()) return root.Error(absl::StrCat("the top-level object has no \"", key, "\""));
  if (!v->is_array()) {
    return v->Error(absl::StrCat(key, ": expected an array, got ", JsonTypeName(v->type())));
  }
  return *v;
}

// `list` (already known to be an array) must have `n` entries.
absl::Status CheckLength(const JsonValue& list, absl::string_view what, int64_t n) {
  if (static_cast<int64_t>(list.size()) != n) {
    return list.Error(absl::StrCat(what, ": ", list.size(), " entries, but labels has ", n));
  }
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> ReadLabels(const JsonValue& root, int64_t* num_classes) {
  FGL_ASSIGN_OR_RETURN(const JsonValue list, ArrayMember(root, "labels"));
  const std::vector<JsonValue> items = list.elements();
  const int64_t n = static_cast<int64_t>(items.size());
  torch::Tensor y = torch::empty({n}, torch::kInt64);
  int64_t* out = y.data_ptr<int64_t>();
  int64_t hi = -1;
  for (int64_t v = 0; v < n; ++v) {
    const JsonValue& item = items[v];
    if (!item.is_integer()) {
      return item.Error(
          absl::StrCat("labels[", v, "]: expected an integer, got ", JsonTypeName(item.type())));
    }
    out[v] = item.int_value();
    if (out[v] < 0 || out[v] >= kMaxClasses) {
      return item.Error(
          absl::StrCat("labels[", v, "]: label ", out[v], " outside [0, ", kMaxClasses, ")"));
    }
    hi = std::max(hi, out[v]);
  }
  *num_classes = hi + 1;
  return y;
}

absl::StatusOr<torch::Tensor> ReadFeatures(const JsonValue& root, int64_t n) {
  FGL_ASSIGN_OR_RETURN(const JsonValue list, ArrayMember(root, "features"));
  FGL_RETURN_IF_ERROR(CheckLength(list, "features", n));
  const std::vector<JsonValue> rows = list.elements();
  torch::Tensor x = torch::empty({n, kNumFeatures}, torch::kFloat32);
  float* out = x.data_ptr<float>();
  for (int64_t v = 0; v < n; ++v) {
    const JsonValue& row = rows[v];
    if (!row.is_array() || static_cast<int64_t>(row.size()) != kNumFeatures) {
      return row.Error(absl::StrCat("features[", v, "]: expected an array of ", kNumFeatures,
                                    " numbers, got ", JsonTypeName(row.type()),
                                    row.is_array() ? absl::StrCat(" of ", row.size()) : ""));
    }
    const std::vector<JsonValue> values = row.elements();
    for (int64_t j = 0; j < kNumFeatures; ++j) {
      const JsonValue& value = values[j];
      // Checked in double: a double beyond the float range has no defined float conversion.
      const double number = value.number_value();
      if (!value.is_number() || !(std::abs(number) <= std::numeric_limits<float>::max())) {
        return value.Error(
            absl::StrCat("features[", v, "][", j, "]: expected a finite float32, got ",
                         value.is_number() ? absl::StrCat(number) : JsonTypeName(value.type())));
      }
      out[v * kNumFeatures + j] = static_cast<float>(number);
    }
  }
  return x;
}

absl::StatusOr<CsrGraph> ReadLinks(const JsonValue& root, int64_t n, const std::string& path) {
  FGL_ASSIGN_OR_RETURN(const JsonValue list, ArrayMember(root, "links"));
  FGL_RETURN_IF_ERROR(CheckLength(list, "links", n));
  const std::vector<JsonValue> rows = list.elements();
  std::vector<int64_t> src, dst;
  for (int64_t v = 0; v < n; ++v) {
    const JsonValue& row = rows[v];
    if (!row.is_array()) {
      return row.Error(absl::StrCat("links[", v, "]: expected an array of node ids, got ",
                                    JsonTypeName(row.type())));
    }
    const std::vector<JsonValue> ids = row.elements();
    for (size_t j = 0; j < ids.size(); ++j) {
      const JsonValue& id = ids[j];
      if (!id.is_integer()) {
        return id.Error(absl::StrCat("links[", v, "][", j, "]: expected a node id, got ",
                                     JsonTypeName(id.type())));
      }
      const int64_t u = id.int_value();
      if (u < 0 || u >= n) {
        return id.Error(absl::StrCat("links[", v, "][", j, "]: node ", u, " outside [0, ", n, ")"));
      }
      src.push_back(v);
      dst.push_back(u);
    }
  }
  return CsrFromEdges(n, src, dst, {}, path + ": links");
}

// One mask: an array of N true/false or 0/1 entries.
absl::StatusOr<torch::Tensor> ReadMask(const JsonValue& list, const std::string& what, int64_t n) {
  if (!list.is_array()) {
    return list.Error(absl::StrCat(what, ": expected an array, got ", JsonTypeName(list.type())));
  }
  FGL_RETURN_IF_ERROR(CheckLength(list, what, n));
  const std::vector<JsonValue> items = list.elements();
  torch::Tensor mask = torch::empty({n}, torch::kBool);
  bool* out = mask.data_ptr<bool>();
  for (int64_t v = 0; v < n; ++v) {
    const JsonValue& item = items[v];
    if (item.is_bool()) {
      out[v] = item.bool_value();
    } else if (item.is_integer() && (item.int_value() == 0 || item.int_value() == 1)) {
      out[v] = item.int_value() == 1;
    } else {
      return item.Error(absl::StrCat(
          what, "[", v, "]: expected true, false, 0 or 1, got ",
          item.is_number() ? absl::StrCat(item.number_value()) : JsonTypeName(item.type())));
    }
  }
  return mask;
}

// K masks under `key`.
absl::StatusOr<std::vector<torch::Tensor>> ReadMasks(const JsonValue& root, absl::string_view key,
                                                     int64_t n) {
  FGL_ASSIGN_OR_RETURN(const JsonValue list, ArrayMember(root, key));
  const std::vector<JsonValue> items = list.elements();
  std::vector<torch::Tensor> masks;
  for (size_t k = 0; k < items.size(); ++k) {
    FGL_ASSIGN_OR_RETURN(torch::Tensor m, ReadMask(items[k], absl::StrCat(key, "[", k, "]"), n));
    masks.push_back(std::move(m));
  }
  return masks;
}

}  // namespace

absl::StatusOr<Dataset> LoadWikiCs(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/data.json";
  FGL_ASSIGN_OR_RETURN(const JsonDocument doc, ReadJsonFile(path, name, WikiCsLimits()));
  const JsonValue root = doc.root();
  if (!root.is_object()) {
    return root.Error(absl::StrCat("expected a top-level object, got ", JsonTypeName(root.type())));
  }
  Dataset d;
  d.name = name;
  // Labels first: they fix N.
  FGL_ASSIGN_OR_RETURN(d.labels, ReadLabels(root, &d.num_classes));
  const int64_t n = d.labels.size(0);
  FGL_ASSIGN_OR_RETURN(d.features, ReadFeatures(root, n));
  FGL_ASSIGN_OR_RETURN(d.graph, ReadLinks(root, n, path));

  FGL_ASSIGN_OR_RETURN(std::vector<torch::Tensor> train, ReadMasks(root, "train_masks", n));
  FGL_ASSIGN_OR_RETURN(std::vector<torch::Tensor> val, ReadMasks(root, "val_masks", n));
  FGL_ASSIGN_OR_RETURN(std::vector<torch::Tensor> stopping, ReadMasks(root, "stopping_masks", n));
  FGL_ASSIGN_OR_RETURN(const JsonValue test_list, ArrayMember(root, "test_mask"));
  FGL_ASSIGN_OR_RETURN(torch::Tensor test, ReadMask(test_list, "test_mask", n));
  if (train.size() != val.size() || train.size() != stopping.size()) {
    return root.Error(absl::StrCat(train.size(), " train_masks, ", val.size(), " val_masks and ",
                                   stopping.size(), " stopping_masks; expected equal counts"));
  }
  for (size_t k = 0; k < train.size(); ++k) {
    d.provided_splits.push_back(NodeSplit{train[k], val[k], test.clone()});
  }
  FGL_RETURN_IF_ERROR(ValidateDataset(d));
  return d;
}

}  // namespace fgl::graph::io
