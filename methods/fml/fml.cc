// FML (Shen et al., "Federated Mutual Learning", FITEE 2023) for FGL (note §A.4). Each client
// keeps a private model of its own architecture and a shared meme model (fl::MutualClient).
// Each round it:
//   1. loads the server's meme model,
//   2. trains both at once by deep mutual learning on its training nodes:
//        private: α·CE + (1 − α)·KL(p_meme ‖ p_private),  meme: β·CE + (1 − β)·KL(p_private ‖ p_meme),
//   3. replies with the meme model only.
// The server averages the meme models (FedAvg, node counts). Each client's private model is scored.
// FmlParams 4-8 select the authors' code where it differs (AuthorsClient below; fml.proto).
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "fl/model_average_server.h"
#include "fl/mutual_client.h"
#include "fl/proto/client_weighting.pb.h"
#include "fl/proto/message.pb.h"
#include "fl/registry.h"
#include "methods/fml/fml.pb.h"
#include "nn/losses/losses.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fml {
namespace {

constexpr char kType[] = "fml.meme";

absl::StatusOr<std::unique_ptr<fl::MutualClient>> MakeMutualClient(std::shared_ptr<const fl::ClientData> data,
                                                                    const fl::MethodConfig& config,
                                                                    const FmlParams& params) {
  const double a = params.private_ce_weight(), b = params.meme_ce_weight();
  auto losses = [a, b](const fl::ClientData& d, const nn::ModelOutput& own, const nn::ModelOutput& meme) {
    const torch::Tensor& mask = d.split.train;
    torch::Tensor own_loss = a * nn::MaskedCrossEntropy(own.logits, d.labels, mask) +
                             (1 - a) * nn::KlDivergence(own.logits, meme.logits.detach(), 1.0, mask);
    torch::Tensor meme_loss = b * nn::MaskedCrossEntropy(meme.logits, d.labels, mask) +
                              (1 - b) * nn::KlDivergence(meme.logits, own.logits.detach(), 1.0, mask);
    return std::make_pair(own_loss, meme_loss);
  };
  return fl::MutualClient::Make(std::move(data), config, params.meme_model(), losses, kType);
}

// The learning rate of round `round` (1-based) under FmlParams' step decay: the authors'
// LR_scheduler run at the start of every 0-based round up to this one, multiplying in double as
// Python does [utils.py:67-79].
double ScheduledLr(const FmlParams& p, double lr, int round) {
  if (p.lr_decay_every() <= 0) return lr;
  for (int r = 1; r < round; ++r) {
    if (r % p.lr_decay_every() == 0 && (p.lr_decay_stop() == 0 || r < p.lr_decay_stop())) lr *= p.lr_decay_factor();
  }
  return lr;
}

// The meme's optimiser state in fl::MutualClient::SaveState: fl::LocalModel::AddState's "sgd." /
// "adam." tensors and scalars under the shared model's "shared." prefix.
bool IsMemeOptimizerState(const std::string& name) {
  return absl::StartsWith(name, "shared.sgd.") || absl::StartsWith(name, "shared.adam.");
}

// FmlParams 4-8 on the client, around fl::MutualClient, which has no per-round hook for them:
//   * fresh_meme_optimizer: before each round the meme's optimiser state is dropped (the state is
//     saved and restored without it), as the authors' fork builds a new optimiser [Node.py:47-49];
//   * lr_decay_*: when the round's rate differs from the one the client was built with, the client
//     is rebuilt at the new rate and its whole state (models, both optimisers' buffers) carried
//     over, as the authors set param_groups[0]['lr'] in place [utils.py:73-78] (the rebuild draws a
//     fresh initialisation from LibTorch's global generator, as any client construction does, and
//     overwrites it at once);
//   * weighting UNIFORM: the reply carries the weight the server's plain mean reads.
class AuthorsClient final : public fl::ClientAlgorithm {
 public:
  AuthorsClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config, FmlParams params,
                std::unique_ptr<fl::MutualClient> inner)
      : data_(std::move(data)), config_(config), params_(std::move(params)), inner_(std::move(inner)), lr_(config.spec.lr()) {}

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global, const fl::RoundInfo& round) override {
    const double lr = ScheduledLr(params_, config_.spec.lr(), round.round);
    if (lr != lr_) {
      fl::MethodConfig config = config_;
      config.spec.set_lr(lr);
      FGL_ASSIGN_OR_RETURN(const fl::proto::Message state, inner_->SaveState());
      FGL_ASSIGN_OR_RETURN(std::unique_ptr<fl::MutualClient> rebuilt, MakeMutualClient(data_, config, params_));
      FGL_RETURN_IF_ERROR(rebuilt->RestoreState(state));
      inner_ = std::move(rebuilt);
      lr_ = lr;
    }
    if (params_.fresh_meme_optimizer()) {
      FGL_ASSIGN_OR_RETURN(const fl::proto::Message state, inner_->SaveState());
      fl::proto::Message kept;
      *kept.mutable_header() = state.header();
      for (const auto& [name, value] : state.scalars()) {
        if (!IsMemeOptimizerState(name)) (*kept.mutable_scalars())[name] = value;
      }
      for (const fl::proto::Tensor& t : state.tensors()) {
        if (!IsMemeOptimizerState(t.name())) *kept.add_tensors() = t;
      }
      FGL_RETURN_IF_ERROR(inner_->RestoreState(kept));
    }
    FGL_ASSIGN_OR_RETURN(fl::proto::Message reply, inner_->Train(global, round));
    fl::AddWeight(params_.weighting(), &reply);
    return reply;
  }
  absl::StatusOr<torch::Tensor> Predict(const fl::proto::Message* global) override { return inner_->Predict(global); }
  // The rate is a function of the round, so it is not part of the state.
  absl::StatusOr<fl::proto::Message> SaveState() const override { return inner_->SaveState(); }
  absl::Status RestoreState(const fl::proto::Message& state) override { return inner_->RestoreState(state); }
  // The inner client's capabilities (valid until the next Train, which may rebuild it).
  fl::PreparingClient* preparing() override { return inner_->preparing(); }
  fl::GraphScoringClient* graph_scoring() override { return inner_->graph_scoring(); }
  const fl::ReportingClient* reporting() const override { return inner_->reporting(); }

 private:
  std::shared_ptr<const fl::ClientData> data_;
  fl::MethodConfig config_;
  FmlParams params_;
  std::unique_ptr<fl::MutualClient> inner_;
  double lr_;  // the rate inner_ was built with
};

absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> MakeClient(std::shared_ptr<const fl::ClientData> data,
                                                                 const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FmlParams params, fl::MethodParams<FmlParams>(config));
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<fl::MutualClient> client, MakeMutualClient(data, config, params));
  if (params.weighting() == fl::proto::NODE_COUNT && !params.fresh_meme_optimizer() && params.lr_decay_every() == 0) {
    return std::unique_ptr<fl::ClientAlgorithm>(std::move(client));
  }
  return std::unique_ptr<fl::ClientAlgorithm>(
      new AuthorsClient(std::move(data), config, std::move(params), std::move(client)));
}

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(FmlParams params, fl::MethodParams<FmlParams>(config));
  return fl::MakeModelAverageServer(fl::SharedModelConfig(config, params.meme_model()), kType,
                                    {fl::WeightScalar(params.weighting())});
}

// The ranges are declared on FmlParams' fields.
absl::Status Validate(const FmlParams& p) {
  if (p.meme_model().empty()) return absl::InvalidArgumentError("FmlParams.meme_model is empty");
  return absl::OkStatus();
}

}  // namespace

// Version 2: each client's private model initialised from its own seed (version 1: one seed for all).
FGL_REGISTER_METHOD("fml", MakeClient, MakeServer, {fl::TypedParams<FmlParams>(&Validate)}, 2);

}  // namespace fgl::methods::fml
