#include "fl/federated_data.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "fl/phase_profile.h"
#include "fl/registry.h"
#include "glog/logging.h"
#include "graph/datasets.h"
#include "graph/partition/partition_cache.h"
#include "graph/partition/partitioner_registry.h"
#include "fl/run_setup.h"
#include "graph/random.h"
#include "nn/device.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {

absl::StatusOr<std::shared_ptr<ClientData>> MakeClientData(int id, graph::Dataset data,
                                                           graph::NodeSplit split,
                                                           torch::Device device) {
  auto c = std::make_shared<ClientData>();
  c->id = id;
  FGL_ASSIGN_OR_RETURN(nn::GraphView view, nn::GraphView::Create(data.graph, device));
  c->view = std::make_shared<nn::GraphView>(std::move(view));
  c->features = std::make_shared<nn::NodeFeatures>(
      nn::NodeFeatures::WithSparseCopy(data.features.to(device)));
  c->labels = data.labels.to(device);
  c->split = {split.train.to(device), split.val.to(device), split.test.to(device)};
  c->data = std::move(data);
  return c;
}

absl::StatusOr<graph::NodeSplit> ClientSplit(const FederationOptions& o, const graph::Partition& partition,
                                             const graph::Dataset& sub, int k) {
  if (!partition.client_splits.empty()) {
    const bool fits = k < static_cast<int>(partition.client_splits.size()) &&
                      partition.client_splits[k].train.defined() &&
                      partition.client_splits[k].train.size(0) == sub.num_nodes();
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat("partition: client ", k, " has no split of its ",
                                                     sub.num_nodes(), " nodes"));
    }
    return partition.client_splits[k];
  }
  return graph::MakeSplit(o.spec.split(), sub, graph::Rng::Derive(o.spec.partition_seed(), absl::StrCat("split/", k)));
}

