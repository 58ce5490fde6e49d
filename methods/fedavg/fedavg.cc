// FedAvg (McMahan et al. 2017). Each round, every sampled client:
//   1. loads the global weights w from the server's message,
//   2. runs E local epochs of Adam on its training nodes,
//   3. replies with its weights and its node count n_k.
// The server sets w = sum_k n_k w_k / sum_k n_k (fl::ModelAverageServer), or the plain mean
// with weighting UNIFORM (FedEgo's baseline code). The global model is scored on every client.
#include "fl/local_model.h"
#include "fl/model_average_server.h"
#include "fl/registry.h"
#include "methods/fedavg/fedavg.pb.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::methods::fedavg {
namespace {

constexpr char kType[] = "fedavg.weights";

class FedAvgClient final : public fl::ModelClient {
 public:
  using ModelClient::ModelClient;

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global,
                                           const fl::RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, model_->SharedParameters()));
    FGL_ASSIGN_OR_RETURN(fl::proto::Message reply, TrainAndReply(round, kType));
    FGL_ASSIGN_OR_RETURN(const FedAvgParams p, fl::MethodParams<FedAvgParams>(config_));
    fl::AddWeight(p.weighting(), &reply);
    return reply;
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> MakeServer(const fl::MethodConfig& config) {
  FGL_ASSIGN_OR_RETURN(const FedAvgParams p, fl::MethodParams<FedAvgParams>(config));
  return fl::MakeModelAverageServer(config, kType, {fl::WeightScalar(p.weighting())});
}

absl::Status Validate(const FedAvgParams&) { return absl::OkStatus(); }

FGL_REGISTER_METHOD("fedavg", fl::ModelClient::Make<FedAvgClient>, MakeServer, {fl::TypedParams(&Validate)});

}  // namespace fgl::methods::fedavg
