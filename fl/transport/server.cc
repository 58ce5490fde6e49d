#include "fl/transport/server.h"

#include <chrono>
#include <csignal>
#include <map>

#include "absl/strings/str_cat.h"
#include "fl/federation_driver.h"
#include "fl/federation_setup.h"
#include "fl/registry.h"
#include "fl/transport/session_hub.h"
#include "glog/logging.h"
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
  Impl(FederationOptions run, ServerOptions options, std::map<int, std::string> tokens)
      : run_(std::move(run)), opt_(options),
        hub_(std::make_unique<SessionHub>(run_.spec.clients(), run_.Fingerprint(), std::move(options),
                                          std::move(tokens))) {}

  absl::Status Listen() { return hub_->Listen(); }
  int port() const { return hub_->port(); }
  TransportStats stats() const { return hub_->stats(); }
  absl::StatusOr<FederationResult> Run(const std::function<void(const RoundRecord&)>& on_round);

  int num_clients() const override { return run_.spec.clients(); }

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
      const proto::EvalCounts& e = *o.eval;
      if (!e.error().empty()) {
        a.eval = absl::InternalError(absl::StrCat("client ", k, ": ", e.error()));
      } else {
        a.eval_reports = std::move(o.eval_reports);
        a.eval = EvalCounts{e.val_correct(), e.val_n(), e.test_correct(), e.test_n(), e.num_nodes(),
                            e.global_correct(), e.global_n(), e.test_loss_sum()};
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

  FederationOptions run_;
  ServerOptions opt_;
  std::unique_ptr<SessionHub> hub_;
};

absl::StatusOr<FederationResult> FederationServer::Impl::Run(
    const std::function<void(const RoundRecord&)>& on_round) {
  const Clock::time_point start = Clock::now();
  FGL_RETURN_IF_ERROR(hub_->WaitForClients(opt_.min_clients));
  FGL_ASSIGN_OR_RETURN(MethodFactories factories, FindMethod(run_.spec.method()));
  const auto [features, classes] = hub_->FeaturesAndClasses();
  FGL_ASSIGN_OR_RETURN(MethodConfig config, ServerMethodConfig(run_, features, classes));
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<ServerAlgorithm> server, factories.server(config));
  DriverHooks hooks;
  hooks.on_round = [&](const RoundRecord& rec) {
    LOG(INFO) << "round " << rec.round << ": " << rec.participants << " participants, " << rec.failed_clients
              << " left out, val " << rec.val_acc << " test " << rec.test_acc << " (" << rec.seconds << " s)";
    if (on_round) on_round(rec);
  };
  hooks.after_checkpoint = [&](int round) {
    if (round == opt_.testonly_kill_after_checkpoint) {
      LOG(WARNING) << "killing the server after the checkpoint of round " << round << " (test)";
      std::raise(SIGKILL);
    }
  };
  FGL_ASSIGN_OR_RETURN(FederationResult result, DriveFederation(run_, *server, *this, hooks));
  result.wall_s = Seconds(start) + result.resumed_s;
  return result;
}

FederationServer::FederationServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FederationServer::~FederationServer() = default;

absl::StatusOr<std::unique_ptr<FederationServer>> FederationServer::Start(const FederationOptions& unresolved,
                                                                          const ServerOptions& options) {
  FGL_ASSIGN_OR_RETURN(FederationOptions run, ResolveOptions(unresolved));
  // The server checkpoints after every round (clients keep their own state and rejoin).
  run.checkpoint_dir = options.checkpoint_dir;
  run.checkpoint_every = options.checkpoint_dir.empty() ? 0 : 1;
  run.resume = options.resume;
  // One intra-op thread, as the simulator's server: a server-side step (FedTAD's distillation)
  // must not depend on how many threads its GEMMs and reductions are split over.
  nn::SetComputeThreads(1);
  if (options.chunk_bytes < 1024 || options.chunk_bytes > kMaxChunkBytes) {
    return absl::InvalidArgumentError("chunk_bytes must be in [1 KiB, 16 MiB]");
  }
  if (options.round_deadline_s <= 0 || options.join_timeout_s <= 0) {
    return absl::InvalidArgumentError("round_deadline_s and join_timeout_s must be positive");
  }
  std::map<int, std::string> tokens;
  if (!options.tokens_file.empty()) {
    FGL_ASSIGN_OR_RETURN(tokens, LoadTokens(options.tokens_file));
    for (const auto& [id, token] : tokens) {
      if (id >= run.spec.clients()) {
        return absl::InvalidArgumentError(absl::StrCat(options.tokens_file, ": client ", id,
                                                       " outside [0, ", run.spec.clients(), ")"));
      }
    }
  }
  auto impl = std::make_unique<Impl>(run, options, std::move(tokens));
  FGL_RETURN_IF_ERROR(impl->Listen());
  return std::unique_ptr<FederationServer>(new FederationServer(std::move(impl)));
}

int FederationServer::port() const { return impl_->port(); }

absl::StatusOr<FederationResult> FederationServer::Run(
    const std::function<void(const RoundRecord&)>& on_round) {
  return impl_->Run(on_round);
}

TransportStats FederationServer::stats() const { return impl_->stats(); }

}  // namespace fgl::fl::transport
