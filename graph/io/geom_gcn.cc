#include "graph/io/geom_gcn.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "graph/io/file.h"
#include "graph/io/npy.h"
#include "graph/io/text_fields.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::graph::io {
namespace {

// Larger label values mean a corrupt file, and would make per-class arrays huge.
constexpr int64_t kMaxClasses = int64_t{1} << 16;
constexpr int kNumSplits = 10;
// Dense features beyond this mean a corrupt feature_amount (Actor's real matrix is 28 MB).
constexpr int64_t kMaxFeatureBytes = int64_t{8} << 30;

absl::Status LineError(const std::string& path, size_t line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ": ", what));
}

// Parses `feature(feature_amount:K)`; returns -1 for the plain dense header `feature`.
absl::StatusOr<int64_t> ParseFeatureHeader(absl::string_view field, const std::string& path) {
  if (field == "feature") return -1;
  constexpr absl::string_view kOpen = "feature(feature_amount:";
  if (absl::StartsWith(field, kOpen) && absl::EndsWith(field, ")")) {
    absl::string_view k = field.substr(kOpen.size(), field.size() - kOpen.size() - 1);
    FGL_ASSIGN_OR_RETURN(const int64_t amount,
                         ParseIntField(k, absl::StrCat(path, ":1"), "feature_amount"));
    // An upper bound on the columns keeps a corrupt header from allocating without bound.
    if (amount < 0 || amount >= (int64_t{1} << 24)) {
      return LineError(path, 1, absl::StrCat("feature_amount ", amount, " is out of range"));
    }
    return amount;
  }
  return LineError(path, 1,
                   absl::StrCat("expected header `node_id\\tfeature\\tlabel` or "
                                "`node_id\\tfeature(feature_amount:K)\\tlabel`, got "
                                "feature column '",
                                field, "'"));
}

// Features and labels of the nodes, placed by node id.
absl::Status ReadNodes(const std::string& path, const std::string& name, Dataset* d) {
  FGL_ASSIGN_OR_RETURN(const std::string text, ReadFileBytes(path, name));
  const std::vector<absl::string_view> lines = SplitLines(text);
  if (lines.empty()) return LineError(path, 1, "empty file: expected a header");
  const std::vector<absl::string_view> header = absl::StrSplit(lines[0], '\t');
  if (header.size() != 3 || header[0] != "node_id" || header[2] != "label") {
    return LineError(path, 1, "expected header `node_id\\tfeature\\tlabel`");
  }
  FGL_ASSIGN_OR_RETURN(const int64_t amount, ParseFeatureHeader(header[1], path));
  const bool sparse = amount >= 0;
  const int64_t n = static_cast<int64_t>(lines.size()) - 1;
  int64_t dim = sparse ? amount + 1 : -1;  // dense: fixed by the first row
  std::vector<int64_t> first_line(n, 0);   // 1-based line where each id was seen; 0 = unseen
  std::vector<int64_t> labels(n, 0);
  float* features = nullptr;
  std::vector<absl::string_view> cols;
  for (int64_t i = 0; i < n; ++i) {
    const size_t ln = i + 2;
    const std::string where = absl::StrCat(path, ":", ln);
    const std::vector<absl::string_view> f = absl::StrSplit(lines[i + 1], '\t');
    if (f.size() != 3) {
      return LineError(path, ln, absl::StrCat("expected 3 tab-separated fields, got ", f.size()));
    }
    FGL_ASSIGN_OR_RETURN(const int64_t id, ParseIntField(f[0], where, "node id"));
    if (id < 0 || id >= n) {
      return LineError(path, ln,
                       absl::StrCat("node id ", id, " outside [0, ", n, ") (", n, " node lines)"));
    }
    if (first_line[id] != 0) {
      return LineError(path, ln,
                       absl::StrCat("node id ", id, " already given on line ", first_line[id]));
    }
    first_line[id] = static_cast<int64_t>(ln);
    FGL_ASSIGN_OR_RETURN(labels[id], ParseIntField(f[2], where, "label"));
    if (labels[id] < 0 || labels[id] >= kMaxClasses) {
      return LineError(path, ln,
                       absl::StrCat("label ", labels[id], " outside [0, ", kMaxClasses, ")"));
    }
    if (f[1].empty()) return LineError(path, ln, "empty feature field");
    cols = absl::StrSplit(f[1], ',');
    if (dim < 0) {
      dim = static_cast<int64_t>(cols.size());
    }
    if (features == nullptr) {
      if (dim > 0 && n > kMaxFeatureBytes / static_cast<int64_t>(sizeof(float)) / dim) {
        return absl::ResourceExhaustedError(absl::StrCat(
            path, ": ", n, " x ", dim, " dense features exceed ", kMaxFeatureBytes, " bytes"));
      }
      d->features = torch::zeros({n, dim}, torch::kFloat32);
      features = d->features.data_ptr<float>();
    }
    float* row = features + id * dim;
    if (sparse) {
      for (absl::string_view c : cols) {
        FGL_ASSIGN_OR_RETURN(const int64_t k, ParseIntField(c, where, "feature index"));
        if (k < 0 || k >= dim) {
          return LineError(path, ln,
                           absl::StrCat("feature index ", k, " outside [0, ", dim,
                                        "] (feature_amount ", amount, ")"));
        }
        row[k] = 1.0f;
      }
    } else {
      if (static_cast<int64_t>(cols.size()) != dim) {
        return LineError(path, ln,
                         absl::StrCat(cols.size(),
                                      " feature values, but the first "
                                      "node line has ",
                                      dim));
      }
      for (int64_t k = 0; k < dim; ++k) {
        FGL_ASSIGN_OR_RETURN(row[k], ParseFloatField(cols[k], where, "feature value"));
      }
    }
  }
  if (features == nullptr) d->features = torch::zeros({0, std::max<int64_t>(dim, 0)});
  d->labels = torch::empty({n}, torch::kInt64);
  int64_t hi = -1;
  for (int64_t v = 0; v < n; ++v) {
    d->labels.data_ptr<int64_t>()[v] = labels[v];
    hi = std::max(hi, labels[v]);
  }
  d->num_classes = hi + 1;
  return absl::OkStatus();
}

