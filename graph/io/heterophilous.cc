#include "graph/io/heterophilous.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/io/npy.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::graph::io {
namespace {

// Larger label values mean a corrupt file, and would make per-class arrays huge.
constexpr int64_t kMaxClasses = int64_t{1} << 16;

std::string Where(const NpzArchive& npz, absl::string_view key) {
  return absl::StrCat(npz.source(), ":", key, ".npy");
}

absl::Status ShapeError(const NpzArchive& npz, absl::string_view key, const NpyArray& a,
                        absl::string_view want) {
  std::string got;
  for (size_t i = 0; i < a.shape.size(); ++i) absl::StrAppend(&got, i ? ", " : "", a.shape[i]);
  return absl::InvalidArgumentError(
      absl::StrCat(Where(npz, key), ": shape (", got, "), expected ", want));
}

// Masks [K, N] -> one bool tensor per row.
absl::StatusOr<std::vector<torch::Tensor>> ReadMasks(NpzArchive& npz, absl::string_view key,
                                                     int64_t n) {
  FGL_ASSIGN_OR_RETURN(NpyArray a, npz.ReadArray(key));
  if (a.ndim() != 2 || a.shape[1] != n) {
    return ShapeError(npz, key, a, absl::StrCat("[K, ", n, "]"));
  }
  FGL_ASSIGN_OR_RETURN(torch::Tensor m, NpyToBoolTensor(a, Where(npz, key)));
  std::vector<torch::Tensor> rows;
  for (int64_t k = 0; k < a.shape[0]; ++k) rows.push_back(m[k].clone());
  return rows;
}

}  // namespace

absl::StatusOr<Dataset> LoadHeterophilousNpz(const std::string& path, const std::string& name) {
  FGL_ASSIGN_OR_RETURN(NpzArchive npz, NpzArchive::Open(path, name));
  Dataset d;
  d.name = name;

  // Labels first: they fix N, and their 8 bytes per node bound N by the file size.
  FGL_ASSIGN_OR_RETURN(NpyArray labels, npz.ReadArray("node_labels"));
  if (labels.ndim() != 1) return ShapeError(npz, "node_labels", labels, "[N]");
  const int64_t n = labels.shape[0];
  FGL_ASSIGN_OR_RETURN(d.labels, NpyToInt64Tensor(labels, Where(npz, "node_labels")));
  if (n > 0) {
    const int64_t lo = d.labels.min().item<int64_t>(), hi = d.labels.max().item<int64_t>();
    if (lo < 0 || hi >= kMaxClasses) {
      return absl::InvalidArgumentError(absl::StrCat(Where(npz, "node_labels"), ": labels span [",
                                                     lo, ", ", hi, "], outside [0, ", kMaxClasses,
                                                     ")"));
    }
    d.num_classes = hi + 1;
  }

  FGL_ASSIGN_OR_RETURN(NpyArray features, npz.ReadArray("node_features"));
  if (features.ndim() != 2 || features.shape[0] != n) {
    return ShapeError(npz, "node_features", features, absl::StrCat("[", n, ", D]"));
  }
  if (features.dtype != NpyDtype::kFloat32 && features.dtype != NpyDtype::kFloat64) {
    return absl::InvalidArgumentError(absl::StrCat(
        Where(npz, "node_features"), ": expected <f4 or <f8, got ", NpyDescr(features.dtype)));
  }
  FGL_ASSIGN_OR_RETURN(d.features, NpyToFloat32Tensor(features, Where(npz, "node_features")));
  features = NpyArray();  // free the raw copy early: Squirrel's is 43 MB

  FGL_ASSIGN_OR_RETURN(NpyArray edges, npz.ReadArray("edges"));
  if (edges.ndim() != 2 || edges.shape[1] != 2) return ShapeError(npz, "edges", edges, "[E, 2]");
  FGL_ASSIGN_OR_RETURN(torch::Tensor e, NpyToInt64Tensor(edges, Where(npz, "edges")));
  const torch::Tensor src = e.select(1, 0).contiguous(), dst = e.select(1, 1).contiguous();
  FGL_ASSIGN_OR_RETURN(d.graph,
                       CsrFromEdges(n, absl::MakeConstSpan(src.data_ptr<int64_t>(), src.numel()),
                                    absl::MakeConstSpan(dst.data_ptr<int64_t>(), dst.numel()), {},
                                    Where(npz, "edges")));

  FGL_ASSIGN_OR_RETURN(std::vector<torch::Tensor> train, ReadMasks(npz, "train_masks", n));
  FGL_ASSIGN_OR_RETURN(std::vector<torch::Tensor> val, ReadMasks(npz, "val_masks", n));
  FGL_ASSIGN_OR_RETURN(std::vector<torch::Tensor> test, ReadMasks(npz, "test_masks", n));
  if (train.size() != val.size() || train.size() != test.size()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", train.size(), " train, ", val.size(),
                                                   " val and ", test.size(),
                                                   " test masks; expected equal counts"));
  }
  for (size_t k = 0; k < train.size(); ++k) {
    d.provided_splits.push_back(NodeSplit{train[k], val[k], test[k]});
  }
  FGL_RETURN_IF_ERROR(ValidateDataset(d));
  return d;
}

}  // namespace fgl::graph::io
