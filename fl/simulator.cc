#include "fl/simulator.h"

#include <chrono>
#include <numeric>
#include <optional>

#include "fl/algorithm.h"
#include "fl/catch_exceptions.h"
#include "fl/federated_data.h"
#include "fl/federation_driver.h"
#include "fl/in_process_channel.h"
#include "fl/phase_profile.h"
#include "fl/registry.h"
#include "fl/run_setup.h"
#include "graph/split.h"
#include "nn/device.h"
#include "nn/threads.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {
namespace {

using Clock = std::chrono::steady_clock;

// The run; `stage` names what it is doing, for an exception's error.
absl::StatusOr<proto::FederationResult> Run(const ResolvedOptions& resolved, const DriverHooks& hooks,
                                            std::string* stage) {
  const FederationOptions& o = *resolved;
  const Clock::time_point start = Clock::now();
  *stage = "setup";
  // Clients train in parallel on `threads` workers (InProcessChannel), each with one intra-op
  // thread, so the two levels never oversubscribe the cores.
  nn::SetComputeThreads(1);
  FGL_ASSIGN_OR_RETURN(MethodFactories batched, FindMethod(o.spec.method()));
  if (batched.federation) {  // thousands of one-node users as rows of tensors (nFedGNN)
    *stage = "the batched node-level federation";
    FGL_ASSIGN_OR_RETURN(proto::FederationResult result, batched.federation(resolved, hooks.on_round));
    result.mutable_result()->set_wall_s(std::chrono::duration<double>(Clock::now() - start).count() + result.resumed_s());
    return result;
  }
  FGL_ASSIGN_OR_RETURN(torch::Device device, nn::ParseDevice(o.device));
  FGL_ASSIGN_OR_RETURN(PartitionedDataset loaded, LoadPartitionedDataset(o));
  graph::Dataset& data = loaded.data;
  const graph::Partition& partition = loaded.partition;

  // Per-client subgraphs and splits, fixed by the partition seed (the papers reuse one split).
  std::optional<ScopedPhase> client_setup(std::in_place, "client set-up");
  std::vector<graph::Dataset> subsets;
  std::vector<graph::NodeSplit> splits;
  for (int k = 0; k < partition.num_clients(); ++k) {
    FGL_ASSIGN_OR_RETURN(graph::Dataset sub, graph::SubDataset(data, partition.clients[k]));
    FGL_ASSIGN_OR_RETURN(graph::NodeSplit split, ClientSplit(o, partition, sub, k));
    subsets.push_back(std::move(sub));
    splits.push_back(std::move(split));
  }

  const std::string& method = o.spec.method();
  std::vector<std::shared_ptr<ClientData>> clients;
  if (o.spec.centralized()) {  // fedavg only (CheckMethod)
    if (!partition.server_nodes.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("centralized: partition '", o.spec.partitioner(),
                                                     "' keeps server nodes (a global test graph), which a pooled run never scores"));
    }
    // One client with the whole graph (all edges back) and the union of the clients' masks.
    graph::NodeSplit all{torch::zeros({data.num_nodes()}, torch::kBool),
                         torch::zeros({data.num_nodes()}, torch::kBool),
                         torch::zeros({data.num_nodes()}, torch::kBool)};
    for (int k = 0; k < partition.num_clients(); ++k) {
      torch::Tensor index = torch::tensor(partition.clients[k], torch::kInt64);
      all.train.index_put_({index}, splits[k].train);
      all.val.index_put_({index}, splits[k].val);
      all.test.index_put_({index}, splits[k].test);
    }
    FGL_ASSIGN_OR_RETURN(auto c, MakeClientData(0, data, all, device));
    c->node_ids.resize(data.num_nodes());
    std::iota(c->node_ids.begin(), c->node_ids.end(), int64_t{0});
    clients.push_back(std::move(c));
  } else {
    FGL_ASSIGN_OR_RETURN(std::shared_ptr<const ClientData> global_test, MakeGlobalTestData(o, loaded, device));
    for (int k = 0; k < partition.num_clients(); ++k) {
      FGL_ASSIGN_OR_RETURN(auto c, MakeClientData(k, std::move(subsets[k]), splits[k], device));
      c->global_test = global_test;
      c->node_ids = partition.clients[k];
      clients.push_back(std::move(c));
    }
  }

  client_setup.reset();
  *stage = "creating the method";
  std::optional<ScopedPhase> method_setup(std::in_place, "method set-up");
  FGL_ASSIGN_OR_RETURN(MethodFactories factories, FindMethod(method));
  FGL_ASSIGN_OR_RETURN(MethodConfig config,
                       ServerMethodConfig(o, data.num_features(), data.num_classes));
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<ServerAlgorithm> server, factories.server(config));
  std::vector<std::unique_ptr<ClientAlgorithm>> algos;
  for (const auto& c : clients) {
    FGL_ASSIGN_OR_RETURN(std::unique_ptr<ClientAlgorithm> a,
                         factories.client(c, ClientMethodConfig(o, config, c->id)));
    algos.push_back(std::move(a));
  }

  method_setup.reset();
  *stage = "the rounds";
  InProcessChannel channel(o, std::move(clients), std::move(algos));
  absl::StatusOr<proto::FederationResult> driven;
  {
    ScopedPhase phase("rounds");
    driven = DriveFederation(resolved, *server, channel, hooks);
  }
  FGL_ASSIGN_OR_RETURN(proto::FederationResult result, std::move(driven));
  result.mutable_result()->set_wall_s(std::chrono::duration<double>(Clock::now() - start).count() + result.resumed_s());
  return result;
}

}  // namespace

absl::StatusOr<proto::FederationResult> RunFederation(const ResolvedOptions& options,
                                                      const std::function<void(const proto::RoundRecord&)>& on_round) {
  DriverHooks hooks;
  hooks.on_round = on_round;
  return RunFederation(options, hooks);
}

absl::StatusOr<proto::FederationResult> RunFederation(const ResolvedOptions& options, const DriverHooks& hooks) {
  // `stage` is read when an exception is caught, so the error names what the run was doing.
  std::string stage;
  return CatchExceptions(stage, [&] { return Run(options, hooks, &stage); });
}

absl::StatusOr<proto::FederationResult> RunFederation(const FederationOptions& options,
                                                      const std::function<void(const proto::RoundRecord&)>& on_round) {
  DriverHooks hooks;
  hooks.on_round = on_round;
  return RunFederation(options, hooks);
}

absl::StatusOr<proto::FederationResult> RunFederation(const FederationOptions& options, const DriverHooks& hooks) {
  FGL_ASSIGN_OR_RETURN(const ResolvedOptions resolved, ResolveOptions(options));
  return RunFederation(resolved, hooks);
}

}  // namespace fgl::fl
