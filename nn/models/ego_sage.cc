#include "nn/models/ego_sage.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "graph/ego_graph.h"
#include "graph/option_string.h"
#include "graph/random.h"
#include "nn/conv/sage_conv.h"
#include "nn/ops/csr_pattern.h"
#include "nn/ops/dropout.h"
#include "nn/ops/spmm.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::nn {
namespace {

// Evaluation's Φ works on centres in chunks whose [chunk, tree, hidden] tensors take about this.
constexpr int64_t kPersonaliseChunkBytes = 16 << 20;

// kaiming_normal_ (fan_in, ReLU gain) on a weight stored [in, out], as the official code
// initialises every 2-d parameter; biases keep torch.nn.Linear's default.
void KaimingNormal(torch::Tensor& weight) {
  torch::NoGradGuard no_grad;
  weight.normal_(0.0, std::sqrt(2.0 / static_cast<double>(weight.size(0))));
}

struct SageLayerImpl : torch::nn::Module {
  SageLayerImpl(int64_t width) {
    lin_l = register_module("lin_l", LinearLayer(LinearLayerOptions(width, width)));
    lin_r = register_module("lin_r", LinearLayer(LinearLayerOptions(width, width).bias(false)));
    KaimingNormal(lin_l->weight);
    KaimingNormal(lin_r->weight);
  }
  LinearLayer lin_l{nullptr}, lin_r{nullptr};
};
TORCH_MODULE(SageLayer);

// A mean-aggregation layer evaluated at some target nodes only: the targets' rows of the
// graph's adjacency, with columns renumbered into `sources` (the targets and their neighbours,
// ascending), and where each target sits among the sources.
struct TargetBlock {
  torch::Tensor sources;         // int64 [s], ascending node ids
  torch::Tensor target_in_sources;  // int64 [k]
  CsrPattern pattern;            // [k, s]
  torch::Tensor mean_weights;    // float [nnz]: the targets' GraphView::mean_weights()
};

TargetBlock BlockAt(const GraphView& graph, const torch::Tensor& targets) {
  const graph::CsrGraph& g = graph.graph();
  const torch::Tensor t = targets.to(torch::kCPU).contiguous();
  const int64_t* tp = t.data_ptr<int64_t>();
  const int64_t k = t.numel(), n = g.num_nodes();
  std::vector<int64_t> slot(n, -1);  // a source's position, once numbered
  for (int64_t i = 0; i < k; ++i) slot[tp[i]] = 0;
  for (int64_t i = 0; i < k; ++i)
    for (int64_t u : g.neighbors(tp[i])) slot[u] = 0;
  std::vector<int64_t> sources;
  for (int64_t v = 0; v < n; ++v)
    if (slot[v] == 0) {
      slot[v] = static_cast<int64_t>(sources.size());
      sources.push_back(v);
    }
  std::vector<int64_t> row_ptr{0}, col, entry, at(k);  // entry: the graph's adjacency entry
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t e = g.row_ptr_data()[tp[i]]; e < g.row_ptr_data()[tp[i] + 1]; ++e) {
      col.push_back(slot[g.col_data()[e]]);
      entry.push_back(e);
    }
    row_ptr.push_back(static_cast<int64_t>(col.size()));
    at[i] = slot[tp[i]];
  }
  auto longs = [](const std::vector<int64_t>& v) {
    return torch::tensor(torch::ArrayRef<int64_t>(v), torch::kInt64);
  };
  auto pattern = CsrPattern::Create(k, static_cast<int64_t>(sources.size()), longs(row_ptr), longs(col));
  CHECK(pattern.ok()) << pattern.status();  // built from a validated CsrGraph
  const torch::Device device = graph.device();
  return {longs(sources).to(device), longs(at).to(device), pattern->To(device),
          graph.mean_weights().index_select(0, longs(entry).to(device))};
}

// SAGEConv's output (out_i = W_l mean_{j in N(i)} x_j + W_r x_i + b) at the block's targets, from
// the sources' rows `x_sources`.
torch::Tensor SageAt(SAGEConvImpl& conv, const NodeFeatures& x_sources, const TargetBlock& block) {
  torch::Tensor out = Spmm(block.pattern, block.mean_weights, x_sources.MatMul(conv.lin_l->weight));
  if (conv.lin_l->bias.defined()) out = out + conv.lin_l->bias;
  if (conv.lin_r) out = out + conv.lin_r->forward(x_sources.Rows(block.target_in_sources));
  return out;
}

}  // namespace

