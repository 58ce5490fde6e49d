// Local training: every client trains its own model on its own data and never communicates.
// The lower reference of every table; each client's local model is scored.
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::local {
namespace {

class LocalClient final : public fl::ClientAlgorithm {
 public:
  LocalClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config,
              std::unique_ptr<fl::LocalModel> model)
      : data_(std::move(data)), config_(config), model_(std::move(model)) {}

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message&, const fl::RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(model_->Train(config_.local_epochs, round.seed));
    fl::proto::Message ack;  // an empty reply: nothing leaves the client
    ack.mutable_header()->set_sender(data_->id);
    ack.mutable_header()->set_round(round.round);
    ack.mutable_header()->set_type("local.none");
    fl::AddTrainLoss(model_->last_loss(), &ack);
    return ack;
  }

  absl::StatusOr<torch::Tensor> Predict(const fl::proto::Message*) override { return model_->Predict(); }
  absl::StatusOr<fl::proto::Message> SaveState() const override { return model_->SaveState(); }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    return model_->RestoreState(state);
  }

 private:
  std::shared_ptr<const fl::ClientData> data_;
  fl::MethodConfig config_;
  std::unique_ptr<fl::LocalModel> model_;
};

class LocalServer final : public fl::ServerAlgorithm {
 public:
  absl::StatusOr<fl::proto::Message> Broadcast(const fl::RoundInfo& round) override {
    fl::proto::Message m;
    m.mutable_header()->set_round(round.round);
    m.mutable_header()->set_type("local.none");
    return m;
  }
  absl::Status Accumulate(const fl::proto::Message&) override { return absl::OkStatus(); }
  absl::Status FinishRound(const fl::RoundInfo&) override { return absl::OkStatus(); }
  absl::StatusOr<fl::proto::Message> SaveState() const override { return fl::proto::Message(); }
  absl::Status RestoreState(const fl::proto::Message&) override { return absl::OkStatus(); }
};

absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> MakeClient(
    std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config) {
  // Clients start from the same initialisation as FedAvg's, so the two compare fairly.
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<fl::LocalModel> model,
                       fl::LocalModel::Create(data, config, config.seed));
  return std::unique_ptr<fl::ClientAlgorithm>(new LocalClient(data, config, std::move(model)));
}

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig&) {
  return std::unique_ptr<fl::ServerAlgorithm>(new LocalServer);
}

}  // namespace

FGL_REGISTER_METHOD("local", MakeClient, MakeServer);

}  // namespace fgl::methods::local
