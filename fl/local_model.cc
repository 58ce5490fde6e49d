#include "fl/local_model.h"

#include "glog/logging.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "fl/model_average_server.h"
#include "fl/optimizer_state.h"
#include "graph/random.h"
#include "nn/adam.h"
#include "nn/losses/losses.h"
#include "nn/ops/dropout.h"
#include "nn/threads.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {

uint64_t PrivateInitSeed(const MethodConfig& config, const ClientData& data) {
  return graph::Rng::Derive(config.seed, absl::StrCat("private_init/", data.id));
}

LocalModel::LocalModel(std::shared_ptr<const ClientData> data, const MethodConfig& config,
                       std::shared_ptr<nn::GnnModel> model)
    : data_(std::move(data)), config_(config), model_(std::move(model)) {
  if (config_.spec.optimizer() == proto::FederationSpec::SGD) {
    optimizer_ = std::make_unique<torch::optim::SGD>(
        model_->parameters(),
        torch::optim::SGDOptions(config_.spec.lr()).momentum(config_.spec.momentum()).weight_decay(config_.spec.weight_decay()));
  } else {
    optimizer_ = std::make_unique<nn::Adam>(
        model_->parameters(), torch::optim::AdamOptions(config_.spec.lr()).weight_decay(config_.spec.weight_decay()));
  }
}

absl::StatusOr<std::unique_ptr<LocalModel>> LocalModel::Create(
    std::shared_ptr<const ClientData> data, const MethodConfig& config, uint64_t init_seed) {
  torch::manual_seed(init_seed);
  FGL_ASSIGN_OR_RETURN(std::shared_ptr<nn::GnnModel> model,
                       nn::MakeModel(config.model_spec, config.num_features, config.num_classes));
  model->to(config.device);
  return std::unique_ptr<LocalModel>(new LocalModel(std::move(data), config, std::move(model)));
}

NamedTensors LocalModel::SharedParameters() const { return Parameters(config_.spec.shared_group()); }

NamedTensors LocalModel::Parameters(const std::string& group) const {
  if (!group.empty()) return model_->named_group_parameters(group);
  NamedTensors out;
  for (const auto& item : model_->named_parameters(/*recurse=*/true)) out.emplace_back(item.key(), item.value());
  return out;
}

