#include "graph/io/planetoid.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "graph/csr_graph.h"
#include "graph/io/file.h"
#include "graph/io/pickle.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::graph::io {
namespace {

// A dense matrix above this many elements is refused before allocation: the shape comes from
// the file, and the largest Planetoid matrix (PubMed, 19717 x 500) is far below it.
constexpr int64_t kMaxDenseElements = int64_t{1} << 28;

// PyG's public split puts this many nodes after the training nodes into validation.
constexpr int64_t kNumValNodes = 500;

absl::Status InFile(const std::string& path, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
}

absl::StatusOr<PickleValue> ReadPickle(const std::string& path, const std::string& name) {
  FGL_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path, name));
  return Unpickle(bytes, path);
}

absl::Status CheckDenseSize(int64_t rows, int64_t cols, const std::string& path) {
  if (rows < 0 || cols < 0 || (rows > 0 && cols > kMaxDenseElements / rows)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        path, ": a dense ", rows, " x ", cols, " matrix exceeds ", kMaxDenseElements, " elements"));
  }
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> AllocateDense(int64_t rows, int64_t cols, const std::string& path) {
  FGL_RETURN_IF_ERROR(CheckDenseSize(rows, cols, path));
  return torch::zeros({rows, cols}, torch::kFloat32);
}

// float32 [rows, cols] from a csr_matrix or a 2-D ndarray, as PyG's `out.todense()`: duplicate
// CSR entries add up.
absl::StatusOr<torch::Tensor> ToDense(const PickleValue& value, const std::string& path) {
  if (const NdArray* a = value.as_ndarray()) {
    if (a->shape.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": expected a 2-D array, got ", a->shape.size(), " dimensions"));
    }
    absl::StatusOr<std::vector<float>> values = NdArrayToFloat(*a);
    if (!values.ok()) return InFile(path, values.status());
    FGL_ASSIGN_OR_RETURN(torch::Tensor out, AllocateDense(a->shape[0], a->shape[1], path));
    std::copy(values->begin(), values->end(), out.data_ptr<float>());
    return out;
  }
  const CsrMatrix* m = value.as_csr();
  if (m == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": expected a csr_matrix or a 2-D ndarray, got ", KindName(value.kind())));
  }
  absl::StatusOr<std::vector<int64_t>> indptr = NdArrayToInt64(m->indptr);
  if (!indptr.ok()) return InFile(path, indptr.status());
  absl::StatusOr<std::vector<int64_t>> indices = NdArrayToInt64(m->indices);
  if (!indices.ok()) return InFile(path, indices.status());
  absl::StatusOr<std::vector<float>> data = NdArrayToFloat(m->data);
  if (!data.ok()) return InFile(path, data.status());
  const int64_t rows = m->num_rows, cols = m->num_cols;
  const int64_t nnz = static_cast<int64_t>(indices->size());
  // The unpickler guarantees indptr has rows + 1 entries and indices as many as data.
  if ((*indptr)[0] != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": csr indptr[0] = ", (*indptr)[0]));
  }
  for (int64_t r = 0; r < rows; ++r) {
    if ((*indptr)[r + 1] < (*indptr)[r] || (*indptr)[r + 1] > nnz) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": csr indptr[", r + 1,
                                                     "] = ", (*indptr)[r + 1], " after ",
                                                     (*indptr)[r], " with ", nnz, " entries"));
    }
  }
  FGL_ASSIGN_OR_RETURN(torch::Tensor out, AllocateDense(rows, cols, path));
  float* p = out.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = (*indptr)[r]; k < (*indptr)[r + 1]; ++k) {
      const int64_t c = (*indices)[k];
      if (c < 0 || c >= cols) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": csr row ", r, " has column ", c, " outside [0, ", cols, ")"));
      }
      p[r * cols + c] += (*data)[k];
    }
  }
  return out;
}

// test.index: one node id per line; a final newline is optional.
absl::StatusOr<std::vector<int64_t>> ParseIndexFile(const std::string& text,
                                                    const std::string& path) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  std::vector<int64_t> out;
  out.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const absl::string_view line = absl::StripAsciiWhitespace(lines[i]);
    int32_t v;  // node ids fit int32 in every Planetoid file; this also keeps id ranges small
    if (!absl::SimpleAtoi(line, &v) || v < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", i + 1, ": '", absl::CHexEscape(line), "' is not an integer in [0, 2^31)"));
    }
    out.push_back(v);
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no indices"));
  return out;
}

torch::Tensor IndexTensor(const std::vector<int64_t>& v) { return torch::tensor(v, torch::kInt64); }

