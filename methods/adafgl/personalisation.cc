#include "methods/adafgl/personalisation.h"

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>

#include "absl/strings/str_cat.h"
#include "graph/random.h"
#include "nn/ops/dropout.h"

namespace fgl::methods::adafgl {

torch::Tensor DenseAdjacency(const graph::CsrGraph& g) {
  const int64_t n = g.num_nodes();
  torch::Tensor adjacency = torch::zeros({n, n});
  auto a = adjacency.accessor<float, 2>();
  for (int64_t u = 0; u < n; ++u) {
    for (int64_t v : g.neighbors(u)) a[u][v] += 1.0f;
  }
  return adjacency;
}

std::vector<int64_t> LabelPropagationOrder(const torch::Tensor& train, uint64_t seed, int client) {
  const torch::Tensor mask = train.to(torch::kCPU).contiguous();
  const bool* is_train = mask.data_ptr<bool>();
  std::vector<int64_t> order;
  for (int64_t i = 0; i < mask.numel(); ++i) {
    if (is_train[i]) order.push_back(i);
  }
  graph::Rng rng(graph::Rng::Derive(seed, absl::StrCat("adafgl/lp/", client)));
  rng.Shuffle(order);
  return order;
}

uint64_t ModuleInitSeed(uint64_t seed, int client) {
  return graph::Rng::Derive(seed, absl::StrCat("adafgl/modules/", client));
}

torch::Tensor NormalisedAdjacency(const torch::Tensor& a, double r) {
  const torch::Tensor with_loops = a + torch::eye(a.size(0), a.options());
  const torch::Tensor degree = with_loops.sum(1);
  auto power = [&](double e) {
    torch::Tensor d = degree.pow(e);
    return torch::where(torch::isinf(d), torch::zeros_like(d), d);
  };
  // OpenFGL: adj · D^{r−1}, transposed, · D^{−r}; A + I is symmetric here.
  return power(r - 1).unsqueeze(1) * with_loops.t() * power(-r).unsqueeze(0);
}

torch::Tensor SoftmaxCosine(const torch::Tensor& x) {
  const torch::Tensor p = torch::softmax(x, 1);
  const torch::Tensor norms = p.norm(2, 1);
  torch::Tensor s = torch::mm(p, p.t()) / torch::clamp_min(torch::outer(norms, norms), 1e-9);
  return s - torch::diag(torch::diag(s));
}

double PropagationReliability(const torch::Tensor& adjacency, const torch::Tensor& labels, int64_t num_classes,
                              const torch::Tensor& train_order, const torch::Tensor& unlabelled,
                              const AdaFglParams& params) {
  torch::NoGradGuard no_grad;
  const int64_t n = labels.size(0), half = train_order.size(0) / 2;
  const torch::Tensor seeds = train_order.slice(0, 0, half), held_out = train_order.slice(0, half);
  if (held_out.numel() == 0) return 0.5;  // nothing to score: no preference between the modules
  torch::Tensor y0 = torch::one_hot(labels, num_classes).to(torch::kFloat32);
  torch::Tensor reset = unlabelled.clone();
  reset.index_fill_(0, held_out, true);
  y0.index_put_({reset}, 1.0f / static_cast<float>(num_classes));
  torch::Tensor seeded = torch::zeros({n}, torch::kBool).index_fill_(0, seeds, true);
  const torch::Tensor a = NormalisedAdjacency(adjacency, params.r());
  torch::Tensor y = y0;
  for (int k = 0; k < params.lp_steps(); ++k) {
    y = params.alpha() * torch::mm(a, y) + (1 - params.alpha()) * y0;
    y.index_put_({seeded}, y.index({seeded}) + y0.index({seeded}));
  }
  const torch::Tensor predicted = y.index_select(0, held_out).argmax(1);
  return predicted.eq(labels.index_select(0, held_out)).to(torch::kFloat64).mean().item<double>();
}

torch::Tensor SmoothedFeatures(const torch::Tensor& adjacency, const torch::Tensor& features,
                               const torch::Tensor& soft_label, const AdaFglParams& params) {
  torch::NoGradGuard no_grad;
  // softmax of soft labels that are already probabilities: OpenFGL's getre_scale(soft_label).
  const torch::Tensor similar = (SoftmaxCosine(soft_label) > params.similarity_threshold()).to(adjacency.dtype());
  const torch::Tensor mixed = params.alpha() * adjacency + (1 - params.alpha()) * similar;
  const torch::Tensor a = NormalisedAdjacency(mixed, params.r());
  std::vector<torch::Tensor> hops = {features};
  for (int k = 0; k < params.prop_steps(); ++k) hops.push_back(torch::mm(a, hops.back()));
  return torch::cat(hops, 1);
}

PersonalisedModules::Layer PersonalisedModules::MakeLayer(const std::string& name, int64_t in, int64_t out,
                                                          at::Generator& generator) {
  // xavier_uniform with gain calculate_gain("relu") = √2, zero bias (OpenFGL's reset_parameters).
  const double bound = std::sqrt(2.0) * std::sqrt(6.0 / static_cast<double>(in + out));
  Layer l;
  l.weight = register_parameter(name + "_weight", torch::empty({in, out}).uniform_(-bound, bound, generator));
  l.bias = register_parameter(name + "_bias", torch::zeros({out}));
  return l;
}

PersonalisedModules::PersonalisedModules(int64_t features, int64_t smoothed_width, int64_t classes,
                                         const AdaFglParams& params, uint64_t init_seed)
    : dropout_(params.dropout()) {
  const int64_t h = params.hidden();
  at::Generator g = at::detail::createCPUGenerator(init_seed);
  homo_ = {MakeLayer("homo_0", smoothed_width, h, g), MakeLayer("homo_1", h, classes, g)};
  original_ = {MakeLayer("original_0", features, h, g), MakeLayer("original_1", h, h, g), MakeLayer("original_2", h, classes, g)};
  smooth_ = {MakeLayer("smooth_0", smoothed_width, h, g), MakeLayer("smooth_1", h, h, g), MakeLayer("smooth_2", h, classes, g)};
  propagate_ = {MakeLayer("propagate_0", smoothed_width, h, g), MakeLayer("propagate_1", h, h, g),
                MakeLayer("propagate_2", h, classes, g)};
  homo_act_ = register_module("homo_act", torch::nn::PReLU());
  branch_act_ = register_module("branch_act", torch::nn::PReLU());  // shared by the original and smooth branches
  propagate_act_ = register_module("propagate_act", torch::nn::PReLU());
}

torch::Tensor PersonalisedModules::Mlp(const std::vector<Layer>& layers, torch::nn::PReLU& act, torch::Tensor x) {
  for (size_t i = 0; i < layers.size(); ++i) {
    x = torch::addmm(layers[i].bias, x, layers[i].weight);
    if (i + 1 < layers.size()) x = nn::Dropout(act->forward(x), dropout_, is_training());
  }
  return x;
}

// OpenFGL's HetePropagateLayer with beta = 0: a signed, rescaled similarity of the branch's own
// predictions propagates them positively and negatively.
torch::Tensor PersonalisedModules::MessagePropagation(const torch::Tensor& z) {
  const torch::Tensor s = SoftmaxCosine(z);
  const torch::Tensor mean = s.mean(), top = s.max();
  torch::Tensor r = torch::where(s > mean, (s - mean) / (top - mean).clamp_min(1e-12), -s / mean.clamp_min(1e-12));
  r = r + torch::eye(r.size(0), r.options());
  const torch::Tensor positive = torch::softmax(torch::mm(propagate_act_->forward(r), z), 1);
  const torch::Tensor negative = torch::softmax(torch::mm(propagate_act_->forward(-r), z), 1);
  return (positive - negative + z) / 2;
}

Outputs PersonalisedModules::forward(const FixedInputs& in) {
  Outputs out;
  out.homo = Mlp(homo_, homo_act_, in.smoothed);
  out.original = Mlp(original_, branch_act_, in.features);
  out.smooth = Mlp(smooth_, branch_act_, in.smoothed);
  out.propagated = MessagePropagation(Mlp(propagate_, propagate_act_, in.smoothed));
  return out;
}

torch::Tensor PersonalisedModules::Loss(const Outputs& out, const FixedInputs& in, const torch::Tensor& labels,
                                        const torch::Tensor& train) {
  const torch::Tensor y = labels.index({train});
  auto ce = [&](const torch::Tensor& logits) { return torch::cross_entropy_loss(logits.index({train}), y); };
  return ce(out.homo) + torch::mse_loss(out.homo, in.soft_label) + ce(out.original) + ce(out.smooth) +
         ce(out.propagated);
}

torch::Tensor PersonalisedModules::Predict(const Outputs& out, const FixedInputs& in) {
  // σ(soft_label) of probabilities, as OpenFGL (a second softmax).
  const torch::Tensor homo = (torch::softmax(out.homo, 1) + torch::softmax(in.soft_label, 1)) / 2;
  const torch::Tensor hete =
      (torch::softmax(out.original, 1) + torch::softmax(out.smooth, 1) + torch::softmax(out.propagated, 1)) / 3;
  return in.reliability * homo + (1 - in.reliability) * hete;
}

}  // namespace fgl::methods::adafgl
