#include "methods/fedsage_plus/neighgen.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "graph/random.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedsage_plus {

NeighGenImpl::NeighGenImpl(const NeighGenOptions& options_) : options(options_) { reset(); }

void NeighGenImpl::reset() {
  auto made = nn::MakeModel(absl::StrCat("sage:layers=2,hidden=", options.hidden(), ",dropout=", options.dropout()),
                            options.num_features(), options.latent());
  CHECK(made.ok()) << made.status();  // a fixed, valid spec
  encoder = register_module("encoder", *made);
  dgen = register_module("dgen", torch::nn::Linear(options.latent(), 1));
  fgen1 = register_module("fgen1", torch::nn::Linear(options.latent(), 256));
  fgen2 = register_module("fgen2", torch::nn::Linear(256, 2048));
  fgen_out = register_module("fgen_out", torch::nn::Linear(2048, options.max_pred() * options.num_features()));
}

torch::Tensor UsedSlots(const torch::Tensor& num_missing, int64_t max_pred, bool truncate) {
  const torch::Tensor c = num_missing.detach();
  return (truncate ? c.trunc() : c.round()).clamp(0, static_cast<double>(max_pred)).to(torch::kInt64);
}

namespace {

// fGen's output layer, tanh(h W^T + b) viewed as [N, P, F], computed only where it is read: slot j
// of the nodes in nodes[j]; the other rows are 0. One output tensor and one weight gradient are
// allocated per call, where autograd over per-slot slices allocated a zero weight-sized gradient
// per slot (280 MB each on Coauthor-CS) and paid for the page faults.
class SlotOutput : public torch::autograd::Function<SlotOutput> {
 public:
  // h float [N, H]; weight [P * F, H]; bias [P * F]; nodes: P int64 lists (slot j's nodes).
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               const std::vector<torch::Tensor>& nodes) {
    const int64_t n = h.size(0), p = static_cast<int64_t>(nodes.size()), f = weight.size(0) / p;
    torch::Tensor out = torch::zeros({n, p, f}, h.options());
    torch::autograd::variable_list saved = {h, weight};
    for (int64_t j = 0; j < p; ++j) {
      torch::Tensor y;
      if (nodes[j].numel() > 0) {
        y = torch::tanh(torch::addmm(bias.slice(0, j * f, (j + 1) * f), h.index_select(0, nodes[j]),
                                     weight.slice(0, j * f, (j + 1) * f).t()));
        out.select(1, j).index_copy_(0, nodes[j], y);
      }
      saved.push_back(nodes[j]);
      saved.push_back(y.defined() ? y : torch::empty({0, f}, h.options()));
    }
    ctx->save_for_backward(saved);
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_output) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& h = saved[0];
    const torch::Tensor& weight = saved[1];
    const int64_t p = (static_cast<int64_t>(saved.size()) - 2) / 2, f = weight.size(0) / p;
    const torch::Tensor grad = grad_output[0];
    torch::Tensor grad_h = torch::zeros_like(h);
    torch::Tensor grad_w = torch::zeros_like(weight);
    torch::Tensor grad_b = torch::zeros({weight.size(0)}, weight.options());
    for (int64_t j = 0; j < p; ++j) {
      const torch::Tensor& nodes = saved[2 + 2 * j];
      const torch::Tensor& y = saved[3 + 2 * j];
      if (nodes.numel() == 0) continue;
      // d tanh(a) = (1 - y^2) d a
      const torch::Tensor g = grad.select(1, j).index_select(0, nodes) * (1 - y * y);  // [n_j, F]
      torch::Tensor gw = grad_w.slice(0, j * f, (j + 1) * f);
      torch::mm_out(gw, g.t(), h.index_select(0, nodes));
      grad_b.slice(0, j * f, (j + 1) * f).copy_(g.sum(0));
      grad_h.index_add_(0, nodes, torch::mm(g, weight.slice(0, j * f, (j + 1) * f)));
    }
    return {grad_h, grad_w, grad_b, torch::Tensor()};
  }
};

}  // namespace

NeighGenOutput NeighGenImpl::forward(const nn::NodeFeatures& x, const nn::GraphView& graph, const torch::Tensor& noise,
                                     const torch::Tensor& min_slots) {
  const torch::Tensor z = encoder->forward(x, graph).logits;
  NeighGenOutput out;
  out.num_missing = torch::relu(dgen->forward(z)).squeeze(1);
  torch::Tensor h = torch::relu(fgen1->forward(z + noise));
  h = torch::relu(fgen2->forward(h));
  h = nn::Dropout(h, options.dropout(), is_training());
  // fGen's output layer (2048 x max_pred * F) is most of NeighGen's work, and most slots are never
  // read (a node lacks about two neighbours on Coauthor-CS): slot j's block of the layer runs only
  // on the nodes that read slot j.
  torch::Tensor needed = UsedSlots(out.num_missing, options.max_pred(), options.truncate_counts());
  if (min_slots.defined()) needed = torch::maximum(needed, min_slots.to(needed.device()));
  std::vector<torch::Tensor> nodes;
  for (int64_t j = 0; j < options.max_pred(); ++j) nodes.push_back((needed > j).nonzero().squeeze(1));
  out.features = SlotOutput::apply(h, fgen_out->weight, fgen_out->bias, nodes);
  return out;
}

