#include "fl/mutual_client.h"

#include "fl/model_average_server.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {
namespace {
constexpr char kSharedPrefix[] = "shared.";
}  // namespace

MethodConfig SharedModelConfig(const MethodConfig& config, const std::string& shared_model_spec) {
  MethodConfig shared = config;
  shared.model_spec = shared_model_spec;
  shared.spec.set_shared_group("");
  return shared;
}

absl::StatusOr<std::unique_ptr<MutualClient>> MutualClient::Make(std::shared_ptr<const ClientData> data,
                                                                 const MethodConfig& config,
                                                                 const std::string& shared_model_spec, Losses losses,
                                                                 std::string type) {
  FGL_ASSIGN_OR_RETURN(auto own, LocalModel::Create(data, config, PrivateInitSeed(config, *data)));
  FGL_ASSIGN_OR_RETURN(auto shared, LocalModel::Create(data, SharedModelConfig(config, shared_model_spec), config.seed));
  return std::unique_ptr<MutualClient>(
      new MutualClient(std::move(data), config, std::move(losses), std::move(type), std::move(own), std::move(shared)));
}

absl::StatusOr<proto::Message> MutualClient::Train(const proto::Message& global, const RoundInfo& round) {
  FGL_RETURN_IF_ERROR(LoadTensors(global, shared_->Parameters()));
  FGL_RETURN_IF_ERROR(LocalModel::TrainMutually(
      *own_, *shared_, config_.spec.local_epochs(), round.seed,
      [&](const nn::ModelOutput& own, const nn::ModelOutput& shared) { return losses_(*data_, own, shared); }));
  proto::Message reply = ModelReply(shared_->Parameters(), data_->data.num_nodes(), data_->id, round, type_);
  AddTrainLoss(own_->last_loss(), &reply);
  return reply;
}

absl::StatusOr<proto::Message> MutualClient::SaveState() const {
  proto::Message state = own_->SaveState();
  shared_->AddState(kSharedPrefix, &state);
  return state;
}

absl::Status MutualClient::RestoreState(const proto::Message& state) {
  FGL_RETURN_IF_ERROR(own_->RestoreState(state));
  return shared_->RestoreState(state, kSharedPrefix);
}

}  // namespace fgl::fl
