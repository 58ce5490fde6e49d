#include "graph/io/ogb.h"

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/io/file.h"
#include "graph/io/text_fields.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::graph::io {
namespace {

// Larger label values mean a corrupt file, and would make per-class arrays huge.
constexpr int64_t kMaxClasses = int64_t{1} << 16;

// A CSV file's text, its path (for messages) and its lines, which point into `text` (so a
// CsvFile is filled in place, never moved: a short string's bytes move with the object).
struct CsvFile {
  std::string path;
  std::string text;
  std::vector<absl::string_view> lines;
};

absl::Status LineError(const std::string& path, size_t line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ": ", what));
}

// `base`.gz if present (OGB ships gzipped CSVs), else `base`; NotFound names the .gz.
absl::Status ReadCsv(const std::string& base, const std::string& name, CsvFile* f) {
  f->path = FileExists(base + ".gz") || !FileExists(base) ? base + ".gz" : base;
  FGL_ASSIGN_OR_RETURN(f->text, ReadMaybeGzip(f->path, name));
  f->lines = SplitLines(f->text);
  return absl::OkStatus();
}

// Calls `field(k, token)` for each comma-separated token of `line`; returns the count.
template <typename F>
absl::StatusOr<int64_t> ForEachField(absl::string_view line, F&& field) {
  int64_t k = 0;
  size_t start = 0;
  while (true) {
    size_t end = line.find(',', start);
    if (end == absl::string_view::npos) end = line.size();
    FGL_RETURN_IF_ERROR(field(k++, line.substr(start, end - start)));
    if (end == line.size()) return k;
    start = end + 1;
  }
}

absl::StatusOr<int64_t> ReadNumNodes(const std::string& raw, const std::string& name) {
  CsvFile f;
  FGL_RETURN_IF_ERROR(ReadCsv(raw + "/num-node-list.csv", name, &f));
  if (f.lines.size() != 1) {
    return LineError(
        f.path, 1,
        absl::StrCat("expected one node count (a single graph), got ", f.lines.size(), " lines"));
  }
  FGL_ASSIGN_OR_RETURN(const int64_t n, ParseIntField(f.lines[0], f.path + ":1", "node count"));
  if (n < 0) return LineError(f.path, 1, absl::StrCat("negative node count ", n));
  return n;
}

absl::StatusOr<torch::Tensor> ReadFeatures(const std::string& raw, const std::string& name,
                                           int64_t n) {
  CsvFile f;
  FGL_RETURN_IF_ERROR(ReadCsv(raw + "/node-feat.csv", name, &f));
  // Checked before allocating, so a wrong node count cannot size the matrix.
  if (static_cast<int64_t>(f.lines.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(f.path, ": ", f.lines.size(), " rows but num-node-list says ", n, " nodes"));
  }
  if (n == 0) return torch::zeros({0, 0}, torch::kFloat32);
  const int64_t dim = std::count(f.lines[0].begin(), f.lines[0].end(), ',') + 1;
  torch::Tensor x = torch::empty({n, dim}, torch::kFloat32);
  float* out = x.data_ptr<float>();
  for (int64_t v = 0; v < n; ++v) {
    const size_t ln = v + 1;
    const std::string where = absl::StrCat(f.path, ":", ln);
    float* row = out + v * dim;
    FGL_ASSIGN_OR_RETURN(const int64_t width,
                         ForEachField(f.lines[v], [&](int64_t k, absl::string_view tok) {
                           if (k >= dim) return absl::OkStatus();  // counted, reported below
                           FGL_ASSIGN_OR_RETURN(row[k], ParseFloatField(tok, where, "feature"));
                           return absl::OkStatus();
                         }));
    if (width != dim) {
      return LineError(f.path, ln, absl::StrCat(width, " features, but row 1 has ", dim));
    }
  }
  return x;
}

absl::StatusOr<torch::Tensor> ReadLabels(const std::string& raw, const std::string& name, int64_t n,
                                         int64_t* num_classes) {
  CsvFile f;
  FGL_RETURN_IF_ERROR(ReadCsv(raw + "/node-label.csv", name, &f));
  if (static_cast<int64_t>(f.lines.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(f.path, ": ", f.lines.size(), " labels but num-node-list says ", n, " nodes"));
  }
  torch::Tensor y = torch::empty({n}, torch::kInt64);
  int64_t* out = y.data_ptr<int64_t>();
  int64_t hi = -1;
  for (int64_t v = 0; v < n; ++v) {
    const size_t ln = v + 1;
    FGL_ASSIGN_OR_RETURN(out[v], ParseIntField(f.lines[v], absl::StrCat(f.path, ":", ln),
                                               "label (one integer per line)"));
    if (out[v] < 0 || out[v] >= kMaxClasses) {
      return LineError(f.path, ln,
                       absl::StrCat("label ", out[v], " outside [0, ", kMaxClasses, ")"));
    }
    hi = std::max(hi, out[v]);
  }
  *num_classes = hi + 1;
  return y;
}