absl::StatusOr<PartitionedDataset> LoadPartitionedDataset(const FederationOptions& o) {
  PartitionedDataset out;
  {
    ScopedPhase phase("load dataset");
    FGL_ASSIGN_OR_RETURN(out.data, graph::LoadDataset(o.spec.dataset(), graph::ResolveDataDir(o.spec.data_dir()),
                                                      o.spec.partition_seed()));
  }
  ScopedPhase phase("partition (or read it from the cache)");
  FGL_ASSIGN_OR_RETURN(auto partitioner, graph::MakePartitioner(ResolvedPartitionerSpec(o)));
  const std::string cache = o.cache_dir.empty() ? graph::DefaultPartitionCacheDir() : o.cache_dir;
  FGL_ASSIGN_OR_RETURN(out.partition,
                       graph::CachedPartition(*partitioner, out.data, o.spec.clients(), o.spec.partition_seed(),
                                              cache == "none" ? "" : cache));
  if (out.partition.server_keeps_topology) {
    absl::StatusOr<MethodFactories> method = FindMethod(o.spec.method());
    if (!method.ok() || !method->federation) {
      return absl::UnimplementedError("node-level partitions need a node-level method (nFedGNN)");
    }
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const ClientData>> MakeGlobalTestData(const FederationOptions& o,
                                                                     const PartitionedDataset& loaded,
                                                                     torch::Device device) {
  if (o.spec.eval().global_test() == proto::EvalProtocol::WHOLE_GRAPH) {
    const graph::Partition& partition = loaded.partition;
    if (!partition.server_nodes.empty() || partition.server_keeps_topology) {
      return absl::InvalidArgumentError(
          "eval.global_test WHOLE_GRAPH: the partition already sets a server-side test (server nodes or "
          "node-level topology); use the default");
    }
    const int64_t n = loaded.data.num_nodes();
    // The union of the clients' tests is well defined only when no node belongs to two clients.
    if (absl::Status s = graph::ValidatePartition(partition, n, /*disjoint=*/true); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("eval.global_test WHOLE_GRAPH needs disjoint clients: ", s.message()));
    }
    graph::NodeSplit split{torch::zeros({n}, torch::kBool), torch::zeros({n}, torch::kBool),
                           torch::zeros({n}, torch::kBool)};
    for (int k = 0; k < partition.num_clients(); ++k) {
      FGL_ASSIGN_OR_RETURN(graph::Dataset sub, graph::SubDataset(loaded.data, partition.clients[k]));
      FGL_ASSIGN_OR_RETURN(graph::NodeSplit own, ClientSplit(o, partition, sub, k));
      split.test.index_put_({torch::tensor(partition.clients[k], torch::kInt64)}, own.test);
    }
    FGL_ASSIGN_OR_RETURN(std::shared_ptr<ClientData> data, MakeClientData(-1, loaded.data, std::move(split), device));
    data->node_ids.resize(n);
    std::iota(data->node_ids.begin(), data->node_ids.end(), int64_t{0});
    return std::shared_ptr<const ClientData>(std::move(data));
  }
  const std::vector<int64_t>& nodes = loaded.partition.server_nodes;
  if (nodes.empty() || loaded.partition.server_keeps_topology) return std::shared_ptr<const ClientData>();
  FGL_ASSIGN_OR_RETURN(graph::Dataset sub, graph::SubDataset(loaded.data, nodes));
  const int64_t n = sub.num_nodes();
  graph::NodeSplit split{torch::zeros({n}, torch::kBool), torch::zeros({n}, torch::kBool),
                         torch::ones({n}, torch::kBool)};
  FGL_ASSIGN_OR_RETURN(std::shared_ptr<ClientData> data, MakeClientData(-1, std::move(sub), std::move(split), device));
  data->node_ids = nodes;
  return std::shared_ptr<const ClientData>(std::move(data));
}

absl::StatusOr<ClientShard> LoadClientShard(const ResolvedOptions& o, int client) {
  FGL_ASSIGN_OR_RETURN(std::vector<ClientShard> shards, LoadClientShards(o, {client}));
  return std::move(shards[0]);
}

absl::StatusOr<std::vector<ClientShard>> LoadClientShards(const ResolvedOptions& resolved,
                                                          const std::vector<int>& clients) {
  const FederationOptions& o = *resolved;
  if (o.spec.centralized()) {
    return absl::InvalidArgumentError("a centralized run pools its clients into one: it has none to distribute");
  }
  FGL_ASSIGN_OR_RETURN(torch::Device device, nn::ParseDevice(o.device));
  FGL_ASSIGN_OR_RETURN(PartitionedDataset loaded, LoadPartitionedDataset(o));
  const graph::Dataset& data = loaded.data;
  const graph::Partition& partition = loaded.partition;
  std::vector<ClientShard> shards;
  // Node-level FL: one split of the whole graph (as the batched runner makes it), each user
  // holding its own node's share of it.
  std::optional<graph::NodeSplit> global_split;
  if (partition.server_keeps_topology) {
    FGL_ASSIGN_OR_RETURN(global_split, graph::MakeSplit(o.spec.split(), data, o.spec.partition_seed()));
  }
  FGL_ASSIGN_OR_RETURN(std::shared_ptr<const ClientData> global_test, MakeGlobalTestData(o, loaded, device));
  for (int client : clients) {
    if (client < 0 || client >= partition.num_clients()) {
      return absl::InvalidArgumentError(absl::StrCat("client id ", client, " outside [0, ",
                                                     partition.num_clients(), ")"));
    }
    ClientShard shard;
    shard.num_clients = partition.num_clients();
    shard.num_features = data.num_features();
    shard.num_classes = data.num_classes;
    FGL_ASSIGN_OR_RETURN(graph::Dataset sub, graph::SubDataset(data, partition.clients[client]));
    graph::NodeSplit split;
    if (global_split) {
      const torch::Tensor nodes = torch::tensor(partition.clients[client], torch::kInt64);
      split = {global_split->train.index_select(0, nodes), global_split->val.index_select(0, nodes),
               global_split->test.index_select(0, nodes)};
    } else {
      FGL_ASSIGN_OR_RETURN(split, ClientSplit(o, partition, sub, client));
    }
    FGL_ASSIGN_OR_RETURN(shard.data, MakeClientData(client, std::move(sub), std::move(split), device));
    shard.data->global_test = global_test;
    shard.data->node_ids = partition.clients[client];
    shards.push_back(std::move(shard));
  }
  return shards;  // the rest of the graph goes with `data` (but for a whole-graph test, shared above)
}

}  // namespace fgl::fl
