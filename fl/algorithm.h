// A federated method is a pair: a client-side and a server-side algorithm that talk only through
// serialised fl.proto.Messages. Methods register both under one name (fl/registry.h).
#ifndef FGL_FL_ALGORITHM_H_
#define FGL_FL_ALGORITHM_H_

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fl/method_params.h"
#include "fl/proto/federation.pb.h"
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

// The shared configuration every method gets: the run's resolved spec, and what the spec alone
// cannot say (the data's sizes, this party's model, the device, the seeds). Read the spec's own
// fields from `spec` (config.spec.lr(), config.spec.local_epochs(), config.spec.clients(), ...),
// the clients sampled per round with fl::ClientsPerRound(config.spec) and the typed params with
// MethodParams<P>(config).
struct MethodConfig {
  // The run's spec as fl::ResolveFederationSpec fills it (every default present), with data_dir
  // resolved (graph::ResolveDataDir). `dataset`, `data_dir`, `split` and `partition_seed` are
  // only for methods whose server loads or splits the whole graph itself (FedTAD-r-eq, nFedGNN).
  proto::FederationSpec spec;
  // This party's model: spec.model()'s entry k mod n for client k, the first for the server
  // (clients may differ: FedGKC, LG-FedAvg).
  std::string model_spec;
  int64_t num_features = 0;  // what the data decides
  int64_t num_classes = 0;
  // The models' initialisation seed, graph::Rng::Derive(run_seed, "init"): the same on every
  // party, so that clients and server start from one model.
  uint64_t seed = 0;
  // The run's training seed itself: a method deployed both batched and per client (nFedGNN)
  // derives the same streams from it in both.
  uint64_t run_seed = 0;
  torch::Device device = torch::kCPU;
};

// The run's parameters of type P (P's declared defaults when the spec sets none).
template <typename P>
absl::StatusOr<P> MethodParams(const MethodConfig& config) {
  return UnpackParams<P>(config.spec.method_params());
}

// Optional capabilities. A method that has one implements its interface and returns `this` from
// the matching accessor of ClientAlgorithm/ServerAlgorithm; null means it lacks it. Accessors
// rather than dynamic_cast, so that a wrapper (fl/forwarding_algorithm.h) reports exactly what
// its base has. The destructors are protected: an algorithm is never deleted through one.

// Sends one message before round 1 (e.g. FedTAD's one-off reliability upload).
class PreparingClient {
 public:
  virtual absl::StatusOr<proto::Message> Prepare() = 0;

 protected:
  ~PreparingClient() = default;
};

// Scores another graph's nodes (ClientData::global_test) with the model Predict scores.
class GraphScoringClient {
 public:
  // Logits [graph's nodes, num_classes]; `global` as in ClientAlgorithm::Predict.
  virtual absl::StatusOr<torch::Tensor> PredictGraph(const ClientData& graph, const proto::Message* global) = 0;

 protected:
  ~GraphScoringClient() = default;
};

// Reports about itself after its last Train, for the run record only: not part of the method's
// messages, not counted as traffic (FedEgo: λ_i and the weight divergence).
class ReportingClient {
 public:
  virtual std::map<std::string, double> Reports() const = 0;

 protected:
  ~ReportingClient() = default;
};

class ClientAlgorithm {
 public:
  virtual ~ClientAlgorithm() = default;
  // One round of local work: read the server's message, train, and reply.
  virtual absl::StatusOr<proto::Message> Train(const proto::Message& from_server,
                                               const RoundInfo& round) = 0;
  // Logits [num_nodes, num_classes] of the model this method scores on this client. `global` is
  // the server's latest broadcast (for methods scored on the global model) or nullptr.
  virtual absl::StatusOr<torch::Tensor> Predict(const proto::Message* global) = 0;
  // Everything the client keeps between rounds (model, optimiser), for checkpoints; restored
  // into a freshly created client it continues exactly as the original.
  virtual absl::StatusOr<proto::Message> SaveState() const = 0;
  virtual absl::Status RestoreState(const proto::Message& state) = 0;

  // Capabilities (see above). Without preparing() the client sends nothing before round 1.
  virtual PreparingClient* preparing() { return nullptr; }
  virtual GraphScoringClient* graph_scoring() { return nullptr; }
  virtual const ReportingClient* reporting() const { return nullptr; }
};

// A model the server produced in the last FinishRound() and the clients whose replies formed it.
// `parameters` are the server's live tensors: a post-processor may refine them in place.
struct ServerAggregate {
  NamedTensors parameters;
  std::vector<int> clients;  // ascending client ids
};

