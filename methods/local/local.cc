// Local training: every client trains its own model on its own data and never communicates.
// The lower reference of every table; each client's local model is scored.
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::local {
namespace {

class LocalClient final : public fl::ModelClient {
 public:
  using ModelClient::ModelClient;

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message&, const fl::RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(model_->Train(config_.spec.local_epochs(), round.seed));
    fl::proto::Message ack;  // an empty reply: nothing but the loss metric leaves the client
    ack.mutable_header()->set_sender(data_->id);
    ack.mutable_header()->set_round(round.round);
    ack.mutable_header()->set_type("local.none");
    fl::AddTrainLoss(model_->last_loss(), &ack);
    return ack;
  }

  // Always its own model, whatever the server broadcast.
  absl::StatusOr<torch::Tensor> Predict(const fl::proto::Message*) override { return model_->Predict(); }
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

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig&) {
  return std::unique_ptr<fl::ServerAlgorithm>(new LocalServer);
}

}  // namespace

// Clients start from the same initialisation as FedAvg's, so the two compare fairly.
FGL_REGISTER_METHOD("local", fl::ModelClient::Make<LocalClient>, MakeServer);

}  // namespace fgl::methods::local
