#include "fl/simulator.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include <fstream>

#include "fl/algorithm.h"
#include "fl/proto/checkpoint.pb.h"
#include "graph/io/file.h"
#include "fl/registry.h"
#include "glog/logging.h"
#include "graph/datasets.h"
#include "graph/partition/partition_cache.h"
#include "graph/partition/partitioner_registry.h"
#include "graph/random.h"
#include "graph/split.h"
#include "nn/device.h"
#include "nn/ops/dropout.h"
#include "nn/threads.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
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

// Parses a serialised message, as a receiver would.
absl::StatusOr<proto::Message> Receive(const std::string& bytes, const std::string& what) {
  proto::Message m;
  if (!m.ParseFromString(bytes)) return absl::DataLossError(absl::StrCat("cannot parse ", what));
  return m;
}

constexpr uint32_t kCheckpointVersion = 1;

absl::Status WriteCheckpoint(const std::string& dir, const proto::Checkpoint& ckpt) {
  const std::string path = dir + "/checkpoint.pb";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out || !ckpt.SerializeToOstream(&out)) {
      return absl::UnavailableError(absl::StrCat("cannot write checkpoint ", tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

RoundRecord FromProto(const proto::RoundRecord& p) {
  RoundRecord r;
  r.round = p.round();
  r.val_acc = p.val_acc();
  r.test_acc = p.test_acc();
  r.participants = p.participants();
  r.failed_clients = p.failed_clients();
  r.bytes_up = p.bytes_up();
  r.bytes_down = p.bytes_down();
  r.seconds = p.seconds();
  return r;
}

proto::RoundRecord ToProto(const RoundRecord& r) {
  proto::RoundRecord p;
  p.set_round(r.round);
  p.set_val_acc(r.val_acc);
  p.set_test_acc(r.test_acc);
  p.set_participants(r.participants);
  p.set_failed_clients(r.failed_clients);
  p.set_bytes_up(r.bytes_up);
  p.set_bytes_down(r.bytes_down);
  p.set_seconds(r.seconds);
  return p;
}

// Runs fn(i) for i in [0, n) on `workers` threads (inline when 1). Each call writes only its own
// slot, so results do not depend on the worker count.
void ParallelFor(int n, int workers, const std::function<void(int)>& fn) {
  if (workers <= 1 || n <= 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < std::min(workers, n); ++w) {
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) fn(i);
    });
  }
  for (std::thread& t : pool) t.join();
}

}  // namespace

std::string FederationOptions::Fingerprint() const {
  std::string params;
  for (const auto& [k, v] : method_params) absl::StrAppend(&params, k, "=", v, ";");
  return absl::StrCat("dataset=", dataset, "|partitioner=", partitioner, "|clients=", clients,
                      "|partition_seed=", partition_seed, "|split=", split, "|method=", method,
                      "|model=", model, "|shared=", shared_group, "|params=", params,
                      "|local_epochs=", local_epochs, "|lr=", lr, "|wd=", weight_decay,
                      "|fraction=", client_fraction, "|eval=", eval.Card(), "|seed=", seed,
                      "|device=", device);
}

std::string EvalProtocol::Card() const {
  return absl::StrCat("model=",
                      model == Model::kGlobal ? "global" : model == Model::kLocal ? "local" : "personalized",
                      " weighting=", node_weighted ? "node" : "unweighted", " round=",
                      round == Round::kBestVal ? "best_val" : round == Round::kLast ? "last" : "best_test(optimistic)",
                      " dropout_at_eval=", dropout_at_eval ? "on" : "off");
}

