// The FedAvg server step as a reusable mechanic: keeps the global model (built from the server's
// model spec), broadcasts its shared parameters (all, or config.spec.shared_group()), and replaces them
// with the node-count-weighted mean of the replies.
#ifndef FGL_FL_MODEL_AVERAGE_SERVER_H_
#define FGL_FL_MODEL_AVERAGE_SERVER_H_

#include <memory>
#include <string>

#include "fl/aggregate/weighted_mean.h"
#include "fl/algorithm.h"
#include "fl/proto/client_weighting.pb.h"
#include "fl/tensor_codec.h"
#include "nn/models/gnn_model.h"

namespace fgl::fl {

// Replies carry the model's tensors and the scalar "num_nodes" (the client's node count, the
// weight). `type` names the messages, e.g. "fedavg.weights".
class ModelAverageServer : public ServerAlgorithm, public AggregateSource {
 public:
  // `weights` names the reply scalars that weight the mean. With several, the new model is the
  // plain mean of the weighted means, one per scalar: Σ_k (1/S) Σ_s (s_k / Σ_j s_j) θ_k (FedGKC's
  // Eq. 11 mixes node counts and knowledge levels so).
  static absl::StatusOr<std::unique_ptr<ModelAverageServer>> Create(
      const MethodConfig& config, const std::string& type, std::vector<std::string> weights = {"num_nodes"});
  absl::StatusOr<proto::Message> Broadcast(const RoundInfo& round) override;
  absl::Status Accumulate(const proto::Message& reply) override;
  absl::Status FinishRound(const RoundInfo& round) override;
  absl::StatusOr<proto::Message> SaveState() const override;
  absl::Status RestoreState(const proto::Message& state) override;
  // The global model and the clients averaged into it in the last round.
  std::vector<ServerAggregate> Aggregates() override;
  AggregateSource* aggregate_source() override { return this; }

  // The shared parameters of the global model.
  NamedTensors GlobalParameters() const;

 protected:
  ModelAverageServer(std::shared_ptr<nn::GnnModel> model, std::string group, std::string type,
                     std::vector<std::string> weights);

 private:
  void ResetMeans();
  std::shared_ptr<nn::GnnModel> model_;
  std::string group_;
  std::string type_;
  std::vector<std::string> weights_;
  std::vector<std::unique_ptr<WeightedMean>> means_;  // one per weights_ entry
  std::vector<int> accumulated_, last_round_clients_;
};

// The FedAvg server plus a second state that travels beside the model: tensors named
// "<prefix><parameter name>", shaped like the shared parameters and starting at zero, broadcast
// with the model and replaced each round by the plain (unweighted) mean of the sampled clients'
// uploads under the same prefix. SCAFFOLD's server control variate, FedDC's mean update.
class ModelAndMeanServer : public ServerAlgorithm, public AggregateSource {
 public:
  static absl::StatusOr<std::unique_ptr<ModelAndMeanServer>> Create(const MethodConfig& config,
                                                                     const std::string& type,
                                                                     const std::string& prefix);
  absl::StatusOr<proto::Message> Broadcast(const RoundInfo& round) override;
  absl::Status Accumulate(const proto::Message& reply) override;
  absl::Status FinishRound(const RoundInfo& round) override;
  absl::StatusOr<proto::Message> SaveState() const override;
  absl::Status RestoreState(const proto::Message& state) override;
  std::vector<ServerAggregate> Aggregates() override { return model_->Aggregates(); }
  AggregateSource* aggregate_source() override { return this; }

 private:
  ModelAndMeanServer(std::unique_ptr<ModelAverageServer> model, std::string prefix, NamedTensors side)
      : model_(std::move(model)), prefix_(std::move(prefix)), side_(std::move(side)) {}
  std::unique_ptr<ModelAverageServer> model_;
  std::string prefix_;
  NamedTensors side_;
  std::unique_ptr<WeightedMean> side_mean_ = std::make_unique<WeightedMean>();
};

// The reply scalar a server weights by under `weighting` ("num_nodes" or "uniform_weight"), and
// what a client adds to its reply for it (nothing for NODE_COUNT: ModelReply carries num_nodes).
std::string WeightScalar(proto::ClientWeighting weighting);
void AddWeight(proto::ClientWeighting weighting, proto::Message* reply);

// Create() as a ServerAlgorithm, for method registrations.
absl::StatusOr<std::unique_ptr<ServerAlgorithm>> MakeModelAverageServer(
    const MethodConfig& config, const std::string& type, std::vector<std::string> weights = {"num_nodes"});

// A server's message carrying `tensors` (a broadcast), sender -1.
proto::Message ServerMessage(const NamedTensors& tensors, const RoundInfo& round, const std::string& type);

// The reply every model-averaging client sends: its parameters plus "num_nodes".
proto::Message ModelReply(const NamedTensors& parameters, int64_t num_nodes, int client_id,
                          const RoundInfo& round, const std::string& type);

// Reports the client's last local loss as the scalar "train_loss" (a metric for the run log).
void AddTrainLoss(double loss, proto::Message* reply);

}  // namespace fgl::fl

#endif  // FGL_FL_MODEL_AVERAGE_SERVER_H_
