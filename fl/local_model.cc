#include "fl/local_model.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nn/losses/losses.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {

LocalModel::LocalModel(std::shared_ptr<const ClientData> data, const MethodConfig& config,
                       std::shared_ptr<nn::GnnModel> model)
    : data_(std::move(data)), config_(config), model_(std::move(model)) {
  optimizer_ = std::make_unique<torch::optim::Adam>(
      model_->parameters(), torch::optim::AdamOptions(config_.lr).weight_decay(config_.weight_decay));
}

absl::StatusOr<std::unique_ptr<LocalModel>> LocalModel::Create(
    std::shared_ptr<const ClientData> data, const MethodConfig& config, uint64_t init_seed) {
  torch::manual_seed(init_seed);
  FGL_ASSIGN_OR_RETURN(std::shared_ptr<nn::GnnModel> model,
                       nn::MakeModel(config.model_spec, config.num_features, config.num_classes));
  model->to(config.device);
  return std::unique_ptr<LocalModel>(new LocalModel(std::move(data), config, std::move(model)));
}

NamedTensors LocalModel::SharedParameters() const { return Parameters(config_.shared_group); }

NamedTensors LocalModel::Parameters(const std::string& group) const {
  if (!group.empty()) return model_->named_group_parameters(group);
  NamedTensors out;
  for (const auto& item : model_->named_parameters(/*recurse=*/true)) out.emplace_back(item.key(), item.value());
  return out;
}

absl::Status LocalModel::Train(int epochs, uint64_t seed, const std::function<torch::Tensor()>& extra_loss) {
  nn::DropoutSeedScope dropout_stream(seed);  // per client, whatever thread trains it
  model_->train();
  for (int e = 0; e < epochs; ++e) {
    optimizer_->zero_grad();
    torch::Tensor loss = nn::MaskedCrossEntropy(model_->forward(*data_->features, *data_->view).logits,
                                                data_->labels, data_->split.train);
    if (extra_loss) loss = loss + extra_loss();
    const double value = loss.item<double>();
    last_loss_ = value;
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("client ", data_->id, ": local loss is ", value, " at epoch ", e + 1));
    }
    loss.backward();
    optimizer_->step();
  }
  return absl::OkStatus();
}

torch::Tensor LocalModel::Predict() {
  torch::NoGradGuard no_grad;
  model_->train(config_.dropout_at_eval);
  torch::Tensor logits = model_->forward(*data_->features, *data_->view).logits;
  model_->eval();
  return logits;
}

proto::Message LocalModel::SaveState() const {
  proto::Message m;
  m.mutable_header()->set_type("local_model.state");
  NamedTensors tensors = Parameters();
  auto& state = optimizer_->state();
  for (const auto& [name, p] : Parameters()) {
    auto it = state.find(c10::guts::to_string(p.unsafeGetTensorImpl()));
    if (it == state.end()) continue;  // not stepped yet
    const auto& s = static_cast<const torch::optim::AdamParamState&>(*it->second);
    tensors.emplace_back("adam.exp_avg." + name, s.exp_avg());
    tensors.emplace_back("adam.exp_avg_sq." + name, s.exp_avg_sq());
    (*m.mutable_scalars())["adam.step." + name] = static_cast<double>(s.step());
  }
  AddTensors(tensors, &m);
  return m;
}

absl::Status LocalModel::RestoreState(const proto::Message& m) {
  FGL_RETURN_IF_ERROR(LoadTensors(m, Parameters()));
  FGL_ASSIGN_OR_RETURN(auto tensors, DecodeTensors(m));
  auto& state = optimizer_->state();
  state.clear();
  for (const auto& [name, p] : Parameters()) {
    auto step = m.scalars().find("adam.step." + name);
    if (step == m.scalars().end()) continue;
    auto avg = tensors.find("adam.exp_avg." + name);
    auto sq = tensors.find("adam.exp_avg_sq." + name);
    if (avg == tensors.end() || sq == tensors.end() || avg->second.sizes() != p.sizes() ||
        sq->second.sizes() != p.sizes() || step->second < 0) {
      return absl::InvalidArgumentError(absl::StrCat("client ", data_->id,
                                                     ": bad optimiser state for '", name, "'"));
    }
    auto s = std::make_unique<torch::optim::AdamParamState>();
    s->step(static_cast<int64_t>(step->second));
    s->exp_avg(avg->second.to(p.device()));
    s->exp_avg_sq(sq->second.to(p.device()));
    state[c10::guts::to_string(p.unsafeGetTensorImpl())] = std::move(s);
  }
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> LocalModel::Predict(const proto::Message* global) {
  if (global != nullptr) FGL_RETURN_IF_ERROR(LoadTensors(*global, SharedParameters()));
  return Predict();
}

}  // namespace fgl::fl