absl::StatusOr<ImpairedGraph> HideNodes(const graph::CsrGraph& graph, const torch::Tensor& features,
                                        const std::vector<int64_t>& hidden, int64_t max_pred) {
  const int64_t n = graph.num_nodes();
  std::vector<char> is_hidden(n, 0);
  for (int64_t v : hidden) {
    if (v < 0 || v >= n) return absl::InvalidArgumentError(absl::StrCat("hidden node ", v, " outside [0, ", n, ")"));
    if (is_hidden[v]) return absl::InvalidArgumentError(absl::StrCat("hidden node ", v, " listed twice"));
    is_hidden[v] = 1;
  }
  ImpairedGraph out;
  for (int64_t v = 0; v < n; ++v) {
    if (!is_hidden[v]) out.kept.push_back(v);
  }
  FGL_ASSIGN_OR_RETURN(graph::Subgraph sub, graph::InducedSubgraph(graph, out.kept));
  out.graph = std::move(sub.graph);
  const torch::Tensor x = features.to(torch::kCPU, torch::kFloat);
  const int64_t k = static_cast<int64_t>(out.kept.size()), f = x.size(1);
  out.features = x.index_select(0, torch::tensor(out.kept, torch::kInt64));
  out.num_missing = torch::zeros({k}, torch::kFloat);
  out.missing.index = torch::zeros({k, max_pred}, torch::kInt64);
  // Table row of each hidden node: 1 + its rank among the hidden nodes, in id order.
  std::vector<int64_t> row_of(n, 0), table_nodes;
  for (int64_t v = 0; v < n; ++v) {
    if (is_hidden[v]) {
      table_nodes.push_back(v);
      row_of[v] = static_cast<int64_t>(table_nodes.size());
    }
  }
  out.missing.features = torch::cat(
      {torch::zeros({1, f}, torch::kFloat), x.index_select(0, torch::tensor(table_nodes, torch::kInt64))});
  const int64_t* row_ptr = graph.row_ptr().data_ptr<int64_t>();
  const int64_t* col = graph.col().data_ptr<int64_t>();
  auto missing = out.num_missing.accessor<float, 1>();
  auto index = out.missing.index.accessor<int64_t, 2>();
  for (int64_t i = 0; i < k; ++i) {
    const int64_t v = out.kept[i];
    int64_t count = 0;
    for (int64_t e = row_ptr[v]; e < row_ptr[v + 1]; ++e) {  // rows are sorted: ascending ids
      const int64_t u = col[e];
      if (u == v || !is_hidden[u]) continue;
      if (count < max_pred) index[i][count] = row_of[u];
      ++count;
    }
    missing[i] = static_cast<float>(count);
  }
  return out;
}

torch::Tensor MissingNeighbours::Dense() const {
  return features.index_select(0, index.reshape({-1})).view({index.size(0), index.size(1), features.size(1)});
}

MissingNeighbours MissingNeighbours::FromDense(const torch::Tensor& dense) {
  const int64_t n = dense.size(0), p = dense.size(1), f = dense.size(2);
  return {torch::cat({torch::zeros({1, f}, dense.options()), dense.reshape({n * p, f})}),
          torch::arange(1, n * p + 1, torch::TensorOptions(torch::kInt64).device(dense.device())).view({n, p})};
}

std::vector<int64_t> ChooseHidden(const torch::Tensor& candidate, double portion, uint64_t seed) {
  const torch::Tensor c = candidate.to(torch::kCPU, torch::kBool).contiguous();
  std::vector<int64_t> pool;
  const bool* p = c.data_ptr<bool>();
  for (int64_t v = 0; v < c.numel(); ++v) {
    if (p[v]) pool.push_back(v);
  }
  graph::Rng rng(seed, "fedsage_plus/hide");
  rng.Shuffle(pool);
  pool.resize(static_cast<size_t>(std::floor(portion * static_cast<double>(pool.size()))));
  std::sort(pool.begin(), pool.end());
  return pool;
}

