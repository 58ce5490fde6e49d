// FedAvg (McMahan et al. 2017). Each round, every sampled client:
//   1. loads the global weights w from the server's message,
//   2. runs E local epochs of Adam on its training nodes,
//   3. replies with its weights and its node count n_k.
// The server sets w = sum_k n_k w_k / sum_k n_k (fl::ModelAverageServer). The global model is
// scored on every client.
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedavg {
namespace {

constexpr char kType[] = "fedavg.weights";

class FedAvgClient final : public fl::ClientAlgorithm {
 public:
  FedAvgClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config,
               std::unique_ptr<fl::LocalModel> model)
      : data_(std::move(data)), config_(config), model_(std::move(model)) {}

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global,
                                           const fl::RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, model_->SharedParameters()));
    FGL_RETURN_IF_ERROR(model_->Train(config_.local_epochs, round.seed));
    fl::proto::Message reply =
        fl::ModelReply(model_->SharedParameters(), data_->data.num_nodes(), data_->id, round, kType);
    fl::AddTrainLoss(model_->last_loss(), &reply);
    return reply;
  }

  absl::StatusOr<torch::Tensor> Predict(const fl::proto::Message* global) override {
    return model_->Predict(global);
  }
  absl::StatusOr<fl::proto::Message> SaveState() const override { return model_->SaveState(); }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    return model_->RestoreState(state);
  }

 private:
  std::shared_ptr<const fl::ClientData> data_;
  fl::MethodConfig config_;
  std::unique_ptr<fl::LocalModel> model_;
};

absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> MakeClient(
    std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<fl::LocalModel> model,
                       fl::LocalModel::Create(data, config, config.seed));
  return std::unique_ptr<fl::ClientAlgorithm>(new FedAvgClient(data, config, std::move(model)));
}

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  return fl::MakeModelAverageServer(config, kType);
}

}  // namespace

FGL_REGISTER_METHOD("fedavg", MakeClient, MakeServer);

}  // namespace fgl::methods::fedavg
