#include "graph/csr_graph.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fgl::graph {

CsrGraph::CsrGraph(torch::Tensor row_ptr, torch::Tensor col, torch::Tensor edge_weight)
    : row_ptr_(std::move(row_ptr)), col_(std::move(col)), edge_weight_(std::move(edge_weight)) {
  rp_ = row_ptr_.data_ptr<int64_t>();
  cp_ = col_.data_ptr<int64_t>();
}

absl::StatusOr<CsrGraph> CsrGraph::Create(torch::Tensor row_ptr, torch::Tensor col,
                                          torch::Tensor edge_weight) {
  if (!row_ptr.defined() || row_ptr.dim() != 1 || row_ptr.scalar_type() != torch::kInt64 ||
      row_ptr.size(0) < 1) {
    return absl::InvalidArgumentError("CsrGraph: row_ptr must be int64 [num_nodes + 1]");
  }
  if (!col.defined() || col.dim() != 1 || col.scalar_type() != torch::kInt64) {
    return absl::InvalidArgumentError("CsrGraph: col must be int64 [num_entries]");
  }
  row_ptr = row_ptr.to(torch::kCPU).contiguous();
  col = col.to(torch::kCPU).contiguous();
  const int64_t n = row_ptr.size(0) - 1;
  const int64_t* rp = row_ptr.data_ptr<int64_t>();
  if (rp[0] != 0) return absl::InvalidArgumentError(absl::StrCat("CsrGraph: row_ptr[0] = ", rp[0]));
  for (int64_t v = 0; v < n; ++v) {
    if (rp[v + 1] < rp[v]) {
      return absl::InvalidArgumentError(absl::StrCat("CsrGraph: row_ptr decreases at node ", v,
                                                     ": ", rp[v], " > ", rp[v + 1]));
    }
  }
  if (rp[n] != col.size(0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CsrGraph: row_ptr[n] = ", rp[n], " but col has ", col.size(0), " entries"));
  }
  const int64_t* cp = col.data_ptr<int64_t>();
  for (int64_t e = 0; e < col.size(0); ++e) {
    if (cp[e] < 0 || cp[e] >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("CsrGraph: col[", e, "] = ", cp[e], " outside [0, ", n, ")"));
    }
  }
  if (edge_weight.defined()) {
    if (edge_weight.dim() != 1 || edge_weight.scalar_type() != torch::kFloat32 ||
        edge_weight.size(0) != col.size(0)) {
      return absl::InvalidArgumentError("CsrGraph: edge_weight must be float32 [num_entries]");
    }
    edge_weight = edge_weight.to(torch::kCPU).contiguous();
  }
  return CsrGraph(std::move(row_ptr), std::move(col), std::move(edge_weight));
}

CsrGraph CsrGraph::Empty(int64_t num_nodes) {
  return CsrGraph(torch::zeros({num_nodes + 1}, torch::kInt64), torch::zeros({0}, torch::kInt64),
                  {});
}

bool CsrGraph::IsSymmetric() const {
  const int64_t n = num_nodes();
  for (int64_t u = 0; u < n; ++u) {
    for (int64_t v : neighbors(u)) {
      absl::Span<const int64_t> back = neighbors(v);
      if (std::find(back.begin(), back.end(), u) == back.end()) return false;
    }
  }
  return true;
}

int64_t CsrGraph::CountSelfLoops() const {
  int64_t loops = 0;
  for (int64_t u = 0; u < num_nodes(); ++u)
    for (int64_t v : neighbors(u)) loops += (u == v);
  return loops;
}

absl::StatusOr<CsrGraph> CsrFromEdges(int64_t num_nodes, absl::Span<const int64_t> src,
                                      absl::Span<const int64_t> dst,
                                      const EdgeListOptions& options, const std::string& source) {
  if (src.size() != dst.size()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", src.size(), " sources but ",
                                                   dst.size(), " targets"));
  }
  if (num_nodes < 0) return absl::InvalidArgumentError(absl::StrCat(source, ": negative node count"));
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] < 0 || src[i] >= num_nodes || dst[i] < 0 || dst[i] >= num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": edge ", i, " (", src[i], ", ",
                                                     dst[i], ") has a node outside [0, ",
                                                     num_nodes, ")"));
    }
  }
  // Counting sort by row, then sort + unique within each row.
  std::vector<int64_t> counts(num_nodes + 1, 0);
  auto keep = [&](int64_t u, int64_t v) { return !(options.remove_self_loops && u == v); };
  for (size_t i = 0; i < src.size(); ++i) {
    if (!keep(src[i], dst[i])) continue;
    ++counts[src[i] + 1];
    if (options.symmetrize && src[i] != dst[i]) ++counts[dst[i] + 1];
  }
  std::partial_sum(counts.begin(), counts.end(), counts.begin());
  std::vector<int64_t> fill(counts.begin(), counts.end() - 1);
  std::vector<int64_t> cols(counts[num_nodes]);
  for (size_t i = 0; i < src.size(); ++i) {
    if (!keep(src[i], dst[i])) continue;
    cols[fill[src[i]]++] = dst[i];
    if (options.symmetrize && src[i] != dst[i]) cols[fill[dst[i]]++] = src[i];
  }
  torch::Tensor row_ptr = torch::empty({num_nodes + 1}, torch::kInt64);
  int64_t* rp = row_ptr.data_ptr<int64_t>();
  rp[0] = 0;
  int64_t out = 0;
  for (int64_t u = 0; u < num_nodes; ++u) {
    auto begin = cols.begin() + counts[u], end = cols.begin() + counts[u + 1];
    std::sort(begin, end);
    auto last = std::unique(begin, end);
    for (auto it = begin; it != last; ++it) cols[out++] = *it;
    rp[u + 1] = out;
  }
  torch::Tensor col = torch::empty({out}, torch::kInt64);
  std::copy(cols.begin(), cols.begin() + out, col.data_ptr<int64_t>());
  return CsrGraph::Create(std::move(row_ptr), std::move(col));
}

