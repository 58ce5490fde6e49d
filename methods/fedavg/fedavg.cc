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

class FedAvgClient final : public fl::ModelClient {
 public:
  using ModelClient::ModelClient;

  absl::StatusOr<fl::proto::Message> Train(const fl::proto::Message& global,
                                           const fl::RoundInfo& round) override {
    FGL_RETURN_IF_ERROR(fl::LoadTensors(global, model_->SharedParameters()));
    FGL_RETURN_IF_ERROR(model_->Train(config_.local_epochs, round.seed));
    fl::proto::Message reply =
        fl::ModelReply(model_->SharedParameters(), data_->data.num_nodes(), data_->id, round, kType);
    fl::AddTrainLoss(model_->last_loss(), &reply);
    return reply;
  }
};

}  // namespace

FGL_REGISTER_METHOD("fedavg", fl::ModelClient::Make<FedAvgClient>,
                    [](const fl::MethodConfig& config) { return fl::MakeModelAverageServer(config, kType); });

}  // namespace fgl::methods::fedavg
