#include "fl/node_level/server_side.h"

#include "graph/random.h"
#include "nn/adam.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl::node_level {

absl::StatusOr<std::unique_ptr<ServerSide>> ServerSide::Create(const SplitModelSpec& model, const graph::Dataset& data,
                                                               const graph::NodeSplit& split, double lr,
                                                               double weight_decay, const NfedgnnParams& params,
                                                               uint64_t run_seed) {
  const torch::Tensor train_index = split.train.nonzero().squeeze(1);
  if (train_index.numel() == 0) return absl::InvalidArgumentError("nfedgnn: the split has no labelled users");
  FGL_ASSIGN_OR_RETURN(nn::GraphView graph, nn::GraphView::Create(data.graph));
  torch::manual_seed(graph::Rng::Derive(run_seed, "nfedgnn/server_init"));
  std::unique_ptr<ServerSide> s(new ServerSide(SplitServer(model, data.num_classes), std::move(graph)));
  s->optimizer_ = std::make_unique<nn::Adam>(s->model_->parameters(),
                                             torch::optim::AdamOptions(lr).weight_decay(weight_decay));
  s->train_index_ = train_index;
  s->train_labels_ = data.labels.index_select(0, train_index);
  s->laplacian_weight_ = params.laplacian_weight();
  s->sum_ce_ = params.ce_reduction() == NfedgnnParams::SUM;
  return s;
}

double ServerSide::Step(const torch::Tensor& latents, torch::Tensor* gradients, StepDetails* details) {
  const torch::Tensor leaf = latents.detach().requires_grad_(true);
  model_->train();
  const torch::Tensor logits = model_->forward(leaf, graph_);
  auto reduction = torch::nn::functional::CrossEntropyFuncOptions();
  if (sum_ce_) reduction.reduction(torch::kSum);
  const torch::Tensor ce =
      torch::nn::functional::cross_entropy(logits.index_select(0, train_index_), train_labels_, reduction);
  torch::Tensor loss = ce, reg;
  if (laplacian_weight_ != 0) {
    reg = LaplacianRegularizer(leaf, graph_);
    loss = loss + laplacian_weight_ * reg;
  }
  if (details != nullptr) {
    torch::NoGradGuard no_grad;
    details->logits = logits.detach().clone();
    details->ce = ce.item<double>();
    details->reg = (reg.defined() ? reg : LaplacianRegularizer(leaf.detach(), graph_)).item<double>();
  }
  optimizer_->zero_grad();
  loss.backward();
  optimizer_->step();
  *gradients = leaf.grad();
  return loss.item<double>();
}

torch::Tensor ServerSide::EvalLogits(const torch::Tensor& latents) {
  torch::NoGradGuard no_grad;
  model_->eval();
  return model_->forward(latents, graph_);
}

fl::NamedTensors ServerSide::Parameters() const {
  fl::NamedTensors out;
  for (const auto& p : model_->named_parameters()) out.emplace_back(p.key(), p.value());
  return out;
}

UserModelOptions UserOptionsFor(const SplitModelSpec& model, const NfedgnnParams& params, double lr,
                                double weight_decay, uint64_t seed) {
  UserModelOptions o;
  o.latent_width = model.latent_width();
  o.bias = !model.gat;
  o.adam = {lr, params.has_user_weight_decay() ? params.user_weight_decay() : weight_decay};
  o.shared_init = params.user_init() == NfedgnnParams::SHARED;
  o.skip_zero_gradient = params.skip_zero_gradient_users();
  o.seed = seed;
  return o;
}

}  // namespace fgl::fl::node_level
