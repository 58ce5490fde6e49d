#include "graph/io/gnn_benchmark.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstring>
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
constexpr int64_t kMaxDim = int64_t{1} << 62;

struct Member {
  NpyArray array;
  std::string where;  // "<path>:<key>.npy", for messages
};

absl::StatusOr<Member> ReadMember(NpzArchive& npz, absl::string_view key) {
  Member m;
  m.where = absl::StrCat(npz.source(), ":", key, ".npy");
  FGL_ASSIGN_OR_RETURN(m.array, npz.ReadArray(key));
  return m;
}

bool IsIndexType(NpyDtype d) { return d == NpyDtype::kInt32 || d == NpyDtype::kInt64; }
bool IsRealType(NpyDtype d) { return d == NpyDtype::kFloat32 || d == NpyDtype::kFloat64; }

// A 1-d int32/int64 member of length `want` (any length when want < 0).
absl::StatusOr<Member> ReadIndexVector(NpzArchive& npz, absl::string_view key, int64_t want) {
  FGL_ASSIGN_OR_RETURN(Member m, ReadMember(npz, key));
  if (!IsIndexType(m.array.dtype) || m.array.ndim() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(m.where, ": expected a 1-d <i4 or <i8 array"));
  }
  if (want >= 0 && m.array.shape[0] != want) {
    return absl::InvalidArgumentError(
        absl::StrCat(m.where, ": has ", m.array.shape[0], " entries, expected ", want));
  }
  return m;
}

// Calls f with the elements of an int32 or int64 array as a span.
template <typename F>
auto VisitIndex(const NpyArray& a, F&& f) {
  if (a.dtype == NpyDtype::kInt32) return f(a.values<int32_t>());
  return f(a.values<int64_t>());
}

template <typename F>
auto VisitReal(const NpyArray& a, F&& f) {
  if (a.dtype == NpyDtype::kFloat32) return f(a.values<float>());
  return f(a.values<double>());
}

// `<prefix>_shape`: two non-negative integers.
absl::StatusOr<std::pair<int64_t, int64_t>> ReadShape(NpzArchive& npz, absl::string_view key) {
  FGL_ASSIGN_OR_RETURN(Member m, ReadIndexVector(npz, key, 2));
  const std::pair<int64_t, int64_t> s = VisitIndex(m.array, [](auto v) {
    return std::make_pair(static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1]));
  });
  // The bound keeps `rows + 1` and similar arithmetic far from overflow.
  if (s.first < 0 || s.second < 0 || s.first >= kMaxDim || s.second >= kMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrCat(m.where, ": shape (", s.first, ", ", s.second, ") outside [0, 2^62)"));
  }
  return s;
}

// indptr[0] == 0, non-decreasing, indptr[n] == nnz. complexity: O(n).
template <typename P>
absl::Status CheckIndptr(absl::Span<const P> indptr, int64_t nnz, const std::string& where) {
  if (indptr[0] != 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": indptr[0] = ", indptr[0]));
  }
  for (size_t r = 0; r + 1 < indptr.size(); ++r) {
    if (indptr[r + 1] < indptr[r]) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": decreases at row ", r, ": ", indptr[r], " > ", indptr[r + 1]));
    }
  }
  if (static_cast<int64_t>(indptr.back()) != nnz) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": last entry ", indptr.back(),
                                                   " but there are ", nnz, " stored entries"));
  }
  return absl::OkStatus();
}

template <typename I>
absl::Status CheckIndices(absl::Span<const I> indices, int64_t bound, const std::string& where) {
  for (size_t j = 0; j < indices.size(); ++j) {
    if (indices[j] < 0 || indices[j] >= bound) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": entry ", j, " = ", indices[j], " outside [0, ", bound, ")"));
    }
  }
  return absl::OkStatus();
}

// Reads a CSR matrix `<prefix>_{indptr,indices,data}` with `rows` rows and `cols` columns,
// checking it fully. Returns {indptr, indices, data}.
absl::StatusOr<std::vector<Member>> ReadCsr(NpzArchive& npz, const std::string& prefix,
                                            int64_t rows, int64_t cols) {
  FGL_ASSIGN_OR_RETURN(Member indptr, ReadIndexVector(npz, prefix + "_indptr", rows + 1));
  FGL_ASSIGN_OR_RETURN(Member indices, ReadIndexVector(npz, prefix + "_indices", -1));
  FGL_ASSIGN_OR_RETURN(Member data, ReadMember(npz, prefix + "_data"));
  const int64_t nnz = indices.array.shape[0];
  if (!IsRealType(data.array.dtype) || data.array.ndim() != 1 || data.array.shape[0] != nnz) {
    return absl::InvalidArgumentError(absl::StrCat(data.where, ": expected <f4 or <f8 [", nnz,
                                                   "] to match ", prefix, "_indices"));
  }
  FGL_RETURN_IF_ERROR(
      VisitIndex(indptr.array, [&](auto p) { return CheckIndptr(p, nnz, indptr.where); }));
  FGL_RETURN_IF_ERROR(
      VisitIndex(indices.array, [&](auto ix) { return CheckIndices(ix, cols, indices.where); }));
  std::vector<Member> out;
  out.push_back(std::move(indptr));
  out.push_back(std::move(indices));
  out.push_back(std::move(data));
  return out;
}