absl::StatusOr<CsrGraph> ReadEdges(const std::string& raw, const std::string& name, int64_t n) {
  CsvFile f;
  FGL_RETURN_IF_ERROR(ReadCsv(raw + "/edge.csv", name, &f));
  std::vector<int64_t> src(f.lines.size()), dst(f.lines.size());
  for (size_t i = 0; i < f.lines.size(); ++i) {
    const size_t ln = i + 1;
    const std::string where = absl::StrCat(f.path, ":", ln);
    int64_t ends[2] = {0, 0};
    FGL_ASSIGN_OR_RETURN(
        const int64_t width, ForEachField(f.lines[i], [&](int64_t k, absl::string_view tok) {
          if (k >= 2) return absl::OkStatus();
          FGL_ASSIGN_OR_RETURN(ends[k], ParseIntField(tok, where, "node id"));
          if (ends[k] < 0 || ends[k] >= n) {
            return LineError(f.path, ln, absl::StrCat("node ", ends[k], " outside [0, ", n, ")"));
          }
          return absl::OkStatus();
        }));
    if (width != 2) {
      return LineError(f.path, ln, absl::StrCat("expected src,dst; got ", width, " fields"));
    }
    src[i] = ends[0];
    dst[i] = ends[1];
  }
  return CsrFromEdges(n, src, dst, {}, f.path);
}

absl::StatusOr<torch::Tensor> ReadSplitMask(const std::string& base, const std::string& name,
                                            int64_t n) {
  CsvFile f;
  FGL_RETURN_IF_ERROR(ReadCsv(base, name, &f));
  torch::Tensor mask = torch::zeros({n}, torch::kBool);
  bool* m = mask.data_ptr<bool>();
  for (size_t i = 0; i < f.lines.size(); ++i) {
    const size_t ln = i + 1;
    FGL_ASSIGN_OR_RETURN(const int64_t v,
                         ParseIntField(f.lines[i], absl::StrCat(f.path, ":", ln), "node id"));
    if (v < 0 || v >= n) {
      return LineError(f.path, ln, absl::StrCat("node ", v, " outside [0, ", n, ")"));
    }
    if (m[v]) return LineError(f.path, ln, absl::StrCat("node ", v, " listed twice"));
    m[v] = true;
  }
  return mask;
}

// One split per directory under `dir`/split, in name order; none if there is no split/.
absl::StatusOr<std::vector<NodeSplit>> ReadSplits(const std::string& dir, const std::string& name,
                                                  int64_t n) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path root = fs::path(dir) / "split";
  if (!fs::is_directory(root, ec)) return std::vector<NodeSplit>();
  std::vector<std::string> schemes;
  for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
    if (e.is_directory(ec)) schemes.push_back(e.path().string());
  }
  if (ec) return absl::UnavailableError(absl::StrCat(root.string(), ": ", ec.message()));
  std::sort(schemes.begin(), schemes.end());
  std::vector<NodeSplit> splits;
  for (const std::string& s : schemes) {
    NodeSplit split;
    FGL_ASSIGN_OR_RETURN(split.train, ReadSplitMask(s + "/train.csv", name, n));
    FGL_ASSIGN_OR_RETURN(split.val, ReadSplitMask(s + "/valid.csv", name, n));
    FGL_ASSIGN_OR_RETURN(split.test, ReadSplitMask(s + "/test.csv", name, n));
    splits.push_back(std::move(split));
  }
  return splits;
}

}  // namespace

absl::StatusOr<Dataset> LoadOgbNodeProp(const std::string& dir, const std::string& name) {
  const std::string raw = dir + "/raw";
  Dataset d;
  d.name = name;
  FGL_ASSIGN_OR_RETURN(const int64_t n, ReadNumNodes(raw, name));
  FGL_ASSIGN_OR_RETURN(d.features, ReadFeatures(raw, name, n));
  FGL_ASSIGN_OR_RETURN(d.labels, ReadLabels(raw, name, n, &d.num_classes));
  FGL_ASSIGN_OR_RETURN(d.graph, ReadEdges(raw, name, n));
  FGL_ASSIGN_OR_RETURN(d.provided_splits, ReadSplits(dir, name, n));
  FGL_RETURN_IF_ERROR(ValidateDataset(d));
  return d;
}

}  // namespace fgl::graph::io
