#include "fl/federation_setup.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "fl/registry.h"
#include "glog/logging.h"
#include "fl/federation_spec.h"
#include "fl/phase_profile.h"
#include "graph/datasets.h"
#include "graph/partition/partition_cache.h"
#include "graph/partition/partitioner.h"
#include "graph/partition/partitioner_registry.h"
#include "graph/random.h"
#include "nn/device.h"
#include "nn/models/gnn_model.h"
#include "nn/ops/dropout.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {

namespace {

// The partitioner spec with a relative "reference:<dir>" resolved against the data root, so that
// specs (and cache keys) name a reference partition the same way on every machine.
std::string PartitionerSpec(const FederationOptions& o) {
  absl::string_view dir = o.spec.partitioner();
  if (!absl::ConsumePrefix(&dir, "reference:") || absl::StartsWith(dir, "/")) return o.spec.partitioner();
  return absl::StrCat("reference:", graph::ResolveDataDir(o.spec.data_dir()), "/", dir);
}

}  // namespace

absl::StatusOr<FederationOptions> ResolveOptions(FederationOptions o) {
  FGL_ASSIGN_OR_RETURN(o.spec, ResolveFederationSpec(std::move(o.spec), "run"));
  FGL_RETURN_IF_ERROR(CheckMethod(o.spec).status());
  // The option strings too, so that a bad model or partitioner spec fails before the data loads.
  if (absl::Status s = graph::MakePartitioner(PartitionerSpec(o)).status(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("partitioner: ", s.message()));
  }
  for (absl::string_view model : absl::StrSplit(o.spec.model(), ';', absl::SkipEmpty())) {
    if (absl::Status s = nn::MakeModel(std::string(model), 1, 2).status(); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("model: ", s.message()));
    }
  }
  if (o.threads < 1) return absl::InvalidArgumentError(absl::StrCat("threads = ", o.threads, ": must be >= 1"));
  if (o.checkpoint_every < 0) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint_every = ", o.checkpoint_every, ": must be >= 0"));
  }
  if (!(o.checkpoint_minutes >= 0 && std::isfinite(o.checkpoint_minutes))) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint_minutes = ", o.checkpoint_minutes, ": must be finite and >= 0"));
  }
  return o;
}

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
  FGL_ASSIGN_OR_RETURN(auto partitioner, graph::MakePartitioner(PartitionerSpec(o)));
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
  if (o.spec.eval().global_test() == "whole_graph") {
    const graph::Partition& partition = loaded.partition;
    if (!partition.server_nodes.empty() || partition.server_keeps_topology) {
      return absl::InvalidArgumentError(
          "eval.global_test whole_graph: the partition already sets a server-side test (server nodes or "
          "node-level topology); use the default");
    }
    const int64_t n = loaded.data.num_nodes();
    // The union of the clients' tests is well defined only when no node belongs to two clients.
    if (absl::Status s = graph::ValidatePartition(partition, n, /*disjoint=*/true); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("eval.global_test whole_graph needs disjoint clients: ", s.message()));
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

absl::StatusOr<ClientShard> LoadClientShard(const FederationOptions& o, int client) {
  FGL_ASSIGN_OR_RETURN(std::vector<ClientShard> shards, LoadClientShards(o, {client}));
  return std::move(shards[0]);
}

absl::StatusOr<std::vector<ClientShard>> LoadClientShards(const FederationOptions& options,
                                                          const std::vector<int>& clients) {
  FGL_ASSIGN_OR_RETURN(const FederationOptions o, ResolveOptions(options));
  if (o.spec.method() == "centralized") {
    return absl::InvalidArgumentError("method 'centralized' has no clients to distribute");
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

absl::StatusOr<MethodConfig> ServerMethodConfig(const FederationOptions& o, int64_t num_features,
                                                int64_t num_classes) {
  const std::vector<std::string> specs = absl::StrSplit(o.spec.model(), ';', absl::SkipEmpty());
  if (specs.empty()) return absl::InvalidArgumentError("empty model spec");
  FGL_ASSIGN_OR_RETURN(torch::Device device, nn::ParseDevice(o.device));
  MethodConfig config;
  config.model_spec = specs[0];
  config.shared_group = o.spec.shared_group();
  config.num_features = num_features;
  config.num_classes = num_classes;
  config.local_epochs = o.spec.local_epochs();
  config.rounds = o.spec.rounds();
  config.num_clients = o.spec.clients();
  config.clients_per_round = ClientsPerRound(o, o.spec.clients());
  config.lr = o.spec.lr();
  config.weight_decay = o.spec.weight_decay();
  config.optimizer = o.spec.optimizer() == proto::FederationSpec::SGD ? MethodConfig::Optimizer::kSgd
                                                                      : MethodConfig::Optimizer::kAdam;
  config.momentum = o.spec.momentum();
  config.dropout_at_eval = o.eval().dropout_at_eval;
  config.params = MethodParamsOf(o.spec);
  config.seed = graph::Rng::Derive(o.seed, "init");
  config.run_seed = o.seed;
  config.dataset = o.spec.dataset();
  config.data_dir = graph::ResolveDataDir(o.spec.data_dir());
  config.partition_seed = o.spec.partition_seed();
  config.split = o.spec.split();
  config.device = device;
  return config;
}

MethodConfig ClientMethodConfig(const FederationOptions& o, const MethodConfig& server, int client) {
  const std::vector<std::string> specs = absl::StrSplit(o.spec.model(), ';', absl::SkipEmpty());
  MethodConfig config = server;
  config.model_spec = specs[client % specs.size()];
  return config;
}

int ClientsPerRound(const FederationOptions& o, int num_clients) {
  return std::max(1, static_cast<int>(std::lround(o.spec.client_fraction() * num_clients)));
}

std::vector<int> SampleClients(const FederationOptions& o, int round, int num_clients) {
  const int per_round = ClientsPerRound(o, num_clients);
  std::vector<int> sampled(num_clients);
  std::iota(sampled.begin(), sampled.end(), 0);
  if (per_round < num_clients) {
    graph::Rng rng(o.seed, absl::StrCat("sample/", round));
    rng.Shuffle(sampled);
    sampled.resize(per_round);
    std::sort(sampled.begin(), sampled.end());
  }
  return sampled;
}

RoundInfo ServerRound(const FederationOptions& o, int round, int exchange) {
  const std::string stream =
      exchange == 0 ? absl::StrCat("round/", round) : absl::StrCat("round/", round, "/exchange/", exchange);
  return RoundInfo{round, graph::Rng::Derive(o.seed, stream), exchange};
}

RoundInfo ClientRound(const RoundInfo& server_round, int client) {
  return RoundInfo{server_round.round,
                   graph::Rng::Derive(server_round.seed, absl::StrCat("client/", client)), server_round.exchange};
}

absl::StatusOr<EvalCounts> EvaluateClient(ClientAlgorithm& algorithm, const ClientData& client,
                                          const proto::Message* global, const RoundInfo& round) {
  nn::DropoutSeedScope eval_stream(graph::Rng::Derive(round.seed, absl::StrCat("eval/", client.id)));
  FGL_ASSIGN_OR_RETURN(torch::Tensor logits, algorithm.Predict(global));
  if (logits.dim() != 2 || logits.size(0) != client.labels.size(0)) {
    return absl::InternalError(absl::StrCat("client ", client.id, ": Predict returned shape ",
                                            logits.dim() == 2 ? absl::StrCat(logits.size(0), "x", logits.size(1)) : "not 2-d"));
  }
  torch::Tensor correct = logits.argmax(1) == client.labels;
  EvalCounts c;
  c.num_nodes = client.data.num_nodes();
  c.val_n = client.split.val.sum().item<int64_t>();
  c.val_correct = correct.logical_and(client.split.val).sum().item<int64_t>();
  c.test_n = client.split.test.sum().item<int64_t>();
  c.test_correct = correct.logical_and(client.split.test).sum().item<int64_t>();
  if (c.test_n > 0) {
    torch::NoGradGuard no_grad;
    const torch::Tensor test = client.split.test.nonzero().flatten();
    const torch::Tensor p = torch::softmax(logits.index_select(0, test).to(torch::kFloat), 1);
    const torch::Tensor p_true = p.gather(1, client.labels.index_select(0, test).unsqueeze(1));
    c.test_loss_sum = -(p_true + 1e-7).log().sum().item<double>();
  }
  if (client.global_test) {
    const ClientData& g = *client.global_test;
    FGL_ASSIGN_OR_RETURN(torch::Tensor global_logits, algorithm.PredictGraph(g, global));
    if (global_logits.dim() != 2 || global_logits.size(0) != g.labels.size(0)) {
      return absl::InternalError(absl::StrCat("client ", client.id, ": PredictGraph returned the wrong shape"));
    }
    // Its test nodes only: all of a server-node graph, the clients' test nodes of the whole graph.
    c.global_n = g.split.test.sum().item<int64_t>();
    c.global_correct = (global_logits.argmax(1) == g.labels).logical_and(g.split.test).sum().item<int64_t>();
  }
  return c;
}

RoundAccuracy WeightedAccuracy(const EvalProtocol& eval, const std::vector<EvalCounts>& counts,
                               const std::vector<int64_t>& sizes) {
  // A client without val (test) nodes has no val (test) accuracy: it is left out of that average
  // instead of counting as 0 (node-level FL: most one-node users hold no test node).
  double val = 0, test = 0, val_weight = 0, test_weight = 0, global = 0, global_weight = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const double w = eval.node_weighted ? static_cast<double>(sizes[k]) : 1.0;
    if (counts[k].global_n > 0) {
      global += w * (static_cast<double>(counts[k].global_correct) / static_cast<double>(counts[k].global_n));
      global_weight += w;
    }
    if (counts[k].val_n > 0) {
      val += w * (static_cast<double>(counts[k].val_correct) / static_cast<double>(counts[k].val_n));
      val_weight += w;
    }
    if (counts[k].test_n > 0) {
      test += w * (static_cast<double>(counts[k].test_correct) / static_cast<double>(counts[k].test_n));
      test_weight += w;
    }
  }
  return {val_weight == 0 ? 0.0 : 100.0 * val / val_weight, test_weight == 0 ? 0.0 : 100.0 * test / test_weight,
          global_weight == 0 ? std::numeric_limits<double>::quiet_NaN() : 100.0 * global / global_weight};
}

absl::Status AccumulateReply(ServerAlgorithm& server, const absl::StatusOr<proto::Message>& reply,
                             ClientRecord& client, RoundRecord& round) {
  absl::Status accepted = reply.status();
  if (reply.ok()) {
    if (auto loss = reply->scalars().find("train_loss"); loss != reply->scalars().end()) {
      client.train_loss = loss->second;
    }
    accepted = server.Accumulate(*reply);
  }
  if (!accepted.ok()) {
    LOG(WARNING) << "round " << round.round << ": client " << client.id << " left out: " << accepted;
    ++round.failed_clients;
    return accepted;
  }
  ++round.participants;
  client.participated = true;
  return absl::OkStatus();
}

void SelectReportedRound(const EvalProtocol& eval, FederationResult& result) {
  const RoundRecord* pick = &result.rounds.back();
  if (eval.round != EvalProtocol::Round::kLast) {
    const bool by_val = eval.round == EvalProtocol::Round::kBestVal;
    pick = &result.rounds.front();
    for (const RoundRecord& rec : result.rounds) {
      if ((by_val ? rec.val_acc : rec.test_acc) > (by_val ? pick->val_acc : pick->test_acc)) pick = &rec;
    }
  }
  result.reported_round = pick->round;
  result.test_acc = pick->test_acc;
  result.client_mean_test_acc = pick->client_mean_test_acc;
  result.val_acc = pick->val_acc;
  result.global_test_acc = pick->global_test_acc;
  if (eval.round == EvalProtocol::Round::kBestTest) {
    for (const RoundRecord& rec : result.rounds) {
      if (rec.global_test_acc > result.global_test_acc) result.global_test_acc = rec.global_test_acc;
    }
  }
}

absl::StatusOr<std::string> ProtocolCard(const FederationOptions& o) {
  FGL_ASSIGN_OR_RETURN(auto partitioner, graph::MakePartitioner(PartitionerSpec(o)));
  // A reference partition is named as the spec names it (relative to the data root), not by
  // where this machine keeps it.
  const std::string partition =
      partitioner->ProvidesSplits() ? o.spec.partitioner() : partitioner->Fingerprint();
  return absl::StrCat(o.eval().Card(), " shared=", o.spec.shared_group().empty() ? "all" : o.spec.shared_group(),
                      " split=", partitioner->ProvidesSplits() ? "partition" : o.spec.split(),
                      " partition=", partition, " clients=", o.spec.clients(),
                      " partition_seed=", o.spec.partition_seed());
}

void ApplyClientReports(const proto::RoundRecord& p, RoundRecord& r) {
  for (const auto& [name, values] : p.client_reports()) {
    for (size_t k = 0; k < r.clients.size() && k < static_cast<size_t>(values.values_size()); ++k) {
      if (std::isfinite(values.values(k))) r.clients[k].reports[name] = values.values(k);
    }
  }
}

RoundRecord RoundRecordFromProto(const proto::RoundRecord& p) {
  RoundRecord r;
  r.round = p.round();
  r.val_acc = p.val_acc();
  r.test_acc = p.test_acc();
  r.client_mean_test_acc = p.client_mean_test_acc();
  if (p.has_global_test_acc()) r.global_test_acc = p.global_test_acc();
  r.participants = p.participants();
  r.failed_clients = p.failed_clients();
  r.bytes_up = p.bytes_up();
  r.bytes_down = p.bytes_down();
  r.seconds = p.seconds();
  if (p.has_train_loss()) r.train_loss = p.train_loss();
  if (p.has_test_loss()) r.test_loss = p.test_loss();
  r.tensor_bytes_up.insert(p.tensor_bytes_up().begin(), p.tensor_bytes_up().end());
  for (const proto::ClientRoundRecord& q : p.clients()) {
    ClientRecord& c = r.clients.emplace_back();
    c.id = q.id();
    c.participated = q.participated();
    if (q.has_train_loss()) c.train_loss = q.train_loss();
    c.val_acc = q.val_acc();
    c.test_acc = q.test_acc();
    c.bytes_up = q.bytes_up();
    c.bytes_down = q.bytes_down();
    c.seconds = q.seconds();
  }
  ApplyClientReports(p, r);
  return r;
}

proto::RoundRecord RoundRecordToProto(const RoundRecord& r, bool with_clients) {
  proto::RoundRecord p;
  p.set_round(r.round);
  p.set_val_acc(r.val_acc);
  p.set_test_acc(r.test_acc);
  p.set_client_mean_test_acc(r.client_mean_test_acc);
  if (std::isfinite(r.global_test_acc)) p.set_global_test_acc(r.global_test_acc);
  p.set_participants(r.participants);
  p.set_failed_clients(r.failed_clients);
  p.set_bytes_up(r.bytes_up);
  p.set_bytes_down(r.bytes_down);
  p.set_seconds(r.seconds);
  if (std::isfinite(r.train_loss)) p.set_train_loss(r.train_loss);
  if (std::isfinite(r.test_loss)) p.set_test_loss(r.test_loss);
  p.mutable_tensor_bytes_up()->insert(r.tensor_bytes_up.begin(), r.tensor_bytes_up.end());
  for (size_t k = 0; k < r.clients.size(); ++k) {
    for (const auto& [name, value] : r.clients[k].reports) {
      auto& values = *(*p.mutable_client_reports())[name].mutable_values();
      while (values.size() < static_cast<int>(r.clients.size())) values.Add(std::numeric_limits<double>::quiet_NaN());
      values[k] = value;
    }
  }
  if (!with_clients) return p;
  for (const ClientRecord& c : r.clients) {
    proto::ClientRoundRecord& q = *p.add_clients();
    q.set_id(c.id);
    q.set_participated(c.participated);
    if (std::isfinite(c.train_loss)) q.set_train_loss(c.train_loss);
    q.set_val_acc(c.val_acc);
    q.set_test_acc(c.test_acc);
    q.set_bytes_up(c.bytes_up);
    q.set_bytes_down(c.bytes_down);
    q.set_seconds(c.seconds);
  }
  return p;
}

proto::RunResult RunResultToProto(const FederationOptions& o, const FederationResult& r) {
  proto::RunResult p;
  p.set_method(o.spec.method());
  p.set_dataset(o.spec.dataset());
  p.set_clients(o.spec.clients());
  p.set_partitioner(o.spec.partitioner());
  p.set_partition_seed(o.spec.partition_seed());
  p.set_seed(o.seed);
  p.set_model(o.spec.model());
  p.set_rounds(o.spec.rounds());
  p.set_local_epochs(o.spec.local_epochs());
  p.set_test_acc(r.test_acc);
  p.set_val_acc(r.val_acc);
  p.set_client_mean_test_acc(r.client_mean_test_acc);
  if (std::isfinite(r.global_test_acc)) p.set_global_test_acc(r.global_test_acc);
  p.set_best_round(r.reported_round);
  if (r.stopped_round > 0) p.set_stopped_round(r.stopped_round);
  p.set_bytes_up(r.bytes_up);
  p.set_bytes_down(r.bytes_down);
  p.set_preparation_bytes_up(r.preparation_bytes_up);
  int64_t tensor_bytes = 0;
  for (const auto& [group, bytes] : r.tensor_bytes_up) {
    (*p.mutable_uploaded_tensor_bytes_by_group())[group] = bytes;
    tensor_bytes += bytes;
  }
  p.set_uploaded_tensor_bytes(tensor_bytes);
  for (const auto& [name, values] : r.final_client_reports) {
    auto& out = (*p.mutable_final_client_reports())[name];
    out.mutable_values()->Add(values.begin(), values.end());
  }
  p.set_wall_s(r.wall_s);
  p.set_train_s(r.train_s);
  p.set_protocol(r.protocol);
  for (int64_t n : r.client_sizes) p.add_client_sizes(n);
  *p.mutable_spec() = o.spec;
  p.mutable_spec()->clear_data_dir();  // where this machine keeps the data is not the run's
  return p;
}

}  // namespace fgl::fl
