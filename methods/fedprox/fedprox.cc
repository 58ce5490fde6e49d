// FedProx (Li et al. 2020): FedAvg whose local objective adds (mu / 2) ||w - w_global||^2, which
// keeps each client near the round's global model (mu: fedprox.proto). The server
// step is FedAvg's node-weighted mean (fl::ModelAverageServer). FedEgo's baseline code's form
// (seeds_fedego.md §9.3) is an option: mu sum_t ||w_t - w_g,t||_F / numel(w_t), mu adapting
// to the ratio of cross-entropy and proximal term after every step.
#include <cmath>
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

class FedProxClient final : public fl::ModelClient {
 public:
  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global,
                                           const fl::RoundInfo& round) override {
    const FedProxParams& p = params_;
    if (!p.adaptive_mu() || mu_ < 0) mu_ = p.mu();
    const fl::NamedTensors params = model_->SharedParameters();
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, params));
    std::vector<torch::Tensor> anchor;
    for (const auto& [name, p] : params) anchor.push_back(p.detach().clone());
    fl::LocalModel::Hooks hooks;
    double task_loss = 0;
    hooks.on_task_loss = [&](double loss) { task_loss = loss; };
    hooks.extra_loss = [&](const nn::ModelOutput&) {
      torch::Tensor prox = torch::zeros({}, params.front().second.options());
      for (size_t i = 0; i < params.size(); ++i) {
        const torch::Tensor w = p.proximal_gradient() ? params[i].second : params[i].second.detach();
        const torch::Tensor delta = w - anchor[i];
        prox = prox + (p.proximal() == FedProxParams::SQUARED ? 0.5 * delta.pow(2).sum()
                                                                : delta.norm() / static_cast<double>(delta.numel()));
      }
      if (p.adaptive_mu()) {  // the code adapts first, then weights this step's term
        const double value = prox.item<double>();
        if (task_loss > 5 * mu_ * value && mu_ <= 1) {
          mu_ *= 10;
        } else if (task_loss < mu_ * value / 2 && mu_ >= 1e-4) {
          mu_ /= 10;
        }
      }
      return mu_ * prox;
    };
    FGL_ASSIGN_OR_RETURN(fl::proto::Message reply, TrainAndReply(round, kType, hooks));
    fl::AddWeight(p.weighting(), &reply);
    return reply;
  }

  // The adapted weight travels with the model state.
  absl::StatusOr<fl::proto::Message> SaveState() const override {
    fl::proto::Message m = model_->SaveState();
    (*m.mutable_scalars())["fedprox.mu"] = mu_;
    return m;
  }
  absl::Status RestoreState(const fl::proto::Message& state) override {
    auto it = state.scalars().find("fedprox.mu");
    if (it == state.scalars().end() || !(std::isfinite(it->second) && it->second >= -1)) {
      return absl::InvalidArgumentError("fedprox state: no valid fedprox.mu");
    }
    mu_ = it->second;
    return model_->RestoreState(state);
  }

 private:
  friend class fl::ModelClient;  // MakeWithParams: the params unpacked once, at creation
  FedProxClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config,
                std::unique_ptr<fl::LocalModel> model, FedProxParams params)
      : ModelClient(std::move(data), config, std::move(model)), params_(std::move(params)) {}

  const FedProxParams params_;
  double mu_ = -1;  // the proximal weight in use (-1: not yet set from the parameters)
};

}  // namespace

FGL_REGISTER_METHOD("fedprox", fl::ModelClient::MakeWithParams<FedProxClient, FedProxParams>,
                    [](const fl::MethodConfig& config) -> absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> {
                      FGL_ASSIGN_OR_RETURN(const FedProxParams p, fl::MethodParams<FedProxParams>(config));
                      return fl::MakeModelAverageServer(config, kType, {fl::WeightScalar(p.weighting())});
                    },
                    {fl::TypedParams<FedProxParams>()});

}  // namespace fgl::methods::fedprox
