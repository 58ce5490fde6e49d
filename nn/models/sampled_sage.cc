#include "nn/models/sampled_sage.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/ego_graph.h"
#include "graph/option_string.h"
#include "graph/random.h"
#include "nn/conv/init.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::nn {
namespace {

// One mean-aggregator layer: kernels stored [in, out/2], as Keras.
struct MeanAggregatorImpl : torch::nn::Module {
  MeanAggregatorImpl(int64_t in, int64_t out) {
    const int64_t neigh = out / 2;
    w_self = register_parameter("w_self", torch::empty({in, out - neigh}));
    w_neigh = register_parameter("w_neigh", torch::empty({in, neigh}));
    bias = register_parameter("bias", torch::zeros({out}));
    GlorotUniform(w_self);
    GlorotUniform(w_neigh);
  }
  torch::Tensor w_self, w_neigh, bias;
};
TORCH_MODULE(MeanAggregator);

}  // namespace

SampledSage::SampledSage(const SampledSageOptions& options, int64_t in_features, int64_t num_classes)
    : o_(options), in_(in_features), classes_(num_classes) {
  body_ = register_module("body", torch::nn::ModuleList());
  int64_t width = in_;
  for (int64_t size : o_.sizes) {
    body_->push_back(MeanAggregator(width, size));
    width = size;
  }
  head_ = register_module("head", torch::nn::Linear(width, classes_));
  torch::NoGradGuard no_grad;
  torch::Tensor kernel = torch::empty({width, classes_});  // Keras Dense: Glorot on [in, out]
  GlorotUniform(kernel);
  head_->weight.copy_(kernel.t());
  head_->bias.zero_();
}

std::string SampledSage::spec() const {
  return absl::StrCat("sampled_sage:sizes=", absl::StrJoin(o_.sizes, "-"), ",fanout=", o_.fanout,
                      ",dropout=", o_.dropout, ",batch=", o_.batch, ",epoch_fraction=", o_.epoch_fraction,
                      o_.project_first ? ",project_first=1" : "");
}

ModelOutput SampledSage::forward_centres(const NodeFeatures& x, const GraphView& graph, const torch::Tensor& centres) {
  TORCH_CHECK(centres.scalar_type() == torch::kInt64 && centres.dim() == 1, "SampledSage: centres must be int64 [B]");
  const int64_t layers = static_cast<int64_t>(o_.sizes.size()), f = o_.fanout;
  const torch::Tensor ids = centres.to(torch::kCPU).contiguous();
  const int64_t b = ids.numel();
  graph::Rng rng(NextStochasticSeed());
  const torch::Tensor trees = graph::SampleEgoTrees(
      graph.graph(), absl::MakeConstSpan(ids.data_ptr<int64_t>(), b), static_cast<int>(layers), static_cast<int>(f), rng);
  // Depth d: f^d positions from (f^d - 1) / (f - 1); the children of its j-th are depth d+1's
  // j*f .. j*f + f - 1. Absent positions (-1) read zero features, as stellargraph's None nodes.
  std::vector<int64_t> start(layers + 2, 0), width(layers + 1, 1);
  for (int64_t d = 0; d <= layers; ++d) {
    if (d > 0) width[d] = width[d - 1] * f;
    start[d + 1] = start[d] + width[d];
  }
  const bool training = is_training();
  // The raw features of positions [from, to) of every tree, [B, to - from, in] after `weight`:
  // dropout acts on each use of a row, so the self and the neighbour inputs get their own masks.
  // project_first: the first layer's x W once per kernel, read per position; only where dropout
  // is off (it masks each use of a row) and the positions outnumber the nodes.
  torch::Tensor self_all, neigh_all;  // x W_self, x W_neigh when so
  if (o_.project_first && !(training && o_.dropout > 0) && b * start[layers + 1] >= x.num_nodes()) {
    const auto& first = *body_[0]->as<MeanAggregatorImpl>();
    self_all = x.MatMul(first.w_self);
    neigh_all = x.MatMul(first.w_neigh);
  }
  auto project = [&](int64_t from, int64_t to, const torch::Tensor& weight, const torch::Tensor& all) {
    const torch::Tensor slots = trees.narrow(1, from, to - from).reshape({-1});
    const torch::Tensor valid = (slots >= 0).to(torch::kFloat32).to(weight.device()).unsqueeze(1);
    const torch::Tensor products =
        all.defined() ? all.index_select(0, slots.clamp_min(0).to(weight.device()))
                      : x.Rows(slots.clamp_min(0)).Dropout(o_.dropout, training).MatMul(weight);
    return (products * valid).reshape({b, to - from, weight.size(1)});
  };
  std::vector<torch::Tensor> h;  // per depth, [B, width, size] after the current layer
  for (int64_t l = 0; l < layers; ++l) {
    auto& agg = *body_[l]->as<MeanAggregatorImpl>();
    const bool last = l + 1 == layers;
    std::vector<torch::Tensor> next;
    for (int64_t d = 0; d < layers - l; ++d) {
      torch::Tensor self, neigh;
      if (l == 0) {
        self = project(start[d], start[d + 1], agg.w_self, self_all);
        neigh = project(start[d + 1], start[d + 2], agg.w_neigh, neigh_all);
      } else {
        self = torch::matmul(Dropout(h[d], o_.dropout, training), agg.w_self);
        neigh = torch::matmul(Dropout(h[d + 1], o_.dropout, training), agg.w_neigh);
      }
      neigh = neigh.reshape({b, width[d], f, neigh.size(-1)}).mean(2);
      torch::Tensor out = torch::cat({self, neigh}, -1) + agg.bias;
      next.push_back(last ? out : torch::relu(out));
    }
    h.swap(next);
  }
  // stellargraph's normalize="l2": x / sqrt(max(sum x^2, 1e-12)).
  const torch::Tensor z = h[0].reshape({b, o_.sizes.back()});
  const torch::Tensor embedding = z / z.pow(2).sum(1, /*keepdim=*/true).clamp_min(1e-12).sqrt();
  return {embedding, head_->forward(embedding)};
}