absl::StatusOr<FederationResult> RunFederation(const FederationOptions& o,
                                               const std::function<void(const RoundRecord&)>& on_round) {
  const Clock::time_point start = Clock::now();
  if (o.rounds < 1 || o.local_epochs < 0 || !(o.client_fraction > 0) || o.client_fraction > 1) {
    return absl::InvalidArgumentError("need rounds >= 1, local_epochs >= 0, client_fraction in (0, 1]");
  }
  // Clients train in parallel on `threads` workers, each with one intra-op thread, so the two
  // levels never oversubscribe the cores.
  const int workers = std::max(1, o.threads);
  nn::SetComputeThreads(1);
  FGL_ASSIGN_OR_RETURN(torch::Device device, nn::ParseDevice(o.device));
  FGL_ASSIGN_OR_RETURN(graph::Dataset data,
                       graph::LoadDataset(o.dataset, graph::ResolveDataDir(o.data_dir), o.partition_seed));
  FGL_ASSIGN_OR_RETURN(auto partitioner, graph::MakePartitioner(o.partitioner));
  const std::string cache = o.cache_dir.empty() ? graph::DefaultPartitionCacheDir() : o.cache_dir;
  FGL_ASSIGN_OR_RETURN(graph::Partition partition,
                       graph::CachedPartition(*partitioner, data, o.clients, o.partition_seed,
                                              cache == "none" ? "" : cache));
  if (partition.server_keeps_topology) {
    return absl::UnimplementedError("node-level partitions need a node-level method (nFedGNN)");
  }

  // Per-client subgraphs and splits, fixed by the partition seed (the papers reuse one split).
  std::vector<graph::Dataset> subsets;
  std::vector<graph::NodeSplit> splits;
  for (int k = 0; k < partition.num_clients(); ++k) {
    FGL_ASSIGN_OR_RETURN(graph::Dataset sub, graph::SubDataset(data, partition.clients[k]));
    FGL_ASSIGN_OR_RETURN(graph::NodeSplit split,
                         graph::MakeSplit(o.split, sub, graph::Rng::Derive(o.partition_seed, absl::StrCat("split/", k))));
    subsets.push_back(std::move(sub));
    splits.push_back(std::move(split));
  }

  std::string method = o.method;
  std::vector<std::shared_ptr<ClientData>> clients;
  if (method == "centralized") {
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
    clients.push_back(std::move(c));
    method = "fedavg";
  } else {
    for (int k = 0; k < partition.num_clients(); ++k) {
      FGL_ASSIGN_OR_RETURN(auto c, MakeClientData(k, std::move(subsets[k]), splits[k], device));
      clients.push_back(std::move(c));
    }
  }

  FGL_ASSIGN_OR_RETURN(MethodFactories factories, FindMethod(method));
  MethodConfig config;
  const std::vector<std::string> specs = absl::StrSplit(o.model, ';', absl::SkipEmpty());
  if (specs.empty()) return absl::InvalidArgumentError("empty model spec");
  config.model_spec = specs[0];
  config.shared_group = o.shared_group;
  config.num_features = data.num_features();
  config.num_classes = data.num_classes;
  config.local_epochs = o.local_epochs;
  config.lr = o.lr;
  config.weight_decay = o.weight_decay;
  config.dropout_at_eval = o.eval.dropout_at_eval;
  config.params = o.method_params;
  config.seed = graph::Rng::Derive(o.seed, "init");
  config.device = device;
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<ServerAlgorithm> server, factories.server(config));
  std::vector<std::unique_ptr<ClientAlgorithm>> algos;
  for (const auto& c : clients) {
    MethodConfig client_config = config;
    client_config.model_spec = specs[c->id % specs.size()];
    FGL_ASSIGN_OR_RETURN(std::unique_ptr<ClientAlgorithm> a, factories.client(c, client_config));
    algos.push_back(std::move(a));
  }

  FederationResult result;
  for (const auto& c : clients) result.client_sizes.push_back(c->data.num_nodes());
  const int k_total = static_cast<int>(clients.size());
  const int per_round = std::max(1, static_cast<int>(std::lround(o.client_fraction * k_total)));
  int first_round = 1;
  const std::string ckpt_path = o.checkpoint_dir + "/checkpoint.pb";
  if (o.resume && !o.checkpoint_dir.empty() && graph::io::FileExists(ckpt_path)) {
    FGL_ASSIGN_OR_RETURN(std::string bytes, graph::io::ReadFileBytes(ckpt_path));
    proto::Checkpoint ckpt;
    if (!ckpt.ParseFromString(bytes)) return absl::DataLossError(absl::StrCat(ckpt_path, ": corrupt checkpoint"));
    if (ckpt.version() != kCheckpointVersion || ckpt.run_fingerprint() != o.Fingerprint()) {
      return absl::FailedPreconditionError(absl::StrCat(
          ckpt_path, ": checkpoint of a different run (", ckpt.run_fingerprint(), ")"));
    }
    if (ckpt.clients_size() != k_total || ckpt.round() < 1 || ckpt.round() > o.rounds ||
        ckpt.records_size() != ckpt.round()) {
      return absl::DataLossError(absl::StrCat(ckpt_path, ": inconsistent checkpoint"));
    }
    FGL_RETURN_IF_ERROR(server->RestoreState(ckpt.server()));
    for (int k = 0; k < k_total; ++k) FGL_RETURN_IF_ERROR(algos[k]->RestoreState(ckpt.clients(k)));
    for (const proto::RoundRecord& p : ckpt.records()) {
      result.rounds.push_back(FromProto(p));
      result.bytes_up += p.bytes_up();
      result.bytes_down += p.bytes_down();
    }
    first_round = ckpt.round() + 1;
    LOG(INFO) << "resumed from " << ckpt_path << " after round " << ckpt.round();
  }
  const Clock::time_point train_start = Clock::now();
  if (first_round == 1) {
    // The one-off exchange before round 1, counted like any other traffic.
    for (int k = 0; k < k_total; ++k) {
      FGL_ASSIGN_OR_RETURN(std::optional<proto::Message> prepared, algos[k]->Prepare());
      if (!prepared.has_value()) continue;
      const std::string up = prepared->SerializeAsString();
      result.preparation_bytes_up += static_cast<int64_t>(up.size());
      FGL_ASSIGN_OR_RETURN(proto::Message at_server, Receive(up, "preparation"));
      FGL_RETURN_IF_ERROR(server->AcceptPreparation(at_server));
    }
    FGL_RETURN_IF_ERROR(server->FinishPreparation());
  }
  for (int r = first_round; r <= o.rounds; ++r) {
    const Clock::time_point round_start = Clock::now();
    RoundRecord rec;
    rec.round = r;
    RoundInfo info{r, graph::Rng::Derive(o.seed, absl::StrCat("round/", r))};
    std::vector<int> sampled(k_total);
    std::iota(sampled.begin(), sampled.end(), 0);
    if (per_round < k_total) {
      graph::Rng rng(o.seed, absl::StrCat("sample/", r));
      rng.Shuffle(sampled);
      sampled.resize(per_round);
      std::sort(sampled.begin(), sampled.end());
    }
    // One message for every sampled client, or each its own (personalised methods).
    std::vector<std::string> downs;
    if (server->PersonalisedBroadcast()) {
      for (int k : sampled) {
        FGL_ASSIGN_OR_RETURN(proto::Message m, server->BroadcastTo(k, info));
        downs.push_back(m.SerializeAsString());
      }
    } else {
      FGL_ASSIGN_OR_RETURN(proto::Message broadcast, server->Broadcast(info));
      downs.push_back(broadcast.SerializeAsString());
    }
    auto down_for = [&](size_t i) -> const std::string& { return downs.size() == 1 ? downs[0] : downs[i]; };
    // Local training in parallel; each slot holds one client's serialised reply or error.
    std::vector<absl::StatusOr<std::string>> replies(sampled.size(), absl::UnknownError("not run"));
    std::vector<double> train_seconds(sampled.size(), 0.0);
    rec.clients.resize(k_total);
    for (int k = 0; k < k_total; ++k) rec.clients[k].id = k;
    ParallelFor(static_cast<int>(sampled.size()), workers, [&](int i) {
      const int k = sampled[i];
      const Clock::time_point client_start = Clock::now();
      absl::StatusOr<proto::Message> received = Receive(down_for(i), "broadcast");
      if (!received.ok()) {
        replies[i] = received.status();
        return;
      }
      RoundInfo client_info{r, graph::Rng::Derive(info.seed, absl::StrCat("client/", k))};
      absl::StatusOr<proto::Message> reply = algos[k]->Train(*received, client_info);
      if (reply.ok()) {
        replies[i] = reply->SerializeAsString();
      } else {
        replies[i] = reply.status();
      }
      train_seconds[i] = Seconds(client_start);
    });
    // The server takes replies in client-id order: aggregation is deterministic.
    for (size_t i = 0; i < sampled.size(); ++i) {
      const int k = sampled[i];
      ClientRecord& cr = rec.clients[k];
      cr.seconds = train_seconds[i];
      cr.bytes_down = static_cast<int64_t>(down_for(i).size());
      rec.bytes_down += cr.bytes_down;
      absl::Status accepted = replies[i].status();
      if (replies[i].ok()) {
        cr.bytes_up = static_cast<int64_t>(replies[i]->size());
        rec.bytes_up += cr.bytes_up;
        FGL_ASSIGN_OR_RETURN(proto::Message at_server, Receive(*replies[i], "reply"));
        if (auto loss = at_server.scalars().find("train_loss"); loss != at_server.scalars().end()) {
          cr.train_loss = loss->second;
        }
        accepted = server->Accumulate(at_server);
      }
      if (!accepted.ok()) {
        if (o.strict) return accepted;
        LOG(WARNING) << "round " << r << ": client " << k << " left out: " << accepted;
        ++rec.failed_clients;
        continue;
      }
      ++rec.participants;
      cr.participated = true;
    }
    FGL_RETURN_IF_ERROR(server->FinishRound(info));

    // Evaluation: every client scores the protocol's model on its own val/test nodes (in
    // parallel). Seeded per client, so dropout at evaluation does not depend on what ran before
    // (checkpoint/resume) or on the thread that runs it.
    proto::Message global;
    if (o.eval.model == EvalProtocol::Model::kGlobal) {
      FGL_ASSIGN_OR_RETURN(global, server->Broadcast(info));
    }
    struct Counts {
      absl::Status status;
      int64_t val_correct = 0, val_n = 0, test_correct = 0, test_n = 0;
    };
    std::vector<Counts> counts(k_total);
    ParallelFor(k_total, workers, [&](int k) {
      nn::DropoutSeedScope eval_stream(graph::Rng::Derive(info.seed, absl::StrCat("eval/", k)));
      absl::StatusOr<torch::Tensor> logits =
          algos[k]->Predict(o.eval.model == EvalProtocol::Model::kGlobal ? &global : nullptr);
      if (!logits.ok()) {
        counts[k].status = logits.status();
        return;
      }
      const ClientData& c = *clients[k];
      torch::Tensor correct = logits->argmax(1) == c.labels;
      counts[k].val_n = c.split.val.sum().item<int64_t>();
      counts[k].val_correct = correct.logical_and(c.split.val).sum().item<int64_t>();
      counts[k].test_n = c.split.test.sum().item<int64_t>();
      counts[k].test_correct = correct.logical_and(c.split.test).sum().item<int64_t>();
    });
    double val = 0, test = 0, weight = 0;
    for (int k = 0; k < k_total; ++k) {
      FGL_RETURN_IF_ERROR(counts[k].status);
      auto acc = [](int64_t correct, int64_t n) { return n == 0 ? 0.0 : static_cast<double>(correct) / n; };
      const double w = o.eval.node_weighted ? static_cast<double>(clients[k]->data.num_nodes()) : 1.0;
      rec.clients[k].val_acc = 100.0 * acc(counts[k].val_correct, counts[k].val_n);
      rec.clients[k].test_acc = 100.0 * acc(counts[k].test_correct, counts[k].test_n);
      val += w * acc(counts[k].val_correct, counts[k].val_n);
      test += w * acc(counts[k].test_correct, counts[k].test_n);
      weight += w;
    }
    rec.val_acc = 100.0 * val / weight;
    rec.test_acc = 100.0 * test / weight;
    rec.seconds = Seconds(round_start);
    result.bytes_up += rec.bytes_up;
    result.bytes_down += rec.bytes_down;
    result.rounds.push_back(rec);
    VLOG(1) << "round " << r << " val " << rec.val_acc << " test " << rec.test_acc;
    if (on_round) on_round(rec);
    if (!o.checkpoint_dir.empty() && o.checkpoint_every > 0 && r % o.checkpoint_every == 0) {
      proto::Checkpoint ckpt;
      ckpt.set_version(kCheckpointVersion);
      ckpt.set_run_fingerprint(o.Fingerprint());
      ckpt.set_round(r);
      for (const RoundRecord& done : result.rounds) *ckpt.add_records() = ToProto(done);
      FGL_ASSIGN_OR_RETURN(*ckpt.mutable_server(), server->SaveState());
      for (int k = 0; k < k_total; ++k) {
        FGL_ASSIGN_OR_RETURN(*ckpt.add_clients(), algos[k]->SaveState());
      }
      FGL_RETURN_IF_ERROR(WriteCheckpoint(o.checkpoint_dir, ckpt));
    }
  }
  result.train_s = Seconds(train_start);

  // Round selection per the protocol; ties go to the earliest round.
  const RoundRecord* pick = &result.rounds.back();
  if (o.eval.round != EvalProtocol::Round::kLast) {
    const bool by_val = o.eval.round == EvalProtocol::Round::kBestVal;
    pick = &result.rounds.front();
    for (const RoundRecord& rec : result.rounds) {
      if ((by_val ? rec.val_acc : rec.test_acc) > (by_val ? pick->val_acc : pick->test_acc)) pick = &rec;
    }
  }
  result.reported_round = pick->round;
  result.test_acc = pick->test_acc;
  result.val_acc = pick->val_acc;
  result.protocol = absl::StrCat(o.eval.Card(), " shared=", o.shared_group.empty() ? "all" : o.shared_group,
                                 " split=", o.split, " partition=",
                                 partitioner->Fingerprint(), " clients=", o.clients,
                                 " partition_seed=", o.partition_seed);
  result.wall_s = Seconds(start);
  return result;
}

}  // namespace fgl::fl
