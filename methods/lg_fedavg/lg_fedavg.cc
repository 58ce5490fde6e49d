// LG-FedAvg (Liang et al., "Think Locally, Act Globally", 2020) for FGL (note §A.4). Every client
// keeps its representation layers (the "body", of any architecture) private and shares one
// classifier: a Linear(embedding → C) "head". Each round, every sampled client:
//   1. loads the global head,
//   2. trains its whole model for E epochs,
//   3. replies with its head and node count.
// The server averages the heads (FedAvg, node counts). Each client's body is scored with the
// averaged head (eval.model PERSONALIZED). LgFedAvgParams select the authors' plain mean and
// fresh optimiser per round (lg_fedavg.proto).
#include <vector>

#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/method_params.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "methods/lg_fedavg/lg_fedavg.pb.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::lg_fedavg {
namespace {

constexpr char kType[] = "lg_fedavg.head";

// The shared part must be a linear classifier that every architecture has in the same shape:
// models with jk=last ("gcn:layers=2,hidden=64,jk=last" is one GCN layer and a Linear head), mlp,
// or sgc with hidden > 0.
absl::Status CheckLinearHead(const fl::MethodConfig& config, const nn::GnnModel& model) {
  if (config.spec.shared_group() != "head") {
    return absl::InvalidArgumentError(
        absl::StrCat("lg_fedavg shares the classifier: shared_group must be \"head\", not \"", config.spec.shared_group(), "\""));
  }
  std::vector<std::string> names;
  for (const auto& [name, t] : model.named_group_parameters("head")) names.push_back(name);
  if (names != std::vector<std::string>{"head.weight", "head.bias"}) {
    return absl::InvalidArgumentError(absl::StrCat("lg_fedavg: model '", config.model_spec,
                                                   "' has no linear head; give gcn/gat/sage/gin jk=last"));
  }
  return absl::OkStatus();
}

class LgFedAvgClient final : public fl::ModelClient {
 public:
  static absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> Make(std::shared_ptr<const fl::ClientData> data,
                                                                   const fl::MethodConfig& config) {
    FGL_ASSIGN_OR_RETURN(LgFedAvgParams params, fl::MethodParams<LgFedAvgParams>(config));
    FGL_ASSIGN_OR_RETURN(auto model, fl::LocalModel::Create(data, config, fl::PrivateInitSeed(config, *data)));
    FGL_RETURN_IF_ERROR(CheckLinearHead(config, model->model()));
    return std::unique_ptr<fl::ClientAlgorithm>(
        new LgFedAvgClient(std::move(data), config, std::move(model), std::move(params)));
  }

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global, const fl::RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, model_->SharedParameters()));
    if (params_.fresh_optimizer()) {
      // A state of the parameters alone: restoring it drops the optimiser's buffers and moments.
      fl::proto::Message parameters;
      fl::AddTensors(model_->Parameters(), &parameters);
      FGL_RETURN_IF_ERROR(model_->RestoreState(parameters));
    }
    FGL_ASSIGN_OR_RETURN(fl::proto::Message reply, TrainAndReply(round, kType));
    fl::AddWeight(params_.weighting(), &reply);
    return reply;
  }

  // Its private body with the server's latest head (`global`; eval.model PERSONALIZED), as the
  // original code and PFLlib test after the averaged head is sent back; the head it last trained
  // when none is given. The model itself is left as trained.
  absl::StatusOr<torch::Tensor> Predict(const fl::proto::Message* global) override {
    if (global == nullptr) return model_->Predict();
    const fl::NamedTensors head = model_->SharedParameters();
    std::vector<torch::Tensor> trained;
    for (const auto& [name, t] : head) trained.push_back(t.detach().clone());
    FGL_RETURN_IF_ERROR(fl::LoadTensors(*global, head));
    torch::Tensor predicted = model_->Predict();
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < head.size(); ++i) head[i].second.copy_(trained[i]);
    return predicted;
  }

 private:
  LgFedAvgClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config,
                 std::unique_ptr<fl::LocalModel> model, LgFedAvgParams params)
      : ModelClient(std::move(data), config, std::move(model)), params_(std::move(params)) {}

  LgFedAvgParams params_;
};

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  if (config.spec.shared_group() != "head") {
    return absl::InvalidArgumentError(
        absl::StrCat("lg_fedavg shares the classifier: shared_group must be \"head\", not \"", config.spec.shared_group(), "\""));
  }
  FGL_ASSIGN_OR_RETURN(const LgFedAvgParams params, fl::MethodParams<LgFedAvgParams>(config));
  return fl::MakeModelAverageServer(config, kType, {fl::WeightScalar(params.weighting())});
}

}  // namespace

// Version 2: each client's body initialised from its own seed (version 1: one seed for all).
// Scoring with a given server message's head (eval.model PERSONALIZED) changed no recorded run:
// every record scored eval.model LOCAL, which still uses the client's own head.
// LgFedAvgParams' defaults change nothing (lg_fedavg.proto).
FGL_REGISTER_METHOD("lg_fedavg", &LgFedAvgClient::Make, MakeServer, {fl::TypedParams<LgFedAvgParams>()}, 2);

}  // namespace fgl::methods::lg_fedavg
