// A federated method is a pair: a client-side and a server-side algorithm that talk only through
// serialised fl.proto.Messages. Methods register both under one name (fl/registry.h).
#ifndef FGL_FL_ALGORITHM_H_
#define FGL_FL_ALGORITHM_H_

#include <torch/torch.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fl/method_params.h"
#include "fl/proto/message.pb.h"
#include "fl/tensor_codec.h"
#include "graph/dataset.h"
#include "nn/graph_view.h"

namespace fgl::fl {

struct RoundInfo {
  int round = 0;      // 1-based
  uint64_t seed = 0;  // this round's seed, derived from the run's master seed
  int exchange = 0;   // 0-based, when the method exchanges more than once per round
};

// What one client holds privately: its subgraph, features, labels and split. Never sent.
struct ClientData {
  int id = 0;
  graph::Dataset data;
  graph::NodeSplit split;
  std::shared_ptr<nn::GraphView> view;
  std::shared_ptr<nn::NodeFeatures> features;
  torch::Tensor labels;  // on the run's device
  // Each local node's id in the whole dataset, in local order (the partition's list). Only a
  // method that exchanges per-node data by id reads it (FedGCN's feature averaging, which the
  // FedEgo paper names as its privacy cost).
  std::vector<int64_t> node_ids;
  // A test graph every client also scores (FedEgo's global test: the partition's server nodes,
  // all of them test nodes), shared read-only; null when the partition has none.
  std::shared_ptr<const ClientData> global_test;
};

// The shared configuration every method gets: the model, local training and its own params.
struct MethodConfig {
  std::string model_spec = "gcn";  // this client's model (clients may differ: FedGKC, LG-FedAvg)
  // The parameter group a model-averaging method exchanges: "" = the whole model, "head" or
  // "body" (nn::GnnModel groups). Clients with different architectures can share a same-shaped
  // head.
  std::string shared_group;
  int64_t num_features = 0;
  int64_t num_classes = 0;
  int local_epochs = 3;
  int rounds = 0;  // of the run (a method with stages checks that it has enough)
  int num_clients = 0;  // of the federation (a ring topology needs it)
  // Clients sampled per round (ClientsPerRound): equal to num_clients, every client trains in
  // every round, so state the next broadcast overwrites need not be kept (FedSage+'s NeighGen).
  int clients_per_round = 0;
  double lr = 0.01;
  double weight_decay = 5e-4;
  // The clients' optimiser (FederationSpec.optimizer): Adam, or SGD with `momentum`.
  enum class Optimizer { kAdam, kSgd };
  Optimizer optimizer = Optimizer::kAdam;
  double momentum = 0;
  bool dropout_at_eval = false;  // FedTAD's official code evaluates with dropout on
  // The typed parameters of the method and its plug-ins (fl/method_params.h): read them with
  // MethodParams<P>(config).
  std::vector<google::protobuf::Any> params;
  uint64_t seed = 0;
  // The run's training seed itself: a method deployed both batched and per client (nFedGNN)
  // derives the same streams from it in both.
  uint64_t run_seed = 0;
  torch::Device device = torch::kCPU;
  // The run's dataset as graph::LoadDataset takes it, for oracle ablations whose server loads
  // the whole graph itself (FedTAD-r-eq); no other method may read it.
  std::string dataset;
  std::string data_dir;  // resolved
  std::string split;     // the run's split rule (nFedGNN's server splits the whole graph itself)
  uint64_t partition_seed = 0;
};

// The run's parameters of type P (P's declared defaults when the spec sets none).
template <typename P>
absl::StatusOr<P> MethodParams(const MethodConfig& config) {
  return UnpackParams<P>(config.params);
}

class ClientAlgorithm {
 public:
  virtual ~ClientAlgorithm() = default;
  // Once, before round 1 (e.g. FedTAD's one-off reliability upload). nullopt: nothing is sent.
  virtual absl::StatusOr<std::optional<proto::Message>> Prepare() { return std::nullopt; }
  // One round of local work: read the server's message, train, and reply.
  virtual absl::StatusOr<proto::Message> Train(const proto::Message& from_server,
                                               const RoundInfo& round) = 0;
  // Logits [num_nodes, num_classes] of the model this method scores on this client. `global` is
  // the server's latest broadcast (for methods scored on the global model) or nullptr.
  virtual absl::StatusOr<torch::Tensor> Predict(const proto::Message* global) = 0;
  // The same model's logits on another graph's nodes (ClientData::global_test).
  virtual absl::StatusOr<torch::Tensor> PredictGraph(const ClientData& graph, const proto::Message* global) {
    return absl::UnimplementedError("this method cannot score a graph other than its own");
  }
  // What the client reports about itself after its last Train, for the run record only: not
  // part of the method's messages, not counted as traffic (FedEgo: λ_i and the weight divergence).
  virtual std::map<std::string, double> Reports() const { return {}; }
  // Everything the client keeps between rounds (model, optimiser), for checkpoints; restored
  // into a freshly created client it continues exactly as the original.
  virtual absl::StatusOr<proto::Message> SaveState() const = 0;
  virtual absl::Status RestoreState(const proto::Message& state) = 0;
};

// A model the server produced in the last FinishRound() and the clients whose replies formed it.
// `parameters` are the server's live tensors: a post-processor may refine them in place.
struct ServerAggregate {
  NamedTensors parameters;
  std::vector<int> clients;  // ascending client ids
};

class ServerAlgorithm {
 public:
  virtual ~ServerAlgorithm() = default;
  // Each client's Prepare() message, before round 1, in client-id order.
  virtual absl::Status AcceptPreparation(const proto::Message& message) {
    return absl::FailedPreconditionError("this method's server expects no preparation message");
  }
  // Once, after every preparation message arrived and before round 1 (e.g. a generator's
  // training on the uploads).
  virtual absl::Status FinishPreparation() { return absl::OkStatus(); }
  // The message every sampled client receives at the start of `round`; for evaluation on the
  // global model, the model it carries.
  virtual absl::StatusOr<proto::Message> Broadcast(const RoundInfo& round) = 0;
  // Personalised methods (FedGTA, Fed-PUB, GCFL+) send each client its own message: then the
  // runtime calls BroadcastTo for every sampled client instead of Broadcast once.
  virtual bool PersonalisedBroadcast() const { return false; }
  virtual absl::StatusOr<proto::Message> BroadcastTo(int client, const RoundInfo& round) {
    return Broadcast(round);
  }
  // Exchanges per round (GraphFL: its meta step, then the fine-tuning). Each is Broadcast,
  // the clients' Train and Accumulate, then FinishRound, with RoundInfo::exchange set; the
  // sampled clients are the same in all, and the round is scored after the last.
  virtual int ExchangesPerRound() const { return 1; }
  // One client's reply; checks names and shapes before using anything.
  virtual absl::Status Accumulate(const proto::Message& reply) = 0;
  // Combines this round's replies (no reply at all keeps the previous state).
  virtual absl::Status FinishRound(const RoundInfo& round) = 0;
  // The server's state between rounds, for checkpoints (see ClientAlgorithm::SaveState).
  virtual absl::StatusOr<proto::Message> SaveState() const = 0;
  virtual absl::Status RestoreState(const proto::Message& state) = 0;
  // The models the last FinishRound() produced: one global model, or one per cluster/client for
  // personalised methods. Empty when the method exposes none (then no server-side plug-in such
  // as FedTAD's distillation can run after it).
  virtual std::vector<ServerAggregate> Aggregates() { return {}; }
};

}  // namespace fgl::fl

#endif  // FGL_FL_ALGORITHM_H_