EgoSage::EgoSage(const EgoSageOptions& options, int64_t in_features, int64_t num_classes)
    : o_(options), in_(in_features), classes_(num_classes),
      tree_size_(graph::EgoTreeSize(options.layers, options.fanout)) {
  if (in_ > 0 && o_.sage_reduction) {
    sage_reduction_ = register_module("reduction", torch::nn::ModuleList());
    for (int64_t width : {in_, o_.hidden}) {
      SAGEConv conv(SAGEConvOptions(width, o_.hidden));
      KaimingNormal(conv->lin_l->weight);
      KaimingNormal(conv->lin_r->weight);
      sage_reduction_->push_back(conv);
    }
  } else if (in_ > 0) {
    reduction_ = register_module("reduction", LinearLayer(LinearLayerOptions(in_, o_.hidden)));
    KaimingNormal(reduction_->weight);
  }
  body_ = register_module("body", torch::nn::ModuleList());
  for (int64_t l = 0; l < o_.layers; ++l) body_->push_back(SageLayer(o_.hidden));
  head_ = register_module("head", LinearLayer(LinearLayerOptions(o_.hidden, classes_).bias(false)));
  KaimingNormal(head_->weight);
}

std::string EgoSage::spec() const {
  return absl::StrCat("ego_sage:layers=", o_.layers, ",hidden=", o_.hidden, ",fanout=", o_.fanout,
                      ",dropout=", o_.dropout, ",inner_act=", o_.inner_relu ? "relu" : "none",
                      ",batch=", o_.batch, ",epoch_fraction=", o_.epoch_fraction,
                      o_.sage_reduction ? ",reduction=sage" : "");
}

torch::Tensor EgoSage::Reduce(const NodeFeatures& x, const GraphView& graph) {
  TORCH_CHECK(in_ > 0, "EgoSage: a model without reduction layers cannot reduce features");
  if (!o_.sage_reduction) return torch::relu(reduction_->forward(x));
  const torch::Tensor h = torch::relu(sage_reduction_[0]->as<SAGEConvImpl>()->forward(x, graph));
  return torch::relu(sage_reduction_[1]->as<SAGEConvImpl>()->forward(NodeFeatures(h), graph));
}

torch::Tensor EgoSage::ReduceAt(const NodeFeatures& x, const GraphView& graph, const torch::Tensor& nodes) {
  TORCH_CHECK(in_ > 0, "EgoSage: a model without reduction layers cannot reduce features");
  if (!o_.sage_reduction) return torch::relu(reduction_->forward(x.Rows(nodes)));
  if (nodes.numel() == graph.num_nodes()) return Reduce(x, graph);  // every node: no block needed
  // Layer 2 at `nodes` reads layer 1 at block2's sources, which reads x at block1's sources.
  const TargetBlock block2 = BlockAt(graph, nodes);
  const TargetBlock block1 = BlockAt(graph, block2.sources);
  const torch::Tensor h = torch::relu(SageAt(*sage_reduction_[0]->as<SAGEConvImpl>(), x.Rows(block1.sources), block1));
  return torch::relu(SageAt(*sage_reduction_[1]->as<SAGEConvImpl>(), NodeFeatures(h), block2));
}

ModelOutput EgoSage::Personalise(const torch::Tensor& tree_embeddings, const torch::Tensor& valid) {
  return Classify(PersonalisedEmbedding(tree_embeddings, valid));
}

ModelOutput EgoSage::Classify(const torch::Tensor& embedding) {
  return {embedding, head_->forward(Dropout(embedding, o_.dropout, is_training()))};
}