// (src, dst) of every adjacency-list entry, as PyG's edge_index_from_dict.
absl::Status AdjacencyEdges(const PickleValue& value, int64_t num_nodes, const std::string& path,
                            std::vector<int64_t>* src, std::vector<int64_t>* dst) {
  const PickleDict* dict = value.as_dict();
  if (dict == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected a dict of adjacency lists, got ", KindName(value.kind())));
  }
  for (const auto& [key, neighbours] : dict->entries) {
    const int64_t* u = std::get_if<int64_t>(&key);
    if (u == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": a node key is a str, not an int"));
    }
    if (*u < 0 || *u >= num_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": node ", *u, " outside [0, ", num_nodes, ")"));
    }
    const std::vector<PickleValue>* list = neighbours.as_list();
    if (list == nullptr) list = neighbours.as_tuple();
    if (list == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": neighbours of node ", *u, " are a ",
                                                     KindName(neighbours.kind()), ", not a list"));
    }
    for (const PickleValue& n : *list) {
      const int64_t* v = n.as_int();
      if (v == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": node ", *u, " lists a ", KindName(n.kind()), " as a neighbour"));
      }
      if (*v < 0 || *v >= num_nodes) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": node ", *u, " lists neighbour ", *v,
                                                       " outside [0, ", num_nodes, ")"));
      }
      src->push_back(*u);
      dst->push_back(*v);
    }
  }
  return absl::OkStatus();
}

torch::Tensor Mask(int64_t n, int64_t begin, int64_t end) {
  torch::Tensor m = torch::zeros({n}, torch::kBool);
  m.slice(0, begin, end).fill_(true);
  return m;
}

}  // namespace

