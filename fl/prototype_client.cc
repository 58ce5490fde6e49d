#include "fl/prototype_client.h"

#include "absl/strings/str_cat.h"
#include "fl/model_average_server.h"
#include "nn/losses/losses.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {

proto::Message PrototypeMessage(const GlobalPrototypes& global, int round, const std::string& type) {
  proto::Message m;
  m.mutable_header()->set_sender(-1);
  m.mutable_header()->set_round(round);
  m.mutable_header()->set_type(type);
  if (global.prototypes.defined()) {
    AddTensors({{kPrototypesTensor, global.prototypes}, {kPresentTensor, global.present.to(torch::kFloat)}}, &m);
  }
  return m;
}

absl::StatusOr<GlobalPrototypes> ReadGlobalPrototypes(const proto::Message& message) {
  FGL_ASSIGN_OR_RETURN(auto tensors, DecodeTensors(message));
  GlobalPrototypes out;
  if (tensors.count(kPrototypesTensor) && tensors.count(kPresentTensor)) {
    out = {tensors.at(kPrototypesTensor), tensors.at(kPresentTensor).to(torch::kBool)};
  }
  return out;
}

absl::StatusOr<nn::ClassPrototypes> ReadLocalPrototypes(const proto::Message& reply, int64_t num_classes, int64_t dim,
                                                        const std::string& method) {
  FGL_ASSIGN_OR_RETURN(auto tensors, DecodeTensors(reply));
  auto p = tensors.find(kPrototypesTensor);
  auto c = tensors.find(kCountsTensor);
  if (p == tensors.end() || c == tensors.end() || p->second.dim() != 2 || p->second.size(0) != num_classes ||
      (dim != 0 && p->second.size(1) != dim) || c->second.sizes() != torch::IntArrayRef({num_classes}) ||
      !AllFinite(p->second) || (c->second < 0).any().item<bool>()) {
    return absl::InvalidArgumentError(absl::StrCat(method, ": client ", reply.header().sender(), " sent no valid [",
                                                   num_classes, ", ", dim == 0 ? "D" : absl::StrCat(dim),
                                                   "] prototypes with [", num_classes, "] counts"));
  }
  return nn::ClassPrototypes{p->second, c->second};
}

PrototypeClient::PrototypeClient(std::shared_ptr<const ClientData> data, const MethodConfig& config,
                                 std::unique_ptr<LocalModel> model, double proto_weight, std::string type,
                                 double embedding_dropout)
    : ModelClient(std::move(data), config, std::move(model)), proto_weight_(proto_weight), type_(std::move(type)),
      embedding_dropout_(embedding_dropout) {}

absl::StatusOr<std::unique_ptr<ClientAlgorithm>> PrototypeClient::Make(std::shared_ptr<const ClientData> data,
                                                                       const MethodConfig& config,
                                                                       double proto_weight, const std::string& type,
                                                                       double embedding_dropout) {
  FGL_ASSIGN_OR_RETURN(auto model, LocalModel::Create(data, config, PrivateInitSeed(config, *data)));
  return std::unique_ptr<ClientAlgorithm>(
      new PrototypeClient(std::move(data), config, std::move(model), proto_weight, type, embedding_dropout));
}

absl::StatusOr<proto::Message> PrototypeClient::Train(const proto::Message& global, const RoundInfo& round) {
  FGL_ASSIGN_OR_RETURN(auto tensors, DecodeTensors(global));
  LocalModel::Hooks hooks;
  // Round 1 (no prototypes yet): cross-entropy only.
  if (tensors.count(kPrototypesTensor) && proto_weight_ != 0) {
    const torch::Tensor prototypes = tensors.at(kPrototypesTensor);
    const torch::Tensor present = tensors.count(kPresentTensor) ? tensors.at(kPresentTensor).to(torch::kBool)
                                                                : torch::ones({prototypes.size(0)}, torch::kBool);
    const int64_t dim = model_->model().embedding_dim();
    if (prototypes.dim() != 2 || prototypes.size(0) != config_.num_classes || prototypes.size(1) != dim ||
        present.numel() != config_.num_classes || !AllFinite(prototypes)) {
      return absl::InvalidArgumentError(absl::StrCat(type_, ": global prototypes of shape ",
                                                     c10::str(prototypes.sizes()), ", expected finite [",
                                                     config_.num_classes, ", ", dim, "]"));
    }
    hooks.extra_loss = [this, prototypes, present](const nn::ModelOutput& out) {
      const torch::Tensor z = nn::Dropout(out.embedding, embedding_dropout_, /*training=*/true);
      return proto_weight_ * nn::PrototypeAlignment(z, data_->labels, data_->split.train, prototypes, present);
    };
  }
  FGL_RETURN_IF_ERROR(model_->Train(config_.spec.local_epochs(), round.seed, hooks));

  // The local prototypes of the trained model, in eval mode (OpenFGL's update_local_prototype).
  nn::GnnModel& m = model_->model();
  nn::ClassPrototypes local;
  {
    torch::NoGradGuard no_grad;
    m.eval();
    const nn::ModelOutput out = m.forward(*data_->features, *data_->view);
    m.train();
    local = nn::ComputeClassPrototypes(out.embedding, data_->labels, data_->split.train, config_.num_classes);
  }
  proto::Message reply = ModelReply({{kPrototypesTensor, local.prototypes}, {kCountsTensor, local.counts}},
                                    data_->data.num_nodes(), data_->id, round, type_);
  AddTrainLoss(model_->last_loss(), &reply);
  return reply;
}

}  // namespace fgl::fl
