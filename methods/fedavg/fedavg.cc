// FedAvg (McMahan et al. 2017). Each round, every sampled client:
//   1. loads the global weights w from the server's message,
//   2. runs E local epochs of Adam on its training nodes,
//   3. replies with its weights and its node count n_k.
// The server sets w = sum_k n_k w_k / sum_k n_k (fl::ModelAverageServer), or the plain mean
// with weighting UNIFORM (FedEgo's baseline code). The global model is scored on every client.
// mean_of_client_initialisations starts from the mean of N independent initialisations (FedEgo's
// baseline code).
#include "absl/strings/str_cat.h"
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "graph/random.h"
#include "methods/fedavg/fedavg.pb.h"
#include "nn/models/gnn_model.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedavg {
namespace {

constexpr char kType[] = "fedavg.weights";

class FedAvgClient final : public fl::ModelClient {
 public:
  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global,
                                           const fl::RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, model_->SharedParameters()));
    FGL_ASSIGN_OR_RETURN(fl::proto::Message reply, TrainAndReply(round, kType));
    fl::AddWeight(params_.weighting(), &reply);
    return reply;
  }

 private:
  friend class fl::ModelClient;  // MakeWithParams: the params unpacked once, at creation
  FedAvgClient(std::shared_ptr<const fl::ClientData> data, const fl::MethodConfig& config,
               std::unique_ptr<fl::LocalModel> model, FedAvgParams params)
      : ModelClient(std::move(data), config, std::move(model)), params_(std::move(params)) {}

  const FedAvgParams params_;
};

}  // namespace

// The mean of `config.spec.clients()` models initialised from seeds of their own.
absl::Status AverageOfInitialisations(const fl::MethodConfig& config, const fl::NamedTensors& global) {
  if (config.spec.clients() < 1) return absl::InvalidArgumentError("fedavg.mean_of_client_initialisations needs num_clients");
  torch::NoGradGuard no_grad;
  for (const auto& [name, t] : global) t.zero_();
  for (int k = 0; k < config.spec.clients(); ++k) {
    torch::manual_seed(graph::Rng::Derive(config.seed, absl::StrCat("fedavg/client_init/", k)));
    FGL_ASSIGN_OR_RETURN(std::shared_ptr<nn::GnnModel> model,
                         nn::MakeModel(config.model_spec, config.num_features, config.num_classes));
    const auto params = model->named_parameters(true);
    for (const auto& [name, t] : global) {
      const torch::Tensor* own = params.find(name);
      if (own == nullptr) return absl::InternalError(absl::StrCat("fedavg: no parameter '", name, "'"));
      t.add_(*own);
    }
  }
  for (const auto& [name, t] : global) t.div_(static_cast<double>(config.spec.clients()));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(const FedAvgParams p, fl::MethodParams<FedAvgParams>(config));
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<fl::ModelAverageServer> server,
                       fl::ModelAverageServer::Create(config, kType, {fl::WeightScalar(p.weighting())}));
  if (p.mean_of_client_initialisations()) FGL_RETURN_IF_ERROR(AverageOfInitialisations(config, server->GlobalParameters()));
  return std::unique_ptr<fl::ServerAlgorithm>(std::move(server));
}

FGL_REGISTER_METHOD("fedavg", fl::ModelClient::MakeWithParams<FedAvgClient, FedAvgParams>, MakeServer, {fl::TypedParams<FedAvgParams>()});

}  // namespace fgl::methods::fedavg
