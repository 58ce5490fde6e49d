#include "fl/transport/server.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>

#include "absl/strings/str_cat.h"
#include "fl/federation_driver.h"
#include "fl/registry.h"
#include "fl/run_setup.h"
#include "fl/transport/session_hub.h"
#include "glog/logging.h"
#include "graph/datasets.h"
#include "graph/io/file.h"
#include "nn/threads.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl::transport {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

std::string WithoutHeader(proto::Message m) {
  m.clear_header();
  return m.SerializeAsString();
}

}  // namespace

// The clients behind the session hub, as the federation driver's ClientChannel: what is here is
// only the translation between the driver's tasks and answers and the wire's.
class FederationServer::Impl final : public ClientChannel {
 public:
  Impl(ResolvedOptions run, ServerOptions options, std::map<int, std::string> tokens)
      : run_(std::move(run)), opt_(options),
        hub_(std::make_unique<SessionHub>(run_->spec.clients(), run_->Fingerprint(), std::move(options),
                                          std::move(tokens))) {}

  void ExpectShape(int64_t num_features, int64_t num_classes) { hub_->ExpectShape(num_features, num_classes); }
  absl::Status Listen() { return hub_->Listen(); }
  // The per-run tokens file this server wrote (removed once the run is over), if any.
  std::string run_tokens_file;
  int port() const { return hub_->port(); }
  TransportStats stats() const { return hub_->stats(); }
  absl::StatusOr<proto::FederationResult> Run(const std::function<void(const proto::RoundRecord&)>& on_round);

  int num_clients() const override { return run_->spec.clients(); }

  // Round 1 waited for min_clients before the server was made (Run); later rounds wait for
  // min_clients_per_round, so a dropped client may rejoin meanwhile.
  absl::Status BeforeRound(int round) override {
    return round > 1 ? hub_->WaitForClients(std::max(1, opt_.min_clients_per_round)) : absl::OkStatus();
  }

  std::vector<int> Reachable() override { return hub_->ConnectedClients(); }

  void Exchange(const std::map<int, ClientTask>& client_tasks,
                const std::function<void(int, ClientAnswer&)>& on_answer) override {
    hub_->Exchange(ToWire(client_tasks), [&](int k, Outcome& o) {
      ClientAnswer a = ToAnswer(k, o, client_tasks.at(k));
      on_answer(k, a);
    });
  }

  void Finish() override { hub_->Finish(); }

 private:
  // The driver's tasks as they go on the wire: an evaluation model that the training message
  // repeats (FedAvg and kin: the next broadcast carries the very same tensors) is not sent twice.
  // Checked byte for byte, never assumed.
  std::map<int, Task> ToWire(const std::map<int, ClientTask>& client_tasks) {
    std::map<const proto::Message*, std::shared_ptr<const std::string>> stripped;  // per distinct message
    auto without_header = [&](const SharedMessage& m) {
      auto& s = stripped[m.message.get()];
      if (!s) s = std::make_shared<const std::string>(WithoutHeader(*m.message));
      return s;
    };
    std::map<int, Task> tasks;
    for (const auto& [k, t] : client_tasks) {
      const proto::TaskKind kind = t.kind == ClientTask::Kind::kTrain     ? proto::TRAIN
                                   : t.kind == ClientTask::Kind::kPrepare ? proto::PREPARE
                                                                          : proto::EVALUATE;
      Task task = hub_->MakeTask(kind, kind == proto::TRAIN ? t.round : t.eval_round,
                           kind == proto::TRAIN ? t.message.bytes : nullptr);
      task.exchange = t.exchange;
      if (t.eval_round > 0) {
        task.eval_round = t.eval_round;
        if (!t.eval_model.message) {
          task.eval_own_model = true;
        } else {
          task.eval_header = t.eval_model.message->header();
          task.eval_reuses_train = kind == proto::TRAIN && *without_header(t.message) == *without_header(t.eval_model);
          if (!task.eval_reuses_train) task.eval_payload = t.eval_model.bytes;
        }
      }
      tasks.emplace(k, std::move(task));
    }
    return tasks;
  }

