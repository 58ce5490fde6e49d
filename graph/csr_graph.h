// An immutable graph in CSR form (DGL-style plain data): the neighbours of node v are
// col[row_ptr[v] .. row_ptr[v+1]). Undirected graphs store both directions.
#ifndef FGL_GRAPH_CSR_GRAPH_H_
#define FGL_GRAPH_CSR_GRAPH_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace fgl::graph {

class CsrGraph {
 public:
  // Checks: row_ptr int64 [n+1], row_ptr[0] == 0, non-decreasing; col int64 [row_ptr[n]],
  // every entry in [0, n); edge_weight, if defined, float32 [row_ptr[n]]. Everything else relies
  // on these. complexity: O(N + E).
  static absl::StatusOr<CsrGraph> Create(torch::Tensor row_ptr, torch::Tensor col,
                                         torch::Tensor edge_weight = {});

  // The empty graph with `num_nodes` nodes and no edges.
  static CsrGraph Empty(int64_t num_nodes);

  CsrGraph() : CsrGraph(torch::zeros({1}, torch::kInt64), torch::zeros({0}, torch::kInt64), {}) {}

  int64_t num_nodes() const { return row_ptr_.size(0) - 1; }
  // Stored (directed) entries; an undirected graph stores each edge twice.
  int64_t num_entries() const { return col_.size(0); }
  // Undirected edges of a symmetric graph without self-loops: num_entries() / 2.
  int64_t num_undirected_edges() const { return col_.size(0) / 2; }
  const torch::Tensor& row_ptr() const { return row_ptr_; }
  const torch::Tensor& col() const { return col_; }
  const torch::Tensor& edge_weight() const { return edge_weight_; }  // may be undefined
  bool has_edge_weight() const { return edge_weight_.defined(); }

  int64_t degree(int64_t v) const { return rp_[v + 1] - rp_[v]; }
  absl::Span<const int64_t> neighbors(int64_t v) const {
    return absl::Span<const int64_t>(cp_ + rp_[v], rp_[v + 1] - rp_[v]);
  }
  const int64_t* row_ptr_data() const { return rp_; }
  const int64_t* col_data() const { return cp_; }

  // True when every entry (u, v) has a matching (v, u). complexity: O(E log d).
  bool IsSymmetric() const;
  // Number of entries with row == col.
  int64_t CountSelfLoops() const;

 private:
  CsrGraph(torch::Tensor row_ptr, torch::Tensor col, torch::Tensor edge_weight);
  torch::Tensor row_ptr_, col_, edge_weight_;
  const int64_t* rp_ = nullptr;
  const int64_t* cp_ = nullptr;
};

struct EdgeListOptions {
  bool symmetrize = true;         // add (v, u) for every (u, v)
  bool remove_self_loops = true;  // drop (v, v)
};

// Builds a CSR graph from an edge list, merging duplicate entries and sorting each row.
// Fails if an endpoint is outside [0, num_nodes); `source` names the input in the message.
// Example: n = 3, edges (0,1), (1,0), (2,2), (1,2) with defaults ->
//   row_ptr = [0, 1, 3, 4], col = [1, 0, 2, 1]. complexity: O(N + E log d).
absl::StatusOr<CsrGraph> CsrFromEdges(int64_t num_nodes, absl::Span<const int64_t> src,
                                      absl::Span<const int64_t> dst,
                                      const EdgeListOptions& options = {},
                                      const std::string& source = "edge list");

// The subgraph induced by `nodes` (global ids, distinct). Local node i is nodes[i].
struct Subgraph {
  CsrGraph graph;
  std::vector<int64_t> nodes;  // local -> global
  int64_t dropped_entries = 0;  // stored entries of the parent with one endpoint outside `nodes`
};

// complexity: O(N + sum of degrees of `nodes`).
absl::StatusOr<Subgraph> InducedSubgraph(const CsrGraph& graph, absl::Span<const int64_t> nodes);

// Connected-component id per node (ids in order of their smallest node) and the count.
std::vector<int64_t> ConnectedComponents(const CsrGraph& graph, int64_t* num_components);

// Nodes of the largest connected component, ascending (ties: the component with the smallest node).
std::vector<int64_t> LargestComponentNodes(const CsrGraph& graph);

}  // namespace fgl::graph

#endif  // FGL_GRAPH_CSR_GRAPH_H_
