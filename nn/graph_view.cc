#include "nn/graph_view.h"

#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "nn/ops/dropout.h"
#include "nn/ops/spmm.h"

namespace fgl::nn {

struct GraphView::Cache {
  std::once_flag adj_once, loops_once, gcn_once, row_once, mean_once, sum_once;
  CsrPattern adjacency, with_loops;
  torch::Tensor loop_weight_source;  // per entry of with_loops: graph edge weight, 1 for loops
  torch::Tensor gcn, row, mean, sum;
};

GraphView::GraphView(graph::CsrGraph graph, torch::Device device)
    : graph_(std::move(graph)), num_nodes_(graph_.num_nodes()), device_(device),
      cache_(std::make_shared<Cache>()) {}

absl::StatusOr<GraphView> GraphView::Create(const graph::CsrGraph& graph, torch::Device device) {
  if (graph.num_nodes() == 0) return absl::InvalidArgumentError("GraphView: the graph is empty");
  return GraphView(graph, device);
}

const CsrPattern& GraphView::adjacency() const {
  std::call_once(cache_->adj_once, [&] {
    auto p = CsrPattern::Create(num_nodes_, num_nodes_, graph_.row_ptr(), graph_.col());
    CHECK(p.ok()) << p.status();  // CsrGraph::Create validated the same invariants
    cache_->adjacency = p->To(device_);
  });
  return cache_->adjacency;
}

const CsrPattern& GraphView::adjacency_with_self_loops() const {
  std::call_once(cache_->loops_once, [&] {
    const int64_t n = num_nodes_;
    const int64_t* rp = graph_.row_ptr_data();
    const int64_t* c = graph_.col_data();
    const float* w = graph_.has_edge_weight() ? graph_.edge_weight().data_ptr<float>() : nullptr;
    torch::Tensor row_ptr = torch::empty({n + 1}, torch::kInt64);
    int64_t* orp = row_ptr.data_ptr<int64_t>();
    std::vector<int64_t> cols;
    std::vector<float> weights;
    cols.reserve(graph_.num_entries() + n);
    weights.reserve(graph_.num_entries() + n);
    orp[0] = 0;
    for (int64_t r = 0; r < n; ++r) {
      bool has_loop = false;
      for (int64_t e = rp[r]; e < rp[r + 1]; ++e) has_loop |= c[e] == r;
      bool placed = has_loop;
      for (int64_t e = rp[r]; e < rp[r + 1]; ++e) {
        if (!placed && c[e] > r) {  // keep each row sorted
          cols.push_back(r);
          weights.push_back(1.0f);
          placed = true;
        }
        cols.push_back(c[e]);
        weights.push_back(w ? w[e] : 1.0f);
      }
      if (!placed) {
        cols.push_back(r);
        weights.push_back(1.0f);
      }
      orp[r + 1] = static_cast<int64_t>(cols.size());
    }
    const int64_t nnz = static_cast<int64_t>(cols.size());
    torch::Tensor col = torch::from_blob(cols.data(), {nnz}, torch::kInt64).clone();
    auto p = CsrPattern::Create(n, n, row_ptr, col);
    CHECK(p.ok()) << p.status();
    cache_->with_loops = p->To(device_);
    cache_->loop_weight_source = torch::from_blob(weights.data(), {nnz}, torch::kFloat32).clone();
  });
  return cache_->with_loops;
}

const torch::Tensor& GraphView::gcn_weights() const {
  std::call_once(cache_->gcn_once, [&] {
    const CsrPattern& p = adjacency_with_self_loops();
    torch::Tensor w = cache_->loop_weight_source;
    torch::Tensor rp = p.row_ptr().to(torch::kCPU), col = p.col().to(torch::kCPU);
    torch::Tensor deg = torch::zeros({num_nodes_}, torch::kFloat32);
    // PyG gcn_norm: deg = scatter_add(weights, col); norm = deg^-1/2[row] * w * deg^-1/2[col].
    deg.index_add_(0, col, w);
    torch::Tensor inv_sqrt = deg.pow(-0.5);
    inv_sqrt.masked_fill_(torch::isinf(inv_sqrt), 0.0f);
    torch::Tensor counts = rp.slice(0, 1) - rp.slice(0, 0, num_nodes_);
    torch::Tensor row = torch::repeat_interleave(torch::arange(num_nodes_), counts);
    cache_->gcn = (inv_sqrt.index_select(0, row) * w * inv_sqrt.index_select(0, col)).to(device_);
  });
  return cache_->gcn;
}

const torch::Tensor& GraphView::row_weights() const {
  std::call_once(cache_->row_once, [&] {
    const CsrPattern& p = adjacency_with_self_loops();
    const torch::Tensor rp = p.row_ptr().to(torch::kCPU);
    const torch::Tensor counts = rp.slice(0, 1) - rp.slice(0, 0, num_nodes_);  // every row has its self-loop
    cache_->row = torch::repeat_interleave(counts.to(torch::kFloat32).reciprocal(), counts).to(device_);
  });
  return cache_->row;
}

const torch::Tensor& GraphView::mean_weights() const {
  std::call_once(cache_->mean_once, [&] {
    const int64_t n = num_nodes_;
    torch::Tensor w = torch::empty({graph_.num_entries()}, torch::kFloat32);
    float* o = w.data_ptr<float>();
    for (int64_t r = 0; r < n; ++r) {
      const int64_t d = graph_.degree(r);
      for (int64_t e = graph_.row_ptr_data()[r]; e < graph_.row_ptr_data()[r + 1]; ++e)
        o[e] = 1.0f / static_cast<float>(d);
    }
    cache_->mean = w.to(device_);
  });
  return cache_->mean;
}

const torch::Tensor& GraphView::sum_weights() const {
  std::call_once(cache_->sum_once, [&] {
    cache_->sum = torch::ones({graph_.num_entries()}, torch::TensorOptions(torch::kFloat32).device(device_));
  });
  return cache_->sum;
}

NodeFeatures::NodeFeatures(torch::Tensor dense) : dense_(std::move(dense)) {
  TORCH_CHECK(dense_.defined() && dense_.dim() == 2, "NodeFeatures: need a 2-d tensor");
  num_nodes_ = dense_.size(0);
  width_ = dense_.size(1);
}

NodeFeatures NodeFeatures::Dropout(double p, bool training) const {
  if (!training || p <= 0) return *this;
  if (!sparse_) return NodeFeatures(nn::Dropout(dense_, p, training));
  NodeFeatures out;
  out.num_nodes_ = num_nodes_;
  out.width_ = width_;
  out.sparse_ = std::make_shared<const Sparse>(
      Sparse{sparse_->pattern, nn::Dropout(sparse_->values, p, training)});
  return out;
}

namespace {

// The CSR form of a dense [rows, cols] matrix (row-major: rows ascending, then columns), or false
// when it has more than `max_nnz` non-zeros. Two passes over the values and no temporaries the
// size of the matrix: a tensor-op version (a bool mask, its sum, nonzero) spent most of a
// Physics-10 client set-up zeroing fresh pages for the mask.
template <typename T>
bool DenseToCsr(const torch::Tensor& cpu, double max_nnz, torch::Tensor* row_ptr, torch::Tensor* col,
                torch::Tensor* values) {
  const int64_t rows = cpu.size(0), cols = cpu.size(1);
  const T* x = cpu.data_ptr<T>();
  *row_ptr = torch::empty({rows + 1}, torch::kInt64);
  int64_t* ptr = row_ptr->data_ptr<int64_t>();
  ptr[0] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * cols;
    int64_t n = 0;
    for (int64_t c = 0; c < cols; ++c) n += row[c] != T(0);  // NaN counts, -0 does not: as != 0
    ptr[r + 1] = ptr[r] + n;
  }
  const int64_t nnz = ptr[rows];
  if (static_cast<double>(nnz) > max_nnz) return false;
  *col = torch::empty({nnz}, torch::kInt64);
  *values = torch::empty({nnz}, cpu.options());
  int64_t* c_out = col->data_ptr<int64_t>();
  T* v_out = values->data_ptr<T>();
  for (int64_t r = 0, k = 0; r < rows; ++r) {
    const T* row = x + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      if (row[c] != T(0)) {
        c_out[k] = c;
        v_out[k++] = row[c];
      }
    }
  }
  return true;
}

}  // namespace