ModelOutput SampledSage::forward(const NodeFeatures& x, const GraphView& graph) {
  return forward_centres(x, graph, torch::arange(graph.num_nodes(), torch::kInt64));
}

absl::StatusOr<SampledSageOptions> ParseSampledSageSpec(const std::string& spec) {
  FGL_ASSIGN_OR_RETURN(graph::OptionString o, graph::OptionString::Parse(spec));
  auto bad = [&](const std::string& what) { return absl::InvalidArgumentError(absl::StrCat("model '", spec, "': ", what)); };
  if (o.name() != "sampled_sage") return bad("not a sampled_sage spec");
  SampledSageOptions s;
  const std::string sizes = o.String("sizes", "64-32");
  s.sizes.clear();
  for (absl::string_view part : absl::StrSplit(sizes, '-')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 2) return bad(absl::StrCat("sizes=", sizes, " (widths >= 2, e.g. 64-32)"));
    s.sizes.push_back(v);
  }
  FGL_ASSIGN_OR_RETURN(s.fanout, o.Int("fanout", s.fanout));
  FGL_ASSIGN_OR_RETURN(s.dropout, o.Double("dropout", s.dropout));
  FGL_ASSIGN_OR_RETURN(s.batch, o.Int("batch", s.batch));
  FGL_ASSIGN_OR_RETURN(s.epoch_fraction, o.Double("epoch_fraction", s.epoch_fraction));
  FGL_ASSIGN_OR_RETURN(s.project_first, o.Bool("project_first", s.project_first));
  FGL_RETURN_IF_ERROR(o.CheckAllUsed());
  if (s.sizes.empty() || s.sizes.size() > 4) return bad("1 to 4 layers");
  if (s.fanout < 1 || s.fanout > 16) return bad("fanout must be in [1, 16]");
  if (!(s.dropout >= 0 && s.dropout < 1)) return bad("dropout must be in [0, 1)");
  if (s.batch < 1) return bad("batch must be >= 1");
  if (!(s.epoch_fraction > 0 && s.epoch_fraction <= 1)) return bad("epoch_fraction must be in (0, 1]");
  return s;
}

}  // namespace fgl::nn