absl::StatusOr<Dataset> LoadPlanetoid(const std::string& dir, const std::string& name) {
  if (name != "cora" && name != "citeseer" && name != "pubmed") {
    return absl::NotFoundError(
        absl::StrCat("unknown Planetoid dataset '", name, "' (expected cora, citeseer or pubmed)"));
  }
  auto path = [&](const char* part) { return absl::StrCat(dir, "/ind.", name, ".", part); };
  const std::string x_path = path("x"), tx_path = path("tx"), allx_path = path("allx");
  const std::string y_path = path("y"), ty_path = path("ty"), ally_path = path("ally");
  const std::string graph_path = path("graph"), index_path = path("test.index");

  // PyG's reading order, so that the first missing file is the one PyG would report.
  FGL_ASSIGN_OR_RETURN(PickleValue x_value, ReadPickle(x_path, name));
  FGL_ASSIGN_OR_RETURN(torch::Tensor x, ToDense(x_value, x_path));
  FGL_ASSIGN_OR_RETURN(PickleValue tx_value, ReadPickle(tx_path, name));
  FGL_ASSIGN_OR_RETURN(torch::Tensor tx, ToDense(tx_value, tx_path));
  FGL_ASSIGN_OR_RETURN(PickleValue allx_value, ReadPickle(allx_path, name));
  FGL_ASSIGN_OR_RETURN(torch::Tensor allx, ToDense(allx_value, allx_path));
  FGL_ASSIGN_OR_RETURN(PickleValue y_value, ReadPickle(y_path, name));
  FGL_ASSIGN_OR_RETURN(torch::Tensor y, ToDense(y_value, y_path));
  FGL_ASSIGN_OR_RETURN(PickleValue ty_value, ReadPickle(ty_path, name));
  FGL_ASSIGN_OR_RETURN(torch::Tensor ty, ToDense(ty_value, ty_path));
  FGL_ASSIGN_OR_RETURN(PickleValue ally_value, ReadPickle(ally_path, name));
  FGL_ASSIGN_OR_RETURN(torch::Tensor ally, ToDense(ally_value, ally_path));
  FGL_ASSIGN_OR_RETURN(PickleValue graph_value, ReadPickle(graph_path, name));
  FGL_ASSIGN_OR_RETURN(std::string index_text, ReadFileBytes(index_path, name));
  FGL_ASSIGN_OR_RETURN(std::vector<int64_t> test_index, ParseIndexFile(index_text, index_path));

  const int64_t num_features = allx.size(1), num_classes = ally.size(1);
  const int64_t num_test = static_cast<int64_t>(test_index.size());
  auto mismatch = [](const std::string& what, int64_t got, int64_t want) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is ", got, ", expected ", want));
  };
  if (x.size(1) != num_features) return mismatch(x_path + ": width", x.size(1), num_features);
  if (tx.size(1) != num_features) return mismatch(tx_path + ": width", tx.size(1), num_features);
  if (y.size(1) != num_classes) return mismatch(y_path + ": width", y.size(1), num_classes);
  if (ty.size(1) != num_classes) return mismatch(ty_path + ": width", ty.size(1), num_classes);
  if (ally.size(0) != allx.size(0)) {
    return mismatch(ally_path + ": rows", ally.size(0), allx.size(0));
  }
  if (tx.size(0) != num_test) {
    return mismatch(tx_path + ": rows (one per test index)", tx.size(0), num_test);
  }
  if (ty.size(0) != num_test) {
    return mismatch(ty_path + ": rows (one per test index)", ty.size(0), num_test);
  }
  if (num_classes == 0) return absl::InvalidArgumentError(absl::StrCat(ally_path, ": no classes"));

  std::vector<int64_t> sorted_index = test_index;
  std::sort(sorted_index.begin(), sorted_index.end());
  for (int64_t i = 1; i < num_test; ++i) {
    if (sorted_index[i] == sorted_index[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat(index_path, ": node ", sorted_index[i], " is listed twice"));
    }
  }
  // CiteSeer's test range has ids without a tx/ty row; PyG pads that range with zero rows,
  // placing tx row i at sorted_index[i] - min.
  if (name == "citeseer") {
    const int64_t lo = sorted_index.front(), range = sorted_index.back() - lo + 1;
    FGL_ASSIGN_OR_RETURN(torch::Tensor tx_ext, AllocateDense(range, num_features, tx_path));
    FGL_ASSIGN_OR_RETURN(torch::Tensor ty_ext, AllocateDense(range, num_classes, ty_path));
    const torch::Tensor at = IndexTensor(sorted_index) - lo;
    tx_ext.index_copy_(0, at, tx);
    ty_ext.index_copy_(0, at, ty);
    tx = tx_ext;
    ty = ty_ext;
  }
  const int64_t num_nodes = allx.size(0) + tx.size(0);
  FGL_RETURN_IF_ERROR(CheckDenseSize(num_nodes, num_features, allx_path));
  for (int64_t v : test_index) {
    if (v >= num_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat(index_path, ": node ", v, " outside [0, ", num_nodes, ")"));
    }
  }
  const int64_t num_train = y.size(0);
  if (num_train + kNumValNodes > num_nodes) {
    return absl::InvalidArgumentError(absl::StrCat(y_path, ": ", num_train, " training + ",
                                                   kNumValNodes, " validation nodes exceed the ",
                                                   num_nodes, " nodes"));
  }

  // x[test_index] = x[sorted_test_index], as PyG: tx row i ends up at node test_index[i].
  torch::Tensor features = torch::cat({allx, tx}, 0);
  torch::Tensor onehot = torch::cat({ally, ty}, 0);
  const torch::Tensor test_t = IndexTensor(test_index), sorted_t = IndexTensor(sorted_index);
  features.index_copy_(0, test_t, features.index_select(0, sorted_t));
  onehot.index_copy_(0, test_t, onehot.index_select(0, sorted_t));

  // First maximum per row, so that a zero row (a padded CiteSeer node) gets label 0.
  torch::Tensor labels = torch::empty({num_nodes}, torch::kInt64);
  {
    const float* oh = onehot.data_ptr<float>();
    int64_t* lab = labels.data_ptr<int64_t>();
    for (int64_t v = 0; v < num_nodes; ++v) {
      const float* row = oh + v * num_classes;
      lab[v] = std::max_element(row, row + num_classes) - row;
    }
  }

  std::vector<int64_t> src, dst;
  FGL_RETURN_IF_ERROR(AdjacencyEdges(graph_value, num_nodes, graph_path, &src, &dst));
  FGL_ASSIGN_OR_RETURN(CsrGraph graph, CsrFromEdges(num_nodes, src, dst, {}, graph_path));

  Dataset d;
  d.name = name;
  d.graph = std::move(graph);
  d.features = features;
  d.labels = labels;
  d.num_classes = num_classes;
  NodeSplit split;
  split.train = Mask(num_nodes, 0, num_train);
  split.val = Mask(num_nodes, num_train, num_train + kNumValNodes);
  split.test = torch::zeros({num_nodes}, torch::kBool);
  split.test.index_fill_(0, test_t, true);
  d.provided_splits.push_back(std::move(split));
  FGL_RETURN_IF_ERROR(ValidateDataset(d));
  return d;
}

}  // namespace fgl::graph::io