torch::Tensor EgoSage::PersonalisedEmbedding(const torch::Tensor& tree_embeddings, const torch::Tensor& valid) {
  const int64_t b = tree_embeddings.size(0), f = o_.fanout, h = o_.hidden;
  TORCH_CHECK(tree_embeddings.dim() == 3 && tree_embeddings.size(1) == tree_size_ &&
                  tree_embeddings.size(2) == h,
              "EgoSage: tree embeddings must be [B, ", tree_size_, ", ", h, "]");
  // Depth d holds f^d contiguous positions starting at (f^d - 1) / (f - 1); the children of
  // its j-th position are depth d+1's positions j*f .. j*f + f - 1 (graph/ego_graph.h).
  std::vector<torch::Tensor> depth, mask;
  const torch::Tensor validf = valid.to(tree_embeddings.scalar_type());
  for (int64_t d = 0, start = 0, width = 1; d <= o_.layers; ++d, start += width, width *= f) {
    depth.push_back(tree_embeddings.narrow(1, start, width));
    mask.push_back(validf.narrow(1, start, width).unsqueeze(-1));
  }
  for (int64_t l = 0; l < o_.layers; ++l) {
    auto& layer = *body_[l]->as<SageLayerImpl>();
    const bool last = l + 1 == o_.layers;
    std::vector<torch::Tensor> next;
    // Layer l+1 is needed at depths 0 .. layers-l-1 (what the next layer or the centre reads).
    for (int64_t d = 0, width = 1; d < o_.layers - l; ++d, width *= f) {
      const torch::Tensor children = depth[d + 1].reshape({b, width, f, h}).sum(2);
      const torch::Tensor count = mask[d + 1].reshape({b, width, f}).sum(2, /*keepdim=*/true).clamp_min(1);
      const torch::Tensor agg = (children / count).reshape({b * width, h});
      torch::Tensor out = layer.lin_l->forward(agg) + layer.lin_r->forward(depth[d].reshape({b * width, h}));
      out = out.reshape({b, width, h});
      if (last || o_.inner_relu) out = torch::relu(out);
      next.push_back(out * mask[d]);  // absent positions stay zero for their parent's mean
    }
    depth.swap(next);
  }
  return depth[0].reshape({b, h});
}

ModelOutput EgoSage::forward_centres(const NodeFeatures& x, const GraphView& graph,
                                     const torch::Tensor& centres) {
  TORCH_CHECK(centres.scalar_type() == torch::kInt64 && centres.dim() == 1, "EgoSage: centres must be int64 [B]");
  const torch::Tensor ids = centres.to(torch::kCPU).contiguous();
  graph::Rng rng(NextStochasticSeed());
  const torch::Tensor trees = graph::SampleEgoTrees(
      graph.graph(), absl::MakeConstSpan(ids.data_ptr<int64_t>(), ids.numel()), o_.layers, o_.fanout, rng);
  // Θ only on the nodes the trees touch, in ascending order (so its gradient sums the same terms
  // in the same order as on every node); `position` maps each tree slot to its row.
  const int64_t slots = trees.numel();
  const int64_t* t = trees.data_ptr<int64_t>();
  std::vector<int64_t> row(graph.num_nodes(), -1), touched;
  for (int64_t i = 0; i < slots; ++i)
    if (t[i] >= 0) row[t[i]] = 0;
  for (int64_t v = 0; v < graph.num_nodes(); ++v)
    if (row[v] == 0) {
      row[v] = static_cast<int64_t>(touched.size());
      touched.push_back(v);
    }
  torch::Tensor position = torch::empty({slots}, torch::kInt64);
  int64_t* pos = position.data_ptr<int64_t>();
  for (int64_t i = 0; i < slots; ++i) pos[i] = t[i] >= 0 ? row[t[i]] : 0;
  // Dropout once per touched node, as the code drops out its batch's (deduplicated) node rows
  // after Θ: a node at several tree slots keeps one mask.
  // Owned (cloned): autograd keeps the index for the backward pass, after `touched` is gone.
  const torch::Tensor touched_ids =
      torch::from_blob(touched.data(), {static_cast<int64_t>(touched.size())}, torch::kInt64).clone();
  const torch::Tensor r = Dropout(ReduceAt(x, graph, touched_ids), o_.dropout, is_training());
  const torch::Tensor valid = (trees >= 0).to(r.device());
  position = position.to(r.device());
  auto trees_of = [&](int64_t first, int64_t count) {
    return r.index_select(0, position.narrow(0, first * tree_size_, count * tree_size_))
               .reshape({count, tree_size_, o_.hidden}) *
           valid.narrow(0, first, count).unsqueeze(-1).to(r.scalar_type());
  };
  const int64_t b = ids.numel();
  // A multiple of 48 centres: OpenBLAS's sgemm (the pinned Haswell kernel, one thread, as the run
  // binaries set it) computes a row with its full-width micro-kernel (12 rows) or its edge
  // kernel, which round differently, so every chunk must start where a micro-kernel block of the
  // one-pass product would (measured: chunks of 190 rows changed results, multiples of 12 did
  // not). It also blocks the rows by 104,512 (not a multiple of 12): products taller than that,
  // and other devices' BLAS, take the one pass.
  const int64_t chunk = std::max<int64_t>(48, kPersonaliseChunkBytes / (tree_size_ * o_.hidden * 4) / 48 * 48);
  int64_t tallest = b;  // rows of the tallest product: depth layers-1 of the trees
  for (int64_t l = 1; l < o_.layers; ++l) tallest *= std::max<int64_t>(1, o_.fanout);
  if (torch::GradMode::is_enabled() || is_training() || b <= chunk || !r.device().is_cpu() || tallest > 100000) {
    return Personalise(trees_of(0, b), valid);
  }
  // In evaluation without autograd (every node's prediction), the SAGE layers run on chunks of
  // centres: a centre's embedding depends on its own tree only, so the embeddings are the same,
  // and the [B, tree, hidden] temporaries stay below glibc's mmap threshold instead of being
  // page-faulted in on every call. The classifier runs once on all of them (the same GEMM call).
  std::vector<torch::Tensor> parts;
  for (int64_t first = 0; first < b; first += chunk) {
    const int64_t count = std::min(chunk, b - first);
    parts.push_back(PersonalisedEmbedding(trees_of(first, count), valid.narrow(0, first, count)));
  }
  return Classify(torch::cat(parts));
}