  // The driver's view of what one task brought back.
  static ClientAnswer ToAnswer(int k, Outcome& o, const ClientTask& client_task) {
    ClientAnswer a;
    a.status = o.answer.status();
    if (o.delivered) a.bytes_down = o.down.payload;
    if (o.eval) {
      if (!o.eval->error().empty()) {
        a.eval = absl::InternalError(absl::StrCat("client ", k, ": ", o.eval->error()));
      } else {
        a.eval_reports = std::move(o.eval_reports);
        a.eval = std::move(*o.eval);  // the counts whole, as EvaluateClient returned them
      }
    }
    if (!o.answer.ok()) return a;
    a.bytes_up = static_cast<int64_t>(o.answer->size());
    if (client_task.kind == ClientTask::Kind::kTrain) {
      a.reports = std::move(o.reports);
      if (o.parsed) {
        a.reply = std::move(*o.parsed);
      } else if (proto::Message m; m.ParseFromString(*o.answer)) {
        a.reply = std::move(m);
      } else {
        a.status = absl::DataLossError("cannot parse reply");
      }
    } else if (client_task.kind == ClientTask::Kind::kPrepare && !o.answer->empty()) {
      if (proto::Message m; m.ParseFromString(*o.answer)) {
        a.reply = std::move(m);
      } else {
        a.status = absl::DataLossError("cannot parse preparation message");
      }
    } else if (client_task.kind == ClientTask::Kind::kPrepare) {
      a.bytes_up = 0;  // the method sends nothing before round 1
    }
    return a;
  }

  ResolvedOptions run_;
  ServerOptions opt_;
  std::unique_ptr<SessionHub> hub_;
};

absl::StatusOr<proto::FederationResult> FederationServer::Impl::Run(
    const std::function<void(const proto::RoundRecord&)>& on_round) {
  const Clock::time_point start = Clock::now();
  FGL_RETURN_IF_ERROR(hub_->WaitForClients(opt_.min_clients));
  FGL_ASSIGN_OR_RETURN(MethodFactories factories, FindMethod(run_->spec.method()));
  const auto [features, classes] = hub_->FeaturesAndClasses();
  FGL_ASSIGN_OR_RETURN(MethodConfig config, ServerMethodConfig(*run_, features, classes));
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<ServerAlgorithm> server, factories.server(config));
  DriverHooks hooks;
  hooks.on_round = [&](const proto::RoundRecord& rec) {
    LOG(INFO) << "round " << rec.round() << ": " << rec.participants() << " participants, " << rec.failed_clients()
              << " left out, val " << rec.val_acc() << " test " << rec.test_acc() << " (" << rec.seconds() << " s)";
    if (on_round) on_round(rec);
  };
  hooks.after_checkpoint = [&](int round) {
    if (round == opt_.testonly_kill_after_checkpoint) {
      LOG(WARNING) << "killing the server after the checkpoint of round " << round << " (test)";
      std::raise(SIGKILL);
    }
  };
  FGL_ASSIGN_OR_RETURN(proto::FederationResult result, DriveFederation(run_, *server, *this, hooks));
  result.mutable_result()->set_wall_s(Seconds(start) + result.resumed_s());
  return result;
}

FederationServer::FederationServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FederationServer::~FederationServer() = default;