// Dense [rows, cols] from a checked CSR, writing each row once: zero it, then add its entries
// (duplicates sum, as in scipy). Rows are disjoint, so the threads never share output.
template <typename P, typename I, typename V>
void FillDense(absl::Span<const P> indptr, absl::Span<const I> indices, absl::Span<const V> data,
               int64_t cols, float* out) {
  const int64_t rows = static_cast<int64_t>(indptr.size()) - 1;
  // At least ~2^20 floats written per thread: below that, waking the OpenMP team costs more than
  // it saves (and on a loaded machine far more: the fuzz test's thousands of tiny matrices).
  const int64_t grain = std::max<int64_t>(256, (int64_t{1} << 20) / std::max<int64_t>(cols, 1));
  at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* row = out + r * cols;
      std::memset(row, 0, sizeof(float) * cols);
      for (int64_t j = indptr[r]; j < static_cast<int64_t>(indptr[r + 1]); ++j) {
        row[indices[j]] += static_cast<float>(data[j]);
      }
    }
  });
}

}  // namespace

absl::StatusOr<Dataset> LoadGnnBenchmarkNpz(const std::string& path, const std::string& name,
                                            size_t max_feature_bytes) {
  FGL_ASSIGN_OR_RETURN(NpzArchive npz, NpzArchive::Open(path, name));
  Dataset d;
  d.name = name;

  // Adjacency.
  FGL_ASSIGN_OR_RETURN(const auto adj_shape, ReadShape(npz, "adj_shape"));
  const int64_t n = adj_shape.first;
  if (adj_shape.second != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":adj_shape.npy: (", n, ", ", adj_shape.second, ") is not square"));
  }
  {
    FGL_ASSIGN_OR_RETURN(std::vector<Member> adj, ReadCsr(npz, "adj", n, n));
    const int64_t nnz = adj[1].array.shape[0];
    std::vector<int64_t> src(nnz), dst(nnz);
    VisitIndex(adj[0].array, [&](auto indptr) {
      VisitIndex(adj[1].array, [&](auto indices) {
        for (int64_t r = 0; r < n; ++r) {
          for (int64_t j = indptr[r]; j < static_cast<int64_t>(indptr[r + 1]); ++j) {
            src[j] = r;
            dst[j] = indices[j];
          }
        }
      });
    });
    FGL_ASSIGN_OR_RETURN(d.graph, CsrFromEdges(n, src, dst, {}, path + ":adj_indices.npy"));
  }

  // Features.
  FGL_ASSIGN_OR_RETURN(const auto attr_shape, ReadShape(npz, "attr_shape"));
  if (attr_shape.first != n) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":attr_shape.npy: ", attr_shape.first,
                                                   " rows but adj_shape has ", n, " nodes"));
  }
  const int64_t dim = attr_shape.second;
  if (dim > 0 && static_cast<uint64_t>(n) > max_feature_bytes / sizeof(float) / dim) {
    return absl::ResourceExhaustedError(absl::StrCat(path, ":attr_shape.npy: dense features (", n,
                                                     " x ", dim, " float32) exceed ",
                                                     max_feature_bytes, " bytes"));
  }
  {
    FGL_ASSIGN_OR_RETURN(std::vector<Member> attr, ReadCsr(npz, "attr", n, dim));
    d.features = torch::empty({n, dim}, torch::kFloat32);
    float* out = d.features.data_ptr<float>();
    VisitIndex(attr[0].array, [&](auto indptr) {
      VisitIndex(attr[1].array, [&](auto indices) {
        VisitReal(attr[2].array, [&](auto data) { FillDense(indptr, indices, data, dim, out); });
      });
    });
  }

  // Labels.
  FGL_ASSIGN_OR_RETURN(Member labels, ReadMember(npz, "labels"));
  if (labels.array.ndim() != 1 || labels.array.shape[0] != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(labels.where, ": expected an integer array [", n, "]"));
  }
  FGL_ASSIGN_OR_RETURN(d.labels, NpyToInt64Tensor(labels.array, labels.where));
  if (n > 0) {
    const int64_t lo = d.labels.min().item<int64_t>(), hi = d.labels.max().item<int64_t>();
    if (lo < 0 || hi >= kMaxClasses) {
      return absl::InvalidArgumentError(absl::StrCat(labels.where, ": labels span [", lo, ", ", hi,
                                                     "], outside [0, ", kMaxClasses, ")"));
    }
    d.num_classes = hi + 1;
  }
  FGL_RETURN_IF_ERROR(ValidateDataset(d));
  return d;
}

}  // namespace fgl::graph::io