NodeFeatures NodeFeatures::WithSparseCopy(torch::Tensor dense, double max_density) {
  NodeFeatures out(dense);
  if (dense.dim() != 2 || dense.numel() == 0) return out;
  torch::Tensor cpu = dense.detach().to(torch::kCPU).contiguous();
  const int64_t rows = cpu.size(0), cols = cpu.size(1);
  const double max_nnz = max_density * static_cast<double>(cpu.numel());
  torch::Tensor row_ptr, col, values;
  if (cpu.scalar_type() == torch::kFloat32) {
    if (!DenseToCsr<float>(cpu, max_nnz, &row_ptr, &col, &values)) return out;
  } else if (cpu.scalar_type() == torch::kFloat64) {
    if (!DenseToCsr<double>(cpu, max_nnz, &row_ptr, &col, &values)) return out;
  } else {
    torch::Tensor nz = cpu != 0;
    if (static_cast<double>(nz.sum().item<int64_t>()) > max_nnz) return out;
    row_ptr = torch::zeros({rows + 1}, torch::kInt64);
    row_ptr.slice(0, 1).copy_(nz.sum(1).cumsum(0));
    torch::Tensor idx = nz.nonzero();  // row-major order: rows ascending, then columns
    col = idx.select(1, 1).contiguous();
    values = cpu.index({idx.select(1, 0), idx.select(1, 1)}).contiguous();
  }
  auto p = CsrPattern::Create(rows, cols, row_ptr, col);
  CHECK(p.ok()) << p.status();
  out.sparse_ = std::make_shared<const Sparse>(
      Sparse{p->To(dense.device()), values.to(dense.device())});
  return out;
}