// Takes the clients' Prepare() messages before round 1.
class PreparedServer {
 public:
  // One client's message, in client-id order.
  virtual absl::Status AcceptPreparation(const proto::Message& message) = 0;
  // Once, after every preparation message arrived and before round 1 (e.g. a generator's
  // training on the uploads).
  virtual absl::Status FinishPreparation() = 0;

 protected:
  ~PreparedServer() = default;
};

// Sends each client its own message (FedGTA, Fed-PUB, GCFL+): the runtime calls BroadcastTo for
// every sampled client instead of Broadcast once.
class PersonalisedServer {
 public:
  virtual absl::StatusOr<proto::Message> BroadcastTo(int client, const RoundInfo& round) = 0;

 protected:
  ~PersonalisedServer() = default;
};

// More than one exchange per round (GraphFL: its meta step, then the fine-tuning). Each is
// Broadcast, the clients' Train and Accumulate, then FinishRound, with RoundInfo::exchange set;
// the sampled clients are the same in all, and the round is scored after the last.
class MultiExchangeServer {
 public:
  virtual int ExchangesPerRound() const = 0;

 protected:
  ~MultiExchangeServer() = default;
};

// Exposes the models the last FinishRound() produced, so that a server-side plug-in such as
// FedTAD's distillation can run after it.
class AggregateSource {
 public:
  // One global model, or one per cluster/client for personalised methods.
  virtual std::vector<ServerAggregate> Aggregates() = 0;

 protected:
  ~AggregateSource() = default;
};

class ServerAlgorithm {
 public:
  virtual ~ServerAlgorithm() = default;
  // The message every sampled client receives at the start of `round`; for evaluation on the
  // global model, the model it carries.
  virtual absl::StatusOr<proto::Message> Broadcast(const RoundInfo& round) = 0;
  // One client's reply; checks names and shapes before using anything.
  virtual absl::Status Accumulate(const proto::Message& reply) = 0;
  // Combines this round's replies (no reply at all keeps the previous state).
  virtual absl::Status FinishRound(const RoundInfo& round) = 0;
  // The server's state between rounds, for checkpoints (see ClientAlgorithm::SaveState).
  virtual absl::StatusOr<proto::Message> SaveState() const = 0;
  virtual absl::Status RestoreState(const proto::Message& state) = 0;

  // Capabilities (see above). Without them a preparation message is refused, one Broadcast
  // serves every client, a round is one exchange and no aggregates are exposed.
  virtual PreparedServer* prepared() { return nullptr; }
  virtual PersonalisedServer* personalised() { return nullptr; }
  virtual const MultiExchangeServer* multi_exchange() const { return nullptr; }
  virtual AggregateSource* aggregate_source() { return nullptr; }
};

// Exchanges per round of `server`: 1 without MultiExchangeServer.
inline int ExchangesOf(const ServerAlgorithm& server) {
  const MultiExchangeServer* multi = server.multi_exchange();
  return multi != nullptr ? multi->ExchangesPerRound() : 1;
}

// The aggregates of `server`'s last round: none without AggregateSource.
inline std::vector<ServerAggregate> AggregatesOf(ServerAlgorithm& server) {
  AggregateSource* source = server.aggregate_source();
  return source != nullptr ? source->Aggregates() : std::vector<ServerAggregate>{};
}

// A client's preparation message to `server`: FailedPrecondition without PreparedServer.
inline absl::Status AcceptPreparationOf(ServerAlgorithm& server, const proto::Message& message) {
  PreparedServer* const prepared = server.prepared();
  return prepared != nullptr ? prepared->AcceptPreparation(message)
                             : absl::FailedPreconditionError("this method's server expects no preparation message");
}

// `server`'s FinishPreparation: nothing to do without PreparedServer.
inline absl::Status FinishPreparationOf(ServerAlgorithm& server) {
  PreparedServer* const prepared = server.prepared();
  return prepared != nullptr ? prepared->FinishPreparation() : absl::OkStatus();
}

// `client`'s reports: none without ReportingClient.
inline std::map<std::string, double> ReportsOf(const ClientAlgorithm& client) {
  const ReportingClient* reporting = client.reporting();
  return reporting != nullptr ? reporting->Reports() : std::map<std::string, double>{};
}

}  // namespace fgl::fl

#endif  // FGL_FL_ALGORITHM_H_
