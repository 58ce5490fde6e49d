// The run's dataset split into the clients' shards: each client's subgraph, split and tensors, the
// shared global test graph, and a client process's own shard.
#ifndef FGL_FL_FEDERATED_DATA_H_
#define FGL_FL_FEDERATED_DATA_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fl/algorithm.h"
#include "fl/federation.h"
#include "fl/run_setup.h"
#include "graph/dataset.h"
#include "graph/partition/partitioner.h"
#include "graph/split.h"

namespace fgl::fl {

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
// nodes, null when there are none; WHOLE_GRAPH: the original graph with every edge, its test
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
absl::StatusOr<ClientShard> LoadClientShard(const ResolvedOptions& o, int client);
// Several clients' shards from one load of the dataset (a process hosting several clients).
absl::StatusOr<std::vector<ClientShard>> LoadClientShards(const ResolvedOptions& o,
                                                          const std::vector<int>& clients);

}  // namespace fgl::fl

#endif  // FGL_FL_FEDERATED_DATA_H_