NodeFeatures NodeFeatures::MaskColumns(const torch::Tensor& keep) const {
  TORCH_CHECK(keep.dim() == 1 && keep.size(0) == width_, "MaskColumns: keep ", keep.sizes(), " for ", width_,
              " columns");
  if (!sparse_) return NodeFeatures(dense_ * keep.to(dense_.options()).unsqueeze(0));
  NodeFeatures out;
  out.num_nodes_ = num_nodes_;
  out.width_ = width_;
  const torch::Tensor& values = sparse_->values;
  out.sparse_ = std::make_shared<const Sparse>(
      Sparse{sparse_->pattern, values * keep.to(values.options()).index_select(0, sparse_->pattern.col())});
  return out;
}

NodeFeatures NodeFeatures::Rows(const torch::Tensor& index) const {
  TORCH_CHECK(index.dim() == 1 && index.scalar_type() == torch::kInt64, "NodeFeatures::Rows: index must be int64 [k]");
  if (!sparse_ || (dense_.defined() && dense_.requires_grad())) return NodeFeatures(dense_.index_select(0, index.to(dense_.device())));
  const torch::Tensor ids = index.to(torch::kCPU).contiguous();
  const torch::Tensor ptr = sparse_->pattern.row_ptr().to(torch::kCPU).contiguous();
  const int64_t* id = ids.data_ptr<int64_t>();
  const int64_t* p = ptr.data_ptr<int64_t>();
  const int64_t k = ids.numel();
  torch::Tensor row_ptr = torch::empty({k + 1}, torch::kInt64);
  int64_t* out_ptr = row_ptr.data_ptr<int64_t>();
  out_ptr[0] = 0;
  for (int64_t i = 0; i < k; ++i) {
    TORCH_CHECK(id[i] >= 0 && id[i] < num_nodes_, "NodeFeatures::Rows: row ", id[i], " of ", num_nodes_);
    out_ptr[i + 1] = out_ptr[i] + p[id[i] + 1] - p[id[i]];
  }
  // Entry positions of the chosen rows, in order: one gather for columns and values.
  torch::Tensor entries = torch::empty({out_ptr[k]}, torch::kInt64);
  int64_t* e = entries.data_ptr<int64_t>();
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = p[id[i]]; j < p[id[i] + 1]; ++j) *e++ = j;
  const torch::Device device = sparse_->values.device();
  entries = entries.to(device);
  auto pattern = CsrPattern::Create(k, width_, row_ptr.to(device), sparse_->pattern.col().index_select(0, entries));
  CHECK(pattern.ok()) << pattern.status();  // built from a valid pattern
  NodeFeatures out;
  out.num_nodes_ = k;
  out.width_ = width_;
  out.sparse_ = std::make_shared<const Sparse>(Sparse{*std::move(pattern), sparse_->values.index_select(0, entries)});
  return out;
}

torch::Tensor NodeFeatures::MatMul(const torch::Tensor& weight) const {
  if (sparse_ && (!dense_.defined() || !dense_.requires_grad())) return Spmm(sparse_->pattern, sparse_->values, weight);
  return torch::matmul(dense_, weight);
}

absl::Status CheckFinite(const torch::Tensor& x, const std::string& what) {
  if (!x.defined()) return absl::InvalidArgumentError(absl::StrCat(what, " is undefined"));
  if (!torch::isfinite(x).all().item<bool>()) {
    const int64_t bad = (~torch::isfinite(x)).sum().item<int64_t>();
    return absl::InvalidArgumentError(absl::StrCat(what, " has ", bad, " NaN/Inf entries"));
  }
  return absl::OkStatus();
}

}  // namespace fgl::nn
