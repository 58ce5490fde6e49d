#include "fl/simulator.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <numeric>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "fl/algorithm.h"
#include "fl/federation_setup.h"
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

// Parses a serialised message, as a receiver would.
absl::StatusOr<proto::Message> Receive(const std::string& bytes, const std::string& what) {
  proto::Message m;
  if (!m.ParseFromString(bytes)) return absl::DataLossError(absl::StrCat("cannot parse ", what));
  return m;
}

constexpr uint32_t kCheckpointVersion = 1;

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

// The run; `stage` names what it is doing, for an exception's error.
absl::StatusOr<FederationResult> Run(const FederationOptions& options,
                                     const std::function<void(const RoundRecord&)>& on_round, std::string* stage) {
  const Clock::time_point start = Clock::now();
  *stage = "setup";
  FGL_ASSIGN_OR_RETURN(const FederationOptions o, ResolveOptions(options));
  // Clients train in parallel on `threads` workers, each with one intra-op thread, so the two
  // levels never oversubscribe the cores.
  const int workers = std::max(1, o.threads);
  nn::SetComputeThreads(1);
  FGL_ASSIGN_OR_RETURN(torch::Device device, nn::ParseDevice(o.device));
  FGL_ASSIGN_OR_RETURN(PartitionedDataset loaded, LoadPartitionedDataset(o));
  graph::Dataset& data = loaded.data;
  const graph::Partition& partition = loaded.partition;

  // Per-client subgraphs and splits, fixed by the partition seed (the papers reuse one split).
  std::vector<graph::Dataset> subsets;
  std::vector<graph::NodeSplit> splits;
  for (int k = 0; k < partition.num_clients(); ++k) {
    FGL_ASSIGN_OR_RETURN(graph::Dataset sub, graph::SubDataset(data, partition.clients[k]));
    FGL_ASSIGN_OR_RETURN(graph::NodeSplit split, ClientSplit(o, partition, sub, k));
    subsets.push_back(std::move(sub));
    splits.push_back(std::move(split));
  }

  std::string method = o.spec.method();
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

  *stage = "creating the method";
  FGL_ASSIGN_OR_RETURN(MethodFactories factories, FindMethod(method));
  FGL_ASSIGN_OR_RETURN(MethodConfig config,
                       ServerMethodConfig(o, data.num_features(), data.num_classes));
  if (ServerNeedsDataset(factories.params, config.params)) {
    const torch::Tensor none = torch::zeros({data.num_nodes()}, torch::kBool);
    FGL_ASSIGN_OR_RETURN(config.oracle_graph, MakeClientData(-1, data, {none, none, none}, device));
  }
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<ServerAlgorithm> server, factories.server(config));
  std::vector<std::unique_ptr<ClientAlgorithm>> algos;
  for (const auto& c : clients) {
    FGL_ASSIGN_OR_RETURN(std::unique_ptr<ClientAlgorithm> a,
                         factories.client(c, ClientMethodConfig(o, config, c->id)));
    algos.push_back(std::move(a));
  }

  FederationResult result;
  for (const auto& c : clients) result.client_sizes.push_back(c->data.num_nodes());
  const int k_total = static_cast<int>(clients.size());
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
    if (ckpt.clients_size() != k_total || ckpt.round() < 1 || ckpt.round() > o.spec.rounds() ||
        ckpt.records_size() != ckpt.round()) {
      return absl::DataLossError(absl::StrCat(ckpt_path, ": inconsistent checkpoint"));
    }
    *stage = "resuming from the checkpoint";
    FGL_RETURN_IF_ERROR(server->RestoreState(ckpt.server()));
    for (int k = 0; k < k_total; ++k) FGL_RETURN_IF_ERROR(algos[k]->RestoreState(ckpt.clients(k)));
    for (const proto::RoundRecord& p : ckpt.records()) {
      result.rounds.push_back(RoundRecordFromProto(p));
      result.bytes_up += p.bytes_up();
      result.bytes_down += p.bytes_down();
    }
    first_round = ckpt.round() + 1;
    LOG(INFO) << "resumed from " << ckpt_path << " after round " << ckpt.round();
  }
  const Clock::time_point train_start = Clock::now();
  *stage = "preparation";
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
  for (int r = first_round; r <= o.spec.rounds(); ++r) {
    const Clock::time_point round_start = Clock::now();
    *stage = absl::StrCat("round ", r, ": server");
    RoundRecord rec;
    rec.round = r;
    const RoundInfo info = ServerRound(o, r);
    const std::vector<int> sampled = SampleClients(o, r, k_total);
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
    // Clients train on the workers. This thread takes each reply as soon as it and every reply
    // before it are in (client-id order: aggregation is deterministic), so aggregation overlaps
    // the last clients' training and a reply's bytes live only until they are aggregated.
    const int n = static_cast<int>(sampled.size());
    std::mutex done_mu;
    std::condition_variable done_cv;
    std::vector<char> done(n, 0);
    auto train = [&](int i) {
      const int k = sampled[i];
      const Clock::time_point client_start = Clock::now();
      absl::StatusOr<proto::Message> received = Receive(down_for(i), "broadcast");
      if (!received.ok()) {
        replies[i] = received.status();
      } else {
        replies[i] = CatchExceptions(absl::StrCat("round ", r, ": client ", k, " training"),
                                     [&]() -> absl::StatusOr<std::string> {
                                       FGL_ASSIGN_OR_RETURN(proto::Message reply,
                                                            algos[k]->Train(*received, ClientRound(info, k)));
                                       return reply.SerializeAsString();
                                     });
      }
      train_seconds[i] = Seconds(client_start);
      {
        std::lock_guard<std::mutex> lock(done_mu);
        done[i] = 1;
      }
      done_cv.notify_one();
    };
    std::atomic<int> next{0};
    std::vector<std::thread> pool;
    // Joins the workers however this scope is left (an exception must not meet joinable threads).
    struct JoinAll {
      std::vector<std::thread>& threads;
      ~JoinAll() {
        for (std::thread& t : threads) {
          if (t.joinable()) t.join();
        }
      }
    } join_all{pool};
    if (workers > 1) {
      for (int w = 0; w < std::min(workers, n); ++w) {
        pool.emplace_back([&] {
          for (int i = next++; i < n; i = next++) train(i);
        });
      }
    }
    absl::Status failed;
    for (int i = 0; i < n; ++i) {
      if (pool.empty()) train(i);  // one worker: this thread, one client at a time
      {
        std::unique_lock<std::mutex> lock(done_mu);
        done_cv.wait(lock, [&] { return done[i] != 0; });
      }
      if (!failed.ok()) continue;
      const int k = sampled[i];
      ClientRecord& cr = rec.clients[k];
      cr.seconds = train_seconds[i];
      cr.bytes_down = static_cast<int64_t>(down_for(i).size());
      rec.bytes_down += cr.bytes_down;
      absl::StatusOr<proto::Message> reply = absl::UnknownError("no reply");
      if (!replies[i].ok()) {
        reply = replies[i].status();
      } else {
        cr.bytes_up = static_cast<int64_t>(replies[i]->size());
        rec.bytes_up += cr.bytes_up;
        reply = Receive(*replies[i], "reply");
        std::string().swap(*replies[i]);  // parsed: the bytes are not needed again
      }
      if (absl::Status st = AccumulateReply(*server, reply, cr, rec); !st.ok() && o.strict) failed = st;
    }
    for (std::thread& t : pool) t.join();
    pool.clear();
    FGL_RETURN_IF_ERROR(failed);
    FGL_RETURN_IF_ERROR(server->FinishRound(info));

    *stage = absl::StrCat("round ", r, ": evaluation");
    // Evaluation: every client scores the protocol's model on its own val/test nodes (in
    // parallel). Seeded per client, so dropout at evaluation does not depend on what ran before
    // (checkpoint/resume) or on the thread that runs it.
    proto::Message global;
    if (o.eval().model == EvalProtocol::Model::kGlobal) {
      FGL_ASSIGN_OR_RETURN(global, server->Broadcast(info));
    }
    std::vector<absl::StatusOr<EvalCounts>> counts(k_total, absl::UnknownError("not run"));
    ParallelFor(k_total, workers, [&](int k) {
      counts[k] = CatchExceptions(absl::StrCat("round ", r, ": client ", k, " evaluation"), [&] {
        return EvaluateClient(*algos[k], *clients[k],
                              o.eval().model == EvalProtocol::Model::kGlobal ? &global : nullptr, info);
      });
    });
    std::vector<EvalCounts> ok_counts;
    for (int k = 0; k < k_total; ++k) {
      FGL_RETURN_IF_ERROR(counts[k].status());
      ok_counts.push_back(*counts[k]);
      const RoundAccuracy acc = WeightedAccuracy(o.eval(), {*counts[k]}, {1});
      rec.clients[k].val_acc = acc.val;
      rec.clients[k].test_acc = acc.test;
    }
    const RoundAccuracy acc = WeightedAccuracy(o.eval(), ok_counts, result.client_sizes);
    rec.val_acc = acc.val;
    rec.test_acc = acc.test;
    rec.seconds = Seconds(round_start);
    result.bytes_up += rec.bytes_up;
    result.bytes_down += rec.bytes_down;
    result.rounds.push_back(rec);
    if (r == o.spec.rounds() && o.eval().model == EvalProtocol::Model::kGlobal) {
      result.final_global = global.SerializeAsString();
    }
    VLOG(1) << "round " << r << " val " << rec.val_acc << " test " << rec.test_acc;
    if (on_round) on_round(rec);
    if (!o.checkpoint_dir.empty() && o.checkpoint_every > 0 && r % o.checkpoint_every == 0) {
      proto::Checkpoint ckpt;
      ckpt.set_version(kCheckpointVersion);
      ckpt.set_run_fingerprint(o.Fingerprint());
      ckpt.set_round(r);
      for (const RoundRecord& done : result.rounds) *ckpt.add_records() = RoundRecordToProto(done);
      FGL_ASSIGN_OR_RETURN(*ckpt.mutable_server(), server->SaveState());
      for (int k = 0; k < k_total; ++k) {
        FGL_ASSIGN_OR_RETURN(*ckpt.add_clients(), algos[k]->SaveState());
      }
      FGL_RETURN_IF_ERROR(WriteFileAtomically(o.checkpoint_dir + "/checkpoint.pb", ckpt));
    }
  }
  result.train_s = Seconds(train_start);

  SelectReportedRound(o.eval(), result);
  FGL_ASSIGN_OR_RETURN(result.protocol, ProtocolCard(o));
  result.wall_s = Seconds(start);
  return result;
}

}  // namespace

absl::StatusOr<FederationResult> RunFederation(const FederationOptions& options,
                                               const std::function<void(const RoundRecord&)>& on_round) {
  // `stage` is read when an exception is caught, so the error names what the run was doing.
  std::string stage;
  return CatchExceptions(stage, [&] { return Run(options, on_round, &stage); });
}

}  // namespace fgl::fl