absl::StatusOr<Subgraph> InducedSubgraph(const CsrGraph& graph, absl::Span<const int64_t> nodes) {
  const int64_t n = graph.num_nodes();
  std::vector<int64_t> local(n, -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int64_t v = nodes[i];
    if (v < 0 || v >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("InducedSubgraph: node ", v, " outside [0, ", n, ")"));
    }
    if (local[v] != -1) {
      return absl::InvalidArgumentError(absl::StrCat("InducedSubgraph: node ", v, " listed twice"));
    }
    local[v] = static_cast<int64_t>(i);
  }
  const int64_t k = static_cast<int64_t>(nodes.size());
  torch::Tensor row_ptr = torch::empty({k + 1}, torch::kInt64);
  int64_t* rp = row_ptr.data_ptr<int64_t>();
  rp[0] = 0;
  std::vector<int64_t> cols;
  std::vector<float> weights;
  const float* w = graph.has_edge_weight() ? graph.edge_weight().data_ptr<float>() : nullptr;
  int64_t dropped = 0;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t u = nodes[i];
    const int64_t begin = graph.row_ptr_data()[u];
    absl::Span<const int64_t> nb = graph.neighbors(u);
    const size_t row_start = cols.size();
    for (size_t j = 0; j < nb.size(); ++j) {
      const int64_t lv = local[nb[j]];
      if (lv < 0) {
        ++dropped;
        continue;
      }
      cols.push_back(lv);
      if (w) weights.push_back(w[begin + j]);
    }
    // Local ids follow `nodes` order, so re-sort each row.
    if (!w) {
      std::sort(cols.begin() + row_start, cols.end());
    } else {
      std::vector<std::pair<int64_t, float>> row;
      for (size_t j = row_start; j < cols.size(); ++j) row.emplace_back(cols[j], weights[j]);
      std::sort(row.begin(), row.end());
      for (size_t j = 0; j < row.size(); ++j) {
        cols[row_start + j] = row[j].first;
        weights[row_start + j] = row[j].second;
      }
    }
    rp[i + 1] = static_cast<int64_t>(cols.size());
  }
  torch::Tensor col = torch::from_blob(cols.data(), {static_cast<int64_t>(cols.size())},
                                       torch::kInt64)
                          .clone();
  torch::Tensor ew;
  if (w) {
    ew = torch::from_blob(weights.data(), {static_cast<int64_t>(weights.size())}, torch::kFloat32)
             .clone();
  }
  auto g = CsrGraph::Create(std::move(row_ptr), std::move(col), std::move(ew));
  if (!g.ok()) return g.status();
  return Subgraph{*std::move(g), std::vector<int64_t>(nodes.begin(), nodes.end()), dropped};
}

std::vector<int64_t> ConnectedComponents(const CsrGraph& graph, int64_t* num_components) {
  const int64_t n = graph.num_nodes();
  std::vector<int64_t> comp(n, -1);
  std::vector<int64_t> stack;
  int64_t next = 0;
  for (int64_t s = 0; s < n; ++s) {
    if (comp[s] != -1) continue;
    comp[s] = next;
    stack.push_back(s);
    while (!stack.empty()) {
      const int64_t u = stack.back();
      stack.pop_back();
      for (int64_t v : graph.neighbors(u)) {
        if (comp[v] == -1) {
          comp[v] = next;
          stack.push_back(v);
        }
      }
    }
    ++next;
  }
  if (num_components) *num_components = next;
  return comp;
}

std::vector<int64_t> LargestComponentNodes(const CsrGraph& graph) {
  int64_t k = 0;
  std::vector<int64_t> comp = ConnectedComponents(graph, &k);
  std::vector<int64_t> size(k, 0);
  for (int64_t c : comp) ++size[c];
  const int64_t best = std::max_element(size.begin(), size.end()) - size.begin();
  std::vector<int64_t> nodes;
  for (int64_t v = 0; v < graph.num_nodes(); ++v)
    if (comp[v] == best) nodes.push_back(v);
  return nodes;
}

}  // namespace fgl::graph
