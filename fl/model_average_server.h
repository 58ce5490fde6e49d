// The FedAvg server step as a reusable mechanic: keeps the global model (built from the server's
// model spec), broadcasts its shared parameters (all, or config.shared_group), and replaces them
// with the node-count-weighted mean of the replies.
#ifndef FGL_FL_MODEL_AVERAGE_SERVER_H_
#define FGL_FL_MODEL_AVERAGE_SERVER_H_

#include <memory>
#include <string>

#include "fl/aggregate/weighted_mean.h"
#include "fl/algorithm.h"
#include "fl/tensor_codec.h"
#include "nn/models/gnn_model.h"

namespace fgl::fl {

// Replies carry the model's tensors and the scalar "num_nodes" (the client's node count, the
// weight). `type` names the messages, e.g. "fedavg.weights".
class ModelAverageServer : public ServerAlgorithm {
 public:
  static absl::StatusOr<std::unique_ptr<ModelAverageServer>> Create(const MethodConfig& config,
                                                                     const std::string& type);
  absl::StatusOr<proto::Message> Broadcast(const RoundInfo& round) override;
  absl::Status Accumulate(const proto::Message& reply) override;
  absl::Status FinishRound(const RoundInfo& round) override;
  absl::StatusOr<proto::Message> SaveState() const override;
  absl::Status RestoreState(const proto::Message& state) override;

  // The shared parameters of the global model.
  NamedTensors GlobalParameters() const;

 protected:
  ModelAverageServer(std::shared_ptr<nn::GnnModel> model, std::string group, std::string type);

 private:
  std::shared_ptr<nn::GnnModel> model_;
  std::string group_;
  std::string type_;
  std::unique_ptr<WeightedMean> mean_;
};

// Create() as a ServerAlgorithm, for method registrations.
absl::StatusOr<std::unique_ptr<ServerAlgorithm>> MakeModelAverageServer(const MethodConfig& config,
                                                                        const std::string& type);

// The reply every model-averaging client sends: its parameters plus "num_nodes".
proto::Message ModelReply(const NamedTensors& parameters, int64_t num_nodes, int client_id,
                          const RoundInfo& round, const std::string& type);

// Reports the client's last local loss as the scalar "train_loss" (a metric for the run log).
void AddTrainLoss(double loss, proto::Message* reply);

}  // namespace fgl::fl

#endif  // FGL_FL_MODEL_AVERAGE_SERVER_H_