ModelOutput EgoSage::forward(const NodeFeatures& x, const GraphView& graph) {
  return forward_centres(x, graph, torch::arange(graph.num_nodes(), torch::kInt64));
}

absl::StatusOr<EgoSageOptions> ParseEgoSageSpec(const std::string& spec) {
  FGL_ASSIGN_OR_RETURN(graph::OptionString o, graph::OptionString::Parse(spec));
  if (o.name() != "ego_sage") return absl::InvalidArgumentError(absl::StrCat("'", spec, "' is not an ego_sage spec"));
  EgoSageOptions e;
  FGL_ASSIGN_OR_RETURN(e.layers, o.Int("layers", e.layers));
  FGL_ASSIGN_OR_RETURN(e.hidden, o.Int("hidden", e.hidden));
  FGL_ASSIGN_OR_RETURN(e.fanout, o.Int("fanout", e.fanout));
  FGL_ASSIGN_OR_RETURN(e.dropout, o.Double("dropout", e.dropout));
  FGL_ASSIGN_OR_RETURN(e.batch, o.Int("batch", e.batch));
  FGL_ASSIGN_OR_RETURN(e.epoch_fraction, o.Double("epoch_fraction", e.epoch_fraction));
  const std::string act = o.String("inner_act", "relu");
  const std::string reduction = o.String("reduction", "linear");
  FGL_RETURN_IF_ERROR(o.CheckAllUsed());
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("model '", spec, "': ", what));
  };
  if (act != "relu" && act != "none") return bad(absl::StrCat("inner_act=", act, " (relu|none)"));
  e.inner_relu = act == "relu";
  if (reduction != "linear" && reduction != "sage") return bad(absl::StrCat("reduction=", reduction, " (linear|sage)"));
  e.sage_reduction = reduction == "sage";
  if (e.layers < 1 || e.layers > 4) return bad("layers must be in [1, 4]");
  if (e.hidden < 1 || e.fanout < 0 || e.fanout > 16) return bad("needs hidden >= 1 and fanout in [0, 16]");
  if (!(e.dropout >= 0 && e.dropout < 1)) return bad("dropout must be in [0, 1)");
  if (e.batch < 1) return bad("batch must be >= 1");
  if (!(e.epoch_fraction > 0 && e.epoch_fraction <= 1)) return bad("epoch_fraction must be in (0, 1]");
  return e;
}

}  // namespace fgl::nn