absl::StatusOr<CsrGraph> ReadEdges(const std::string& path, const std::string& name, int64_t n) {
  FGL_ASSIGN_OR_RETURN(const std::string text, ReadFileBytes(path, name));
  const std::vector<absl::string_view> lines = SplitLines(text);
  if (lines.empty() || lines[0] != "node_id\tnode_id") {
    return LineError(path, 1, "expected header `node_id\\tnode_id`");
  }
  std::vector<int64_t> src, dst;
  src.reserve(lines.size());
  dst.reserve(lines.size());
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t ln = i + 1;
    const std::string where = absl::StrCat(path, ":", ln);
    const std::vector<absl::string_view> f = absl::StrSplit(lines[i], '\t');
    if (f.size() != 2) {
      return LineError(
          path, ln, absl::StrCat("expected 2 tab-separated node ids, got ", f.size(), " fields"));
    }
    FGL_ASSIGN_OR_RETURN(const int64_t u, ParseIntField(f[0], where, "node id"));
    FGL_ASSIGN_OR_RETURN(const int64_t v, ParseIntField(f[1], where, "node id"));
    if (u < 0 || u >= n || v < 0 || v >= n) {
      return LineError(path, ln,
                       absl::StrCat("edge (", u, ", ", v, ") has a node outside [0, ", n, ")"));
    }
    src.push_back(u);
    dst.push_back(v);
  }
  return CsrFromEdges(n, src, dst, {}, path);
}

}  // namespace

std::string GeomGcnFilePrefix(const std::string& name) { return name == "actor" ? "film" : name; }

absl::StatusOr<Dataset> LoadGeomGcn(const std::string& dir, const std::string& name) {
  Dataset d;
  d.name = name;
  FGL_RETURN_IF_ERROR(ReadNodes(dir + "/out1_node_feature_label.txt", name, &d));
  FGL_ASSIGN_OR_RETURN(d.graph, ReadEdges(dir + "/out1_graph_edges.txt", name, d.labels.size(0)));
  FGL_ASSIGN_OR_RETURN(d.provided_splits,
                       LoadGeomGcnSplits(dir + "/splits", name, d.labels.size(0)));
  FGL_RETURN_IF_ERROR(ValidateDataset(d));
  return d;
}

absl::StatusOr<std::vector<NodeSplit>> LoadGeomGcnSplits(const std::string& splits_dir,
                                                         const std::string& name,
                                                         int64_t num_nodes) {
  std::vector<NodeSplit> splits;
  for (int k = 0; k < kNumSplits; ++k) {
    const std::string path =
        absl::StrCat(splits_dir, "/", GeomGcnFilePrefix(name), "_split_0.6_0.2_", k, ".npz");
    FGL_ASSIGN_OR_RETURN(NpzArchive npz, NpzArchive::Open(path, name));
    NodeSplit s;
    for (auto [key, mask] :
         {std::make_pair("train_mask", &s.train), std::make_pair("val_mask", &s.val),
          std::make_pair("test_mask", &s.test)}) {
      const std::string where = absl::StrCat(path, ":", key, ".npy");
      FGL_ASSIGN_OR_RETURN(NpyArray a, npz.ReadArray(key));
      if (a.ndim() != 1 || a.shape[0] != num_nodes) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": expected a mask [", num_nodes,
                                                       "], got ", a.ndim(), "-d with ", a.numel(),
                                                       " entries"));
      }
      FGL_ASSIGN_OR_RETURN(*mask, NpyToBoolTensor(a, where));
    }
    splits.push_back(std::move(s));
  }
  return splits;
}

}  // namespace fgl::graph::io
