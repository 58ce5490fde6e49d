// What every side of a federation shares, so that a run across processes computes exactly the
// simulator's numbers: one client's data, the method configs, client sampling, per-round seeds,
// evaluation counts, round records.
#ifndef FGL_FL_FEDERATION_SETUP_H_
#define FGL_FL_FEDERATION_SETUP_H_

#include <limits>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "fl/algorithm.h"
#include "fl/client_channel.h"
#include "fl/federation.h"
#include "fl/federation_spec.h"
#include "fl/proto/checkpoint.pb.h"
#include "fl/proto/federation.pb.h"
#include "graph/dataset.h"
#include "graph/partition/partitioner.h"
#include "graph/split.h"

namespace fgl::fl {

// `o` with its spec resolved (fl::ResolveFederationSpec: defaults filled, every value checked)
// and its method and typed parameters checked. Every entry point of a run starts with it.
absl::StatusOr<FederationOptions> ResolveOptions(FederationOptions o);

// Builds a client's private data on `device` from its subgraph and split.
absl::StatusOr<std::shared_ptr<ClientData>> MakeClientData(int id, graph::Dataset data,
                                                           graph::NodeSplit split,
                                                           torch::Device device);

// The split of client `k`'s subgraph: the partition's own masks when it has them (a paper's
// saved partition), else o.spec.split() fixed by the partition seed, as the papers reuse one.
absl::StatusOr<graph::NodeSplit> ClientSplit(const FederationOptions& o, const graph::Partition& partition,
                                             const graph::Dataset& sub, int k);

// The run's dataset and its partition into clients (cached under o.cache_dir). Node-level
// partitions are refused: they need a node-level method.
struct PartitionedDataset {
  graph::Dataset data;
  graph::Partition partition;
};
absl::StatusOr<PartitionedDataset> LoadPartitionedDataset(const FederationOptions& o);

// The shared global test graph every client also scores (eval.global_test): by default the
// subgraph induced by the partition's server nodes (FedEgo's 30% global test), all of them test
// nodes, null when there are none; "whole_graph": the original graph with every edge, its test
// nodes the union of the clients' test nodes.
absl::StatusOr<std::shared_ptr<const ClientData>> MakeGlobalTestData(const FederationOptions& o,
                                                                     const PartitionedDataset& loaded,
                                                                     torch::Device device);

// One client's share of a federation: loads the dataset, partitions it (cached) and keeps only
// client `client`'s subgraph and split. What a client process holds.
struct ClientShard {
  std::shared_ptr<ClientData> data;
  int num_clients = 0;
  int64_t num_features = 0;
  int64_t num_classes = 0;
};
absl::StatusOr<ClientShard> LoadClientShard(const FederationOptions& o, int client);
// Several clients' shards from one load of the dataset (a process hosting several clients).
absl::StatusOr<std::vector<ClientShard>> LoadClientShards(const FederationOptions& o,
                                                          const std::vector<int>& clients);

// The server's method config (model = the first spec), and client k's (spec k mod n).
absl::StatusOr<MethodConfig> ServerMethodConfig(const FederationOptions& o, int64_t num_features,
                                                int64_t num_classes);
MethodConfig ClientMethodConfig(const FederationOptions& o, const MethodConfig& server, int client);

// Number of clients sampled per round, and which ones in `round` (ascending ids).
int ClientsPerRound(const FederationOptions& o, int num_clients);
std::vector<int> SampleClients(const FederationOptions& o, int round, int num_clients);

// The round's seed, and the seed client `client` trains with in that round.
RoundInfo ServerRound(const FederationOptions& o, int round, int exchange = 0);
RoundInfo ClientRound(const RoundInfo& server_round, int client);

// Scores the protocol's model on one client (`global`: the server's model, or nullptr for the
// client's own). Dropout at evaluation is seeded per client and round, independent of threads.
absl::StatusOr<EvalCounts> EvaluateClient(ClientAlgorithm& algorithm, const ClientData& client,
                                          const proto::Message* global, const RoundInfo& round);

// Percent accuracy of the protocol over clients (node-weighted or not); `sizes[k]` = nodes of k.
struct RoundAccuracy {
  double val = 0, test = 0;
  double global = std::numeric_limits<double>::quiet_NaN();  // NaN: no client scored a global test
};
RoundAccuracy WeightedAccuracy(const EvalProtocol& eval, const std::vector<EvalCounts>& counts,
                               const std::vector<int64_t>& sizes);

// Hands one client's reply (or why there is none) to the server and records the outcome in the
// round: the client's train loss and participation, or a warning and one more left-out client.
// Returns why the reply was not taken.
absl::Status AccumulateReply(ServerAlgorithm& server, const absl::StatusOr<proto::Message>& reply,
                             ClientRecord& client, RoundRecord& round);

// Picks the reported round per the protocol (ties go to the earliest) and fills the result's
// reported_round, test_acc and val_acc. `result.rounds` must not be empty.
void SelectReportedRound(const EvalProtocol& eval, FederationResult& result);

// The protocol card every result carries: evaluation, sharing, split and partition.
absl::StatusOr<std::string> ProtocolCard(const FederationOptions& o);

// The clients' reports a RoundRecord proto carries, into `r.clients` (those it has).
void ApplyClientReports(const proto::RoundRecord& p, RoundRecord& r);
// Round records as protos: with the per-client detail in rounds.jsonl and a checkpoint's pending
// round, without it for a checkpoint's finished rounds (the clients' reports are always kept).
RoundRecord RoundRecordFromProto(const proto::RoundRecord& p);
proto::RoundRecord RoundRecordToProto(const RoundRecord& r, bool with_clients = false);

// A run's result as the proto written to result.json.
proto::RunResult RunResultToProto(const FederationOptions& o, const FederationResult& r);

// Runs fn() (returning Status or StatusOr); a C++ exception it throws (LibTorch's c10::Error,
// std::bad_alloc, ...) becomes an INTERNAL status naming `stage` instead of ending the process.
// `stage` is read only when an exception is caught: fn may update it as it goes.
template <typename F>
auto CatchExceptions(const std::string& stage, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat(stage, ": ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(stage, ": ", e.what()));
  }
}

}  // namespace fgl::fl

#endif  // FGL_FL_FEDERATION_SETUP_H_