absl::Status LocalModel::Train(int epochs, uint64_t seed, const Hooks& hooks) {
  nn::DropoutSeedScope dropout_stream(seed);  // per client, whatever thread trains it
  const nn::GraphSizedThreads threads(data_->view->num_nodes());
  model_->train();
  if (model_->mini_batching()) return TrainMiniBatches(epochs, seed, hooks);
  for (int e = 0; e < epochs; ++e) {
    optimizer_->zero_grad();
    const nn::ModelOutput out = model_->forward(*data_->features, *data_->view);
    const torch::Tensor& train = data_->split.train;
    FGL_ASSIGN_OR_RETURN(
        last_loss_,
        OptimiserStep(out,
                      hooks.task_loss ? hooks.task_loss(out.logits.index({train}), data_->labels.index({train}))
                                      : nn::MaskedCrossEntropy(out.logits, data_->labels, train),
                      hooks, e));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> LocalModel::OptimiserStep(const nn::ModelOutput& out, torch::Tensor loss, const Hooks& hooks,
                                                 int epoch) {
  if (hooks.on_task_loss) hooks.on_task_loss(loss.item<double>());
  if (hooks.extra_loss) loss = loss + hooks.extra_loss(out);
  const double value = loss.item<double>();
  if (!std::isfinite(value)) {
    last_loss_ = value;
    return absl::InvalidArgumentError(
        absl::StrCat("client ", data_->id, ": local loss is ", value, " at epoch ", epoch + 1));
  }
  loss.backward();
  if (hooks.after_backward) hooks.after_backward();
  optimizer_->step();
  ++steps_;
  return value;
}

std::vector<int64_t> MaskedNodes(const torch::Tensor& mask) {
  const torch::Tensor m = mask.to(torch::kCPU).contiguous();
  const bool* in = m.data_ptr<bool>();
  std::vector<int64_t> out;
  for (int64_t v = 0; v < m.numel(); ++v)
    if (in[v]) out.push_back(v);
  return out;
}

absl::Status LocalModel::TrainMiniBatches(int epochs, uint64_t seed, const Hooks& hooks) {
  const nn::GnnModel::MiniBatching mb = *model_->mini_batching();
  std::vector<int64_t> pool = MaskedNodes(data_->split.train);
  const int64_t per_epoch = std::min<int64_t>(
      static_cast<int64_t>(mb.epoch_fraction * static_cast<double>(data_->data.num_nodes())), pool.size());
  if (per_epoch <= 0) return absl::OkStatus();
  graph::Rng rng(seed, "minibatch");
  for (int e = 0; e < epochs; ++e) {
    // A fresh random subset of the training nodes each epoch, in batches (FedEgo §4 step 2).
    rng.ShuffleFront(pool, per_epoch);
    double sum = 0;
    int batches = 0;
    for (int64_t begin = 0; begin < per_epoch; begin += mb.batch_size) {
      const int64_t size = std::min<int64_t>(mb.batch_size, per_epoch - begin);
      const torch::Tensor centres =
          torch::from_blob(pool.data() + begin, {size}, torch::kInt64).clone().to(data_->labels.device());
      optimizer_->zero_grad();
      const nn::ModelOutput out = model_->forward_centres(*data_->features, *data_->view, centres);
      const torch::Tensor labels = data_->labels.index_select(0, centres);
      FGL_ASSIGN_OR_RETURN(const double value,
                           OptimiserStep(out,
                                         hooks.task_loss ? hooks.task_loss(out.logits, labels)
                                                         : torch::nn::functional::cross_entropy(out.logits, labels),
                                         hooks, e));
      sum += value;
      ++batches;
    }
    last_loss_ = sum / batches;
  }
  return absl::OkStatus();
}

absl::Status LocalModel::Step(const std::function<torch::Tensor(nn::GnnModel&)>& loss_fn) {
  model_->train();
  optimizer_->zero_grad();
  torch::Tensor loss = loss_fn(*model_);
  last_loss_ = loss.item<double>();
  if (!std::isfinite(last_loss_)) {
    return absl::InvalidArgumentError(absl::StrCat("client ", data_->id, ": local loss is ", last_loss_));
  }
  loss.backward();
  optimizer_->step();
  ++steps_;
  return absl::OkStatus();
}

nn::ModelOutput LocalModel::Infer() {
  torch::NoGradGuard no_grad;
  model_->eval();
  return model_->forward(*data_->features, *data_->view);
}

absl::StatusOr<proto::Message> ModelClient::TrainAndReply(const RoundInfo& round, const std::string& type,
                                                         const LocalModel::Hooks& hooks) {
  FGL_RETURN_IF_ERROR(model_->Train(config_.spec.local_epochs(), round.seed, hooks));
  proto::Message reply = ModelReply(model_->SharedParameters(), data_->data.num_nodes(), data_->id, round, type);
  AddTrainLoss(model_->last_loss(), &reply);
  return reply;
}

torch::Tensor LocalModel::Predict() { return PredictOn(*data_); }

torch::Tensor LocalModel::PredictOn(const ClientData& graph) {
  torch::NoGradGuard no_grad;
  model_->train(config_.spec.eval().dropout_at_eval());
  torch::Tensor logits;
  if (model_->mini_batching()) {
    // Scoring a centre costs a whole tree: only the nodes evaluation reads.
    const torch::Tensor scored = (graph.split.val | graph.split.test).nonzero().flatten();
    const torch::Tensor some = model_->forward_centres(*graph.features, *graph.view, scored).logits;
    logits = torch::zeros({graph.data.num_nodes(), some.size(1)}, some.options()).index_copy_(0, scored, some);
  } else {
    logits = model_->forward(*graph.features, *graph.view).logits;
  }
  model_->eval();
  return logits;
}

proto::Message LocalModel::SaveState(const std::string& prefix) const {
  proto::Message m;
  m.mutable_header()->set_type("local_model.state");
  AddState(prefix, &m);
  return m;
}

void LocalModel::AddState(const std::string& prefix, proto::Message* m) const {
  const NamedTensors params = WithPrefix(prefix, Parameters());
  AddTensors(params, m);
  if (const auto* sgd = dynamic_cast<const torch::optim::SGD*>(optimizer_.get())) {
    SaveSgdState(*sgd, params, prefix + "sgd.", m);
  } else {
    SaveAdamState(static_cast<const torch::optim::Adam&>(*optimizer_), params, prefix + "adam.", m);
  }
}

absl::Status LocalModel::RestoreState(const proto::Message& m, const std::string& prefix) {
  const NamedTensors params = WithPrefix(prefix, Parameters());
  FGL_RETURN_IF_ERROR(LoadTensors(m, params));
  FGL_ASSIGN_OR_RETURN(auto tensors, DecodeTensors(m));
  const std::string owner = absl::StrCat("client ", data_->id);
  if (auto* sgd = dynamic_cast<torch::optim::SGD*>(optimizer_.get())) {
    return RestoreSgdState(tensors, params, prefix + "sgd.", owner, sgd);
  }
  return RestoreAdamState(m, tensors, params, prefix + "adam.", owner, static_cast<torch::optim::Adam*>(optimizer_.get()));
}

absl::Status LocalModel::TrainMutually(LocalModel& a, LocalModel& b, int epochs, uint64_t seed,
                                       const MutualLosses& losses) {
  CHECK(a.data_ == b.data_) << "mutual learning trains two models on one client's data";
  nn::DropoutSeedScope dropout_stream(seed);
  a.model_->train();
  b.model_->train();
  for (int e = 0; e < epochs; ++e) {
    a.optimizer_->zero_grad();
    b.optimizer_->zero_grad();
    const nn::ModelOutput out_a = a.model_->forward(*a.data_->features, *a.data_->view);
    const nn::ModelOutput out_b = b.model_->forward(*b.data_->features, *b.data_->view);
    auto [loss_a, loss_b] = losses(out_a, out_b);
    a.last_loss_ = loss_a.item<double>();
    b.last_loss_ = loss_b.item<double>();
    if (!std::isfinite(a.last_loss_) || !std::isfinite(b.last_loss_)) {
      return absl::InvalidArgumentError(absl::StrCat("client ", a.data_->id, ": mutual losses ", a.last_loss_, ", ",
                                                     b.last_loss_, " at epoch ", e + 1));
    }
    // Each loss sees the other model's output detached, so one backward pass serves both.
    (loss_a + loss_b).backward();
    a.optimizer_->step();
    b.optimizer_->step();
    ++a.steps_;
    ++b.steps_;
  }
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> LocalModel::Predict(const proto::Message* global) {
  if (global != nullptr) FGL_RETURN_IF_ERROR(LoadTensors(*global, SharedParameters()));
  return Predict();
}

}  // namespace fgl::fl
