// FedProx (Li et al. 2020): FedAvg whose local objective adds (mu / 2) ||w - w_global||^2, which
// keeps each client near the round's global model (mu: fedprox.proto). The server
// step is FedAvg's node-weighted mean (fl::ModelAverageServer).
#include <vector>

#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "methods/fedprox/fedprox.pb.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedprox {
namespace {

constexpr char kType[] = "fedprox.weights";

absl::Status Validate(const FedProxParams& p) {
  if (p.mu() < 0) return absl::InvalidArgumentError(absl::StrCat("fedprox.mu = ", p.mu(), ": must be >= 0"));
  return absl::OkStatus();
}

class FedProxClient final : public fl::ModelClient {
 public:
  using ModelClient::ModelClient;

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global,
                                           const fl::RoundInfo& round) override {
    FGL_ASSIGN_OR_RETURN(const FedProxParams p, fl::MethodParams<FedProxParams>(config_));
    const double mu = p.mu();
    const fl::NamedTensors params = model_->SharedParameters();
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, params));
    std::vector<torch::Tensor> anchor;
    for (const auto& [name, p] : params) anchor.push_back(p.detach().clone());
    fl::LocalModel::Hooks hooks;
    hooks.extra_loss = [&](const nn::ModelOutput&) {
      torch::Tensor sum = torch::zeros({}, params.front().second.options());
      for (size_t i = 0; i < params.size(); ++i) sum = sum + (params[i].second - anchor[i]).pow(2).sum();
      return 0.5 * mu * sum;
    };
    FGL_RETURN_IF_ERROR(model_->Train(config_.local_epochs, round.seed, hooks));
    fl::proto::Message reply = fl::ModelReply(params, data_->data.num_nodes(), data_->id, round, kType);
    fl::AddTrainLoss(model_->last_loss(), &reply);
    return reply;
  }
};

}  // namespace

FGL_REGISTER_METHOD("fedprox", fl::ModelClient::Make<FedProxClient>,
                    [](const fl::MethodConfig& config) { return fl::MakeModelAverageServer(config, kType); },
                    {fl::TypedParams(&Validate)});

}  // namespace fgl::methods::fedprox
