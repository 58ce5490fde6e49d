#include "fl/local_model.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "fl/optimizer_state.h"
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

absl::Status LocalModel::Train(int epochs, uint64_t seed, const Hooks& hooks) {
  nn::DropoutSeedScope dropout_stream(seed);  // per client, whatever thread trains it
  model_->train();
  for (int e = 0; e < epochs; ++e) {
    optimizer_->zero_grad();
    const nn::ModelOutput out = model_->forward(*data_->features, *data_->view);
    torch::Tensor loss = nn::MaskedCrossEntropy(out.logits, data_->labels, data_->split.train);
    if (hooks.extra_loss) loss = loss + hooks.extra_loss(out);
    const double value = loss.item<double>();
    last_loss_ = value;
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("client ", data_->id, ": local loss is ", value, " at epoch ", e + 1));
    }
    loss.backward();
    if (hooks.after_backward) hooks.after_backward();
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
  AddTensors(Parameters(), &m);
  SaveAdamState(*optimizer_, Parameters(), "adam.", &m);
  return m;
}

absl::Status LocalModel::RestoreState(const proto::Message& m) {
  FGL_RETURN_IF_ERROR(LoadTensors(m, Parameters()));
  FGL_ASSIGN_OR_RETURN(auto tensors, DecodeTensors(m));
  return RestoreAdamState(m, tensors, Parameters(), "adam.", absl::StrCat("client ", data_->id),
                          optimizer_.get());
}

absl::StatusOr<torch::Tensor> LocalModel::Predict(const proto::Message* global) {
  if (global != nullptr) FGL_RETURN_IF_ERROR(LoadTensors(*global, SharedParameters()));
  return Predict();
}

}  // namespace fgl::fl