absl::StatusOr<std::unique_ptr<FederationServer>> FederationServer::Start(const ResolvedOptions& resolved,
                                                                          const ServerOptions& options) {
  if (resolved->spec.centralized()) {
    return absl::InvalidArgumentError("a centralized run pools its clients into one: there are none to serve");
  }
  // The server checkpoints after every round (clients keep their own state and rejoin).
  const ResolvedOptions run =
      resolved.WithCheckpoints(options.checkpoint_dir, options.checkpoint_dir.empty() ? 0 : 1, options.resume);
  // One intra-op thread, as the simulator's server: a server-side step (FedTAD's distillation)
  // must not depend on how many threads its GEMMs and reductions are split over.
  nn::SetComputeThreads(1);
  if (options.chunk_bytes < 1024 || options.chunk_bytes > kMaxChunkBytes) {
    return absl::InvalidArgumentError("chunk_bytes must be in [1 KiB, 16 MiB]");
  }
  if (options.round_deadline_s <= 0 || options.join_timeout_s <= 0) {
    return absl::InvalidArgumentError("round_deadline_s and join_timeout_s must be positive");
  }
  if (!(options.first_message_timeout_s > 0 && options.first_message_timeout_s <= 3600) ||
      options.max_unauthenticated_streams < 1) {
    return absl::InvalidArgumentError(
        "first_message_timeout_s must be in (0, 3600] and max_unauthenticated_streams at least 1");
  }
  const int n = run->spec.clients();
  std::map<int, std::string> tokens;
  std::string run_tokens_file = options.run_tokens_file;
  if (!options.tokens_file.empty()) {
    FGL_ASSIGN_OR_RETURN(tokens, LoadTokens(options.tokens_file));
    for (const auto& [id, token] : tokens) {
      if (id >= n) {
        return absl::InvalidArgumentError(absl::StrCat(options.tokens_file, ": client ", id,
                                                       " outside [0, ", n, ")"));
      }
    }
  } else {
    // Without tokens any local process could join as a client; so this run makes its own, and
    // only processes that can read the owner's 0600 file (join, by default) get in.
    if (!IsLoopback(options.listen)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "listening on ", options.listen, " needs --tokens_file: a server without one listens only on "
          "loopback, with per-run tokens"));
    }
    if (absl::StatusOr<int> port = PortOf(options.listen); run_tokens_file.empty() && port.ok() && *port != 0) {
      FGL_ASSIGN_OR_RETURN(run_tokens_file, DefaultRunTokensPath(*port));
    }
    // A resumed run keeps its tokens, so that the clients waiting to rejoin still get in.
    if (options.resume && !run_tokens_file.empty() && graph::io::FileExists(run_tokens_file)) {
      if (absl::StatusOr<std::map<int, std::string>> kept = LoadTokens(run_tokens_file);
          kept.ok() && static_cast<int>(kept->size()) == n && kept->rbegin()->first == n - 1) {
        tokens = *std::move(kept);
        LOG(INFO) << "resuming with the per-run tokens in " << run_tokens_file;
      }
    }
    if (tokens.empty()) {
      FGL_ASSIGN_OR_RETURN(tokens, GenerateTokens(n));
    }
  }
  const bool write_run_tokens = options.tokens_file.empty();
  const std::map<int, std::string> run_tokens = write_run_tokens ? tokens : std::map<int, std::string>();
  auto impl = std::make_unique<Impl>(run, options, std::move(tokens));
  // The run's shard shape, where this host has the dataset (always for csbm, which needs no
  // files); elsewhere the first quorum of clients fixes it (SessionHub::WaitForClients).
  if (const std::string data_dir = graph::ResolveDataDir(run->spec.data_dir());
      graph::DatasetPresent(run->spec.dataset(), data_dir)) {
    absl::StatusOr<graph::Dataset> data = graph::LoadDataset(run->spec.dataset(), data_dir, run->spec.partition_seed());
    if (data.ok()) {
      LOG(INFO) << "clients must report " << data->num_features() << " features and " << data->num_classes
                << " classes (" << run->spec.dataset() << " on this host)";
      impl->ExpectShape(data->num_features(), data->num_classes);
    } else {
      LOG(WARNING) << "cannot read " << run->spec.dataset() << " here (" << data.status()
                   << "); the first quorum of clients fixes the shard shape";
    }
  }
  FGL_RETURN_IF_ERROR(impl->Listen());
  if (write_run_tokens) {
    if (run_tokens_file.empty()) {
      FGL_ASSIGN_OR_RETURN(run_tokens_file, DefaultRunTokensPath(impl->port()));
    }
    FGL_RETURN_IF_ERROR(WriteTokensFile(run_tokens_file, run_tokens));
    impl->run_tokens_file = run_tokens_file;
    LOG(INFO) << "per-run client tokens in " << run_tokens_file << " (mode 0600; join on this host reads them)";
  }
  return std::unique_ptr<FederationServer>(new FederationServer(std::move(impl)));
}

int FederationServer::port() const { return impl_->port(); }

absl::StatusOr<proto::FederationResult> FederationServer::Run(
    const std::function<void(const proto::RoundRecord&)>& on_round) {
  absl::StatusOr<proto::FederationResult> result = impl_->Run(on_round);
  // Kept after a failure, so that a --resume lets the waiting clients back in.
  if (result.ok() && !impl_->run_tokens_file.empty()) std::remove(impl_->run_tokens_file.c_str());
  return result;
}

TransportStats FederationServer::stats() const { return impl_->stats(); }

}  // namespace fgl::fl::transport
