// A graph as the GNN layers see it: the CSR patterns and normalised edge weights each layer
// needs, computed once per (sub)graph on first use and shared by every layer and forward pass.
#ifndef FGL_NN_GRAPH_VIEW_H_
#define FGL_NN_GRAPH_VIEW_H_

#include <torch/torch.h>

#include <memory>

#include "absl/status/statusor.h"
#include "graph/csr_graph.h"
#include "nn/ops/csr_pattern.h"

namespace fgl::nn {

class GraphView {
 public:
  // Fails on an empty graph. `device` is where every cached tensor lives.
  static absl::StatusOr<GraphView> Create(const graph::CsrGraph& graph,
                                          torch::Device device = torch::kCPU);

  int64_t num_nodes() const { return num_nodes_; }
  torch::Device device() const { return device_; }
  const graph::CsrGraph& graph() const { return graph_; }

  // A as stored (no self-loops added).
  const CsrPattern& adjacency() const;
  // A + I: a self-loop added to every node that lacks one (PyG add_remaining_self_loops).
  const CsrPattern& adjacency_with_self_loops() const;
  // D^-1/2 (A + I) D^-1/2 on adjacency_with_self_loops(); graph edge weights are used when
  // present, self-loops weigh 1 (PyG gcn_norm).
  const torch::Tensor& gcn_weights() const;
  // D^-1 (A + I) on adjacency_with_self_loops(): each row the mean over the node and its
  // neighbours (FedGCN's Â as FedEgo's baseline code builds it; edge weights are not used).
  const torch::Tensor& row_weights() const;
  // 1 / deg(row) on adjacency() (mean aggregation; rows without neighbours stay zero).
  const torch::Tensor& mean_weights() const;
  // All ones on adjacency() (sum aggregation).
  const torch::Tensor& sum_weights() const;

 private:
  struct Cache;
  GraphView(graph::CsrGraph graph, torch::Device device);
  graph::CsrGraph graph_;
  int64_t num_nodes_ = 0;
  torch::Device device_ = torch::kCPU;
  std::shared_ptr<Cache> cache_;
};

// Node features for a first layer: dense, plus a CSR copy when the matrix is sparse enough that
// X·W is cheaper as a sparse product (Cora's bag-of-words is 1.3% non-zero).
class NodeFeatures {
 public:
  // Dense only (e.g. generated or hidden features).
  NodeFeatures(torch::Tensor dense);  // NOLINT: implicit on purpose
  // Keeps a CSR copy when the fraction of non-zeros is at most `max_density`.
  static NodeFeatures WithSparseCopy(torch::Tensor dense, double max_density = 0.1);

  // Undefined after Dropout() of sparse features (only the CSR copy is kept then).
  const torch::Tensor& dense() const { return dense_; }
  bool has_sparse() const { return static_cast<bool>(sparse_); }
  int64_t num_nodes() const { return num_nodes_; }
  int64_t width() const { return width_; }
  // x·weight for weight [width, out]: sparse product when a CSR copy exists and x needs no grad.
  torch::Tensor MatMul(const torch::Tensor& weight) const;
  // Dropout on the entries; sparse features stay sparse (dropout on their stored values).
  NodeFeatures Dropout(double p, bool training) const;
  // Zeroes the columns where `keep` (float [width], 0 or 1) is 0: a feature-masking augmentation.
  // Sparse features stay sparse (only the CSR copy is kept, as after Dropout).
  NodeFeatures MaskColumns(const torch::Tensor& keep) const;
  // The rows `index` (int64 [k], in [0, num_nodes)), in that order. Sparse features stay sparse
  // (only the CSR copy is kept, unless the dense matrix requires grad).
  NodeFeatures Rows(const torch::Tensor& index) const;

 private:
  struct Sparse {
    CsrPattern pattern;
    torch::Tensor values;
  };
  NodeFeatures() = default;
  torch::Tensor dense_;
  int64_t num_nodes_ = 0, width_ = 0;
  std::shared_ptr<const Sparse> sparse_;
};

// NaN/Inf anywhere in x is an error naming `what`.
absl::Status CheckFinite(const torch::Tensor& x, const std::string& what);

}  // namespace fgl::nn

#endif  // FGL_NN_GRAPH_VIEW_H_