namespace {

// Elements of one chunk's [rows, P, P, F] differences: the loss never holds more than this (twice,
// with the squares), where autograd over the whole [N, P, P, F] kept it for the backward pass
// (1.25 GB per client on Coauthor-CS). 8 MB stays below glibc's mmap threshold (32 MB at most), so
// chunks reuse heap memory: 64 MB chunks were fresh mappings, page-faulted in every time.
constexpr int64_t kChunkElements = int64_t{1} << 21;

// closest[v, a] = min over valid b of mean_f (generated[v, a, f] - target[v, b, f])^2 (1e30 when
// no b is valid). Saves only the argmin; the backward pass is the one autograd derives for the
// direct expression (mean, pow and min backward), term for term, so results are bit-identical.
class ClosestTarget : public torch::autograd::Function<ClosestTarget> {
 public:
  // target_rows: float [1 + H, F]; target_index: int64 [N, P] (MissingNeighbours).
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& generated,
                               const torch::Tensor& target_rows, const torch::Tensor& target_index,
                               const torch::Tensor& valid) {
    const int64_t n = generated.size(0), p = generated.size(1), f = generated.size(2);
    const int64_t rows = std::max<int64_t>(1, kChunkElements / std::max<int64_t>(1, p * p * f));
    std::vector<torch::Tensor> closest, index;
    for (int64_t s = 0; s < n; s += rows) {
      const torch::Tensor g = generated.slice(0, s, s + rows);
      const torch::Tensor slots = target_index.slice(0, s, s + rows);
      const torch::Tensor t = target_rows.index_select(0, slots.reshape({-1})).view({slots.size(0), p, f});
      const torch::Tensor dist = (g.unsqueeze(2) - t.unsqueeze(1)).pow(2).mean(-1);  // [rows, P, P]
      auto [value, at] =
          torch::where(valid.slice(0, s, s + rows).unsqueeze(1), dist, torch::full_like(dist, 1e30)).min(2);
      closest.push_back(value);
      index.push_back(at);
    }
    const torch::Tensor at = closest.size() == 1 ? index[0] : torch::cat(index);
    ctx->save_for_backward({generated, target_rows, target_index.gather(1, at)});
    return closest.size() == 1 ? closest[0] : torch::cat(closest);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_output) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& generated = saved[0];
    const torch::Tensor& chosen_row = saved[2];  // [N, P]: the table row each slot matched
    const int64_t n = generated.size(0), p = generated.size(1), f = generated.size(2);
    // d/dg of mean_f (g - t)^2 at the chosen target: (grad / F) * (2 * (g - t)), elementwise, so
    // by chunks of rows (heap-sized temporaries) into one output.
    torch::Tensor grad = torch::empty_like(generated);
    const int64_t rows = std::max<int64_t>(1, kChunkElements / std::max<int64_t>(1, p * f));
    for (int64_t s = 0; s < n; s += rows) {
      const torch::Tensor g = generated.slice(0, s, s + rows);
      const torch::Tensor at = chosen_row.slice(0, s, s + rows);
      const torch::Tensor matched = saved[1].index_select(0, at.reshape({-1})).view(g.sizes());
      grad.slice(0, s, s + rows).copy_((grad_output[0].slice(0, s, s + rows).unsqueeze(2) / f) * (2.0 * (g - matched)));
    }
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor MissingFeatureLoss(const torch::Tensor& generated, const MissingNeighbours& target,
                                 const torch::Tensor& num_missing) {
  CHECK(!target.features.requires_grad()) << "MissingFeatureLoss: the targets are data, not parameters";
  const int64_t p = generated.size(1);
  const torch::Tensor k = num_missing.clamp(0, static_cast<double>(p)).floor().unsqueeze(1);  // [N, 1]
  const torch::Tensor slot = torch::arange(p, generated.options()).unsqueeze(0);              // [1, P]
  const torch::Tensor valid = slot < k;                                                       // [N, P]
  // Closest real hidden neighbour of each generated slot; invalid targets can never be closest.
  const torch::Tensor closest = ClosestTarget::apply(generated, target.features, target.index, valid);
  return torch::where(valid, closest, torch::zeros_like(closest)).sum(1).mean();
}

absl::StatusOr<MendedGraph> MendGraph(const graph::CsrGraph& graph, const torch::Tensor& x,
                                      const torch::Tensor& num_missing, const torch::Tensor& generated,
                                      bool truncate) {
  const int64_t n = graph.num_nodes(), p = generated.size(1);
  if (x.size(0) != n || num_missing.numel() != n || generated.size(0) != n) {
    return absl::InvalidArgumentError(absl::StrCat("MendGraph: ", n, " nodes but x has ", x.size(0),
                                                   " rows, counts ", num_missing.numel(), ", generated ",
                                                   generated.size(0)));
  }
  const torch::Tensor counts = UsedSlots(num_missing.to(torch::kCPU, torch::kFloat), p, truncate);
  const int64_t* c = counts.data_ptr<int64_t>();
  std::vector<int64_t> src, dst, rows;  // rows: flat index v * p + slot of each new node
  const int64_t* row_ptr = graph.row_ptr().data_ptr<int64_t>();
  const int64_t* col = graph.col().data_ptr<int64_t>();
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t e = row_ptr[v]; e < row_ptr[v + 1]; ++e) {
      src.push_back(v);
      dst.push_back(col[e]);
    }
  }
  int64_t next = n;
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t s = 0; s < c[v]; ++s) {
      src.push_back(v);
      dst.push_back(next++);
      rows.push_back(v * p + s);
    }
  }
  MendedGraph out;
  FGL_ASSIGN_OR_RETURN(out.graph, graph::CsrFromEdges(next, src, dst, {}, "mended graph"));
  const torch::Tensor flat = generated.reshape({n * p, generated.size(2)});
  out.features = rows.empty() ? x : torch::cat({x, flat.index_select(0, torch::tensor(rows, torch::kInt64).to(flat.device()))}, 0);
  return out;
}

}  // namespace fgl::methods::fedsage_plus
