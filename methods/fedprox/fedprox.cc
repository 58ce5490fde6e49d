// FedProx (Li et al. 2020): FedAvg whose local objective adds (mu / 2) ||w - w_global||^2, which
// keeps each client near the round's global model. mu defaults to 1e-3 (OpenFGL). The server
// step is FedAvg's node-weighted mean (fl::ModelAverageServer).
#include <vector>

#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedprox {
namespace {

constexpr char kType[] = "fedprox.weights";

class FedProxClient final : public fl::ClientAlgorithm {
 public:
  FedProxClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config,
                std::unique_ptr<fl::LocalModel> model)
      : data_(std::move(data)), config_(config), mu_(config.Param("mu", 1e-3)),
        model_(std::move(model)) {}

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global,
                                           const fl::RoundInfo& round) override {
    const fl::NamedTensors params = model_->SharedParameters();
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, params));
    std::vector<torch::Tensor> anchor;
    for (const auto& [name, p] : params) anchor.push_back(p.detach().clone());
    auto proximal = [&] {
      torch::Tensor sum = torch::zeros({}, params.front().second.options());
      for (size_t i = 0; i < params.size(); ++i) sum = sum + (params[i].second - anchor[i]).pow(2).sum();
      return 0.5 * mu_ * sum;
    };
    FGL_RETURN_IF_ERROR(model_->Train(config_.local_epochs, round.seed, proximal));
    fl::proto::Message reply = fl::ModelReply(params, data_->data.num_nodes(), data_->id, round, kType);
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
  double mu_;
  std::unique_ptr<fl::LocalModel> model_;
};

absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> MakeClient(
    std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<fl::LocalModel> model,
                       fl::LocalModel::Create(data, config, config.seed));
  return std::unique_ptr<fl::ClientAlgorithm>(new FedProxClient(data, config, std::move(model)));
}

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  return fl::MakeModelAverageServer(config, kType);
}

}  // namespace

FGL_REGISTER_METHOD("fedprox", MakeClient, MakeServer);

}  // namespace fgl::methods::fedprox
