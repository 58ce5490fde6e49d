#include "fl/transport/server.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "fl/federation_setup.h"
#include "fl/proto/checkpoint.pb.h"
#include "fl/proto/transport.grpc.pb.h"
#include "fl/registry.h"
#include "fl/transport/chunked_stream.h"
#include "glog/logging.h"
#include "graph/io/file.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl::transport {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

constexpr uint32_t kServerCheckpointVersion = 1;
// A Pull with nothing to hand out returns WAIT after this long: a heartbeat, and the moment a
// client that went away without closing its connection is noticed.
constexpr auto kPollInterval = std::chrono::seconds(5);

// Compares secrets in time independent of where they differ.
bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

struct Task {
  proto::TaskKind kind = proto::WAIT;
  uint64_t id = 0;
  int round = 0;
  std::shared_ptr<const std::string> payload;
};

// The server's view of one client.
struct Slot {
  bool joined = false;
  bool connected = false;
  uint64_t session = 0;
  int64_t num_nodes = 0;
  std::optional<Task> pending;  // assigned, not pulled yet
  uint64_t awaited = 0;         // the task whose answer the round waits for (0: none)
  bool delivered = false;       // that task went out completely
  StreamBytes down, up;
  std::optional<absl::StatusOr<std::string>> answer;
  bool finished = false;  // received FINISH
};

// What one exchange with one client produced.
struct Outcome {
  bool delivered = false;
  absl::StatusOr<std::string> answer = absl::UnavailableError("not asked");
  StreamBytes down, up;
};

grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

}  // namespace

class FederationServer::Impl final : public proto::Federation::Service {
 public:
  Impl(FederationOptions run, ServerOptions options, std::map<int, std::string> tokens)
      : run_(std::move(run)), opt_(std::move(options)), tokens_(std::move(tokens)),
        slots_(run_.clients) {
    // Sessions of a previous server process (before a restart) must never match this one's.
    std::random_device rd;
    next_session_ = ((uint64_t{rd()} << 32) | rd()) & ~(uint64_t{1} << 63);
    if (next_session_ == 0) next_session_ = 1;
  }

  ~Impl() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }

  absl::Status Listen() {
    FGL_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> creds, MakeServerCredentials(opt_.tls));
    grpc::ServerBuilder builder;
    builder.AddListeningPort(opt_.listen, creds, &port_);
    builder.RegisterService(this);
    builder.SetMaxReceiveMessageSize(static_cast<int>(opt_.chunk_bytes + (1 << 16)));
    // Clients ping every 10 s so that a host that vanished without closing its sockets is noticed.
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
    server_ = builder.BuildAndStart();
    if (!server_ || port_ == 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", opt_.listen));
    LOG(INFO) << "listening on " << opt_.listen << " (port " << port_ << ")"
              << (opt_.tls.enabled() ? " with TLS" : " without TLS")
              << (tokens_.empty() ? "" : ", tokens required");
    return absl::OkStatus();
  }

  int port() const { return port_; }

  TransportStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  // --- gRPC handlers -------------------------------------------------------------------------

  grpc::Status Join(grpc::ServerContext*, const proto::JoinRequest* req, proto::JoinReply* reply) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status s = Authenticate(req->client_id(), req->token()); !s.ok()) {
      ++stats_.refused_joins;
      LOG(WARNING) << "refused a join: " << s.message();
      return ToGrpc(s);
    }
    if (req->run_fingerprint() != run_.Fingerprint()) {
      ++stats_.refused_joins;
      LOG(WARNING) << "refused client " << req->client_id() << ": it runs a different experiment";
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          absl::StrCat("client ", req->client_id(), " runs a different experiment: ",
                                       req->run_fingerprint(), " (server: ", run_.Fingerprint(), ")"));
    }
    if (req->num_clients() != run_.clients || req->num_nodes() <= 0 || req->num_features() <= 0 ||
        req->num_classes() <= 1 ||
        (num_features_ != 0 && (req->num_features() != num_features_ || req->num_classes() != num_classes_))) {
      ++stats_.refused_joins;
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          absl::StrCat("client ", req->client_id(), ": inconsistent shard (clients ",
                                       req->num_clients(), ", nodes ", req->num_nodes(), ", features ",
                                       req->num_features(), ", classes ", req->num_classes(), ")"));
    }
    num_features_ = req->num_features();
    num_classes_ = req->num_classes();
    Slot& slot = slots_[req->client_id()];
    const bool rejoin = slot.joined;
    slot.joined = true;
    slot.connected = true;
    slot.session = next_session_++;
    slot.num_nodes = req->num_nodes();
    slot.pending.reset();
    slot.finished = false;
    if (slot.awaited != 0 && !slot.answer) slot.answer = absl::UnavailableError("client rejoined");
    reply->set_session(slot.session);
    LOG(INFO) << "client " << req->client_id() << (rejoin ? " rejoined" : " joined") << " (session "
              << slot.session << ", " << req->num_nodes() << " nodes)";
    cv_.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status Pull(grpc::ServerContext* ctx, const proto::PullRequest* req,
                    grpc::ServerWriter<proto::Chunk>* writer) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (absl::Status s = Authenticate(req->client_id(), req->token()); !s.ok()) return ToGrpc(s);
    Slot& slot = slots_[req->client_id()];
    if (!slot.joined || slot.session != req->session()) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "unknown session: join again");
    }
    if (!slot.connected) {
      LOG(INFO) << "client " << req->client_id() << " is back";
      slot.connected = true;
    }
    const uint64_t session = slot.session;
    const auto poll_end = Clock::now() + kPollInterval;
    while (!slot.pending && !finished_ && slot.session == session && !ctx->IsCancelled() &&
           Clock::now() < poll_end) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
    if (slot.session != session) return grpc::Status(grpc::StatusCode::ABORTED, "superseded by a newer join");
    if (ctx->IsCancelled()) {
      Disconnect(req->client_id(), "connection lost while waiting for work");
      return grpc::Status::CANCELLED;
    }
    Task task;
    if (slot.pending) {
      task = std::move(*slot.pending);
      slot.pending.reset();
    } else if (finished_) {
      task.kind = proto::FINISH;
    }
    lock.unlock();
    proto::ChunkHeader header;
    header.set_kind(task.kind);
    header.set_task_id(task.id);
    header.set_round(task.round);
    static const std::string kEmpty;
    absl::StatusOr<StreamBytes> sent =
        WriteChunked(header, task.payload ? *task.payload : kEmpty, opt_.chunk_bytes,
                     [&](const proto::Chunk& c) { return writer->Write(c); });
    lock.lock();
    if (!sent.ok()) {
      if (slot.session == session) Disconnect(req->client_id(), "connection lost while sending work");
      return grpc::Status::CANCELLED;
    }
    if (task.kind == proto::FINISH) slot.finished = true;
    if (task.kind == proto::TRAIN || task.kind == proto::PREPARE) {
      stats_.payload_down += sent->payload;
      stats_.wire_down += sent->wire;
    } else if (task.kind == proto::EVALUATE) {
      stats_.eval_down += sent->wire;
    }
    if (task.id != 0 && slot.awaited == task.id) {
      slot.delivered = true;
      slot.down = *sent;
    }
    cv_.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status Push(grpc::ServerContext*, grpc::ServerReader<proto::Chunk>* reader,
                    proto::PushReply* reply) override {
    absl::StatusOr<Received> got = ReadChunked([&](proto::Chunk* c) { return reader->Read(c); },
                                               opt_.max_payload_bytes, "answer");
    if (!got.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.rejected_answers;
      LOG(WARNING) << "rejected an answer: " << got.status().message();
      return ToGrpc(got.status());
    }
    proto::Chunk extra;
    if (reader->Read(&extra)) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "answer: chunks after the payload");
    }
    const proto::ChunkHeader& h = got->header;
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status s = Authenticate(h.client_id(), h.token()); !s.ok()) {
      ++stats_.rejected_answers;
      LOG(WARNING) << "rejected an answer: " << s.message();
      return ToGrpc(s);
    }
    Slot& slot = slots_[h.client_id()];
    if (slot.session != h.session() || h.task_id() == 0 || slot.awaited != h.task_id() || slot.answer) {
      ++stats_.rejected_answers;
      reply->set_accepted(false);
      reply->set_reason(absl::StrCat("task ", h.task_id(), " is not awaited (late or unknown)"));
      return grpc::Status::OK;
    }
    if (!h.error().empty()) {
      slot.answer = absl::InternalError(absl::StrCat("client ", h.client_id(), " failed: ", h.error()));
    } else {
      slot.answer = std::move(got->payload);
    }
    slot.delivered = true;  // an answer proves the task arrived, even if Pull has not noted it yet
    slot.up = got->bytes;
    if (h.kind() == proto::EVALUATE) {
      stats_.eval_up += got->bytes.wire;
    } else {
      stats_.payload_up += got->bytes.payload;
      stats_.wire_up += got->bytes.wire;
    }
    reply->set_accepted(true);
    cv_.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status Stay(grpc::ServerContext* ctx, const proto::PullRequest* req, proto::PushReply*) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (absl::Status s = Authenticate(req->client_id(), req->token()); !s.ok()) return ToGrpc(s);
    Slot& slot = slots_[req->client_id()];
    const uint64_t session = req->session();
    if (!slot.joined || slot.session != session) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "unknown session: join again");
    }
    while (slot.session == session && !finished_ && !ctx->IsCancelled()) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
    }
    if (ctx->IsCancelled() && slot.session == session && !finished_) {
      Disconnect(req->client_id(), "connection lost");
    }
    return grpc::Status::OK;
  }

  // --- the rounds ----------------------------------------------------------------------------

  absl::StatusOr<FederationResult> Run(const std::function<void(const RoundRecord&)>& on_round);

 private:
  absl::Status Authenticate(int client, const std::string& token) const {
    if (client < 0 || client >= run_.clients) {
      return absl::InvalidArgumentError(absl::StrCat("client id ", client, " outside [0, ", run_.clients, ")"));
    }
    if (tokens_.empty()) return absl::OkStatus();
    auto it = tokens_.find(client);
    if (it == tokens_.end() || !SameSecret(it->second, token)) {
      return absl::UnauthenticatedError(absl::StrCat("client ", client, ": wrong token"));
    }
    return absl::OkStatus();
  }

  // Requires mu_.
  void Disconnect(int client, const std::string& why) {
    Slot& slot = slots_[client];
    if (slot.connected) LOG(WARNING) << "client " << client << " disconnected: " << why;
    slot.connected = false;
    slot.pending.reset();
    if (slot.awaited != 0 && !slot.answer) slot.answer = absl::UnavailableError(absl::StrCat("client ", client, " ", why));
    cv_.notify_all();
  }

  // Hands every task to its client and waits for all answers, disconnections or the deadline.
  std::map<int, Outcome> Exchange(const std::map<int, Task>& tasks) {
    std::map<int, Outcome> out;
    std::unique_lock<std::mutex> lock(mu_);
    std::vector<int> asked;
    for (const auto& [k, task] : tasks) {
      Slot& slot = slots_[k];
      if (!slot.joined || !slot.connected) {
        out[k].answer = absl::UnavailableError(absl::StrCat("client ", k, " is not connected"));
        continue;
      }
      slot.pending = task;
      slot.awaited = task.id;
      slot.delivered = false;
      slot.down = slot.up = StreamBytes();
      slot.answer.reset();
      asked.push_back(k);
    }
    cv_.notify_all();
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(opt_.round_deadline_s));
    cv_.wait_until(lock, deadline, [&] {
      for (int k : asked) {
        if (!slots_[k].answer) return false;
      }
      return true;
    });
    for (int k : asked) {
      Slot& slot = slots_[k];
      Outcome& o = out[k];
      o.delivered = slot.delivered;
      o.down = slot.down;
      const auto& payload = tasks.at(k).payload;
      o.down.payload = payload ? static_cast<int64_t>(payload->size()) : 0;
      o.up = slot.up;
      if (slot.answer) {
        o.answer = std::move(*slot.answer);
      } else {
        o.answer = absl::DeadlineExceededError(absl::StrCat("client ", k, " missed the ",
                                                            opt_.round_deadline_s, " s deadline"));
        ++stats_.dropped;
        Disconnect(k, "missed the deadline");
      }
      slot.awaited = 0;
      slot.answer.reset();
      slot.pending.reset();
    }
    return out;
  }

  std::vector<int> ConnectedClients() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int> ids;
    for (int k = 0; k < run_.clients; ++k) {
      if (slots_[k].joined && slots_[k].connected) ids.push_back(k);
    }
    return ids;
  }

  Task MakeTask(proto::TaskKind kind, int round, std::shared_ptr<const std::string> payload) {
    return Task{kind, next_task_++, round, std::move(payload)};
  }

  // Waits until `min_clients` (0: all) are connected, at most join_timeout_s.
  absl::Status WaitForClients(int min_clients);
  void Finish();

  FederationOptions run_;
  ServerOptions opt_;
  std::map<int, std::string> tokens_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  int64_t num_features_ = 0, num_classes_ = 0;
  uint64_t next_session_ = 1;
  uint64_t next_task_ = 1;  // only the driver thread assigns tasks
  bool finished_ = false;
  bool started_ = false;
  TransportStats stats_;
};

absl::Status FederationServer::Impl::WaitForClients(int min_clients) {
  const int need = min_clients > 0 ? std::min(min_clients, run_.clients) : run_.clients;
  std::unique_lock<std::mutex> lock(mu_);
  auto joined = [&] {
    int n = 0;
    for (const Slot& s : slots_) n += s.joined && s.connected;
    return n;
  };
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(opt_.join_timeout_s));
  if (!cv_.wait_until(lock, deadline, [&] { return joined() >= need; })) {
    return absl::DeadlineExceededError(absl::StrCat("only ", joined(), " of the ", need,
                                                    " clients needed were connected within ",
                                                    opt_.join_timeout_s, " s"));
  }
  if (!started_) LOG(INFO) << joined() << " of " << run_.clients << " clients joined; starting";
  started_ = true;
  return absl::OkStatus();
}

void FederationServer::Impl::Finish() {
  std::unique_lock<std::mutex> lock(mu_);
  finished_ = true;
  cv_.notify_all();
  // Give connected clients a moment to receive FINISH, so they exit instead of retrying.
  cv_.wait_for(lock, std::chrono::seconds(10), [&] {
    for (const Slot& s : slots_) {
      if (s.joined && s.connected && !s.finished) return false;
    }
    return true;
  });
}

absl::StatusOr<FederationResult> FederationServer::Impl::Run(
    const std::function<void(const RoundRecord&)>& on_round) {
  const Clock::time_point start = Clock::now();
  FGL_RETURN_IF_ERROR(ValidateOptions(run_));
  FGL_RETURN_IF_ERROR(WaitForClients(opt_.min_clients));
  FGL_ASSIGN_OR_RETURN(MethodFactories factories, FindMethod(run_.method));
  int64_t features, classes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    features = num_features_;
    classes = num_classes_;
  }
  FGL_ASSIGN_OR_RETURN(MethodConfig config, ServerMethodConfig(run_, features, classes));
  FGL_ASSIGN_OR_RETURN(std::unique_ptr<ServerAlgorithm> server, factories.server(config));
  const bool global_eval = run_.eval.model == EvalProtocol::Model::kGlobal;

  FederationResult result;
  int first_round = 1;
  const std::string ckpt_path = opt_.checkpoint_dir + "/server_checkpoint.pb";
  if (opt_.resume && !opt_.checkpoint_dir.empty() && graph::io::FileExists(ckpt_path)) {
    FGL_ASSIGN_OR_RETURN(std::string bytes, graph::io::ReadFileBytes(ckpt_path));
    proto::Checkpoint ckpt;
    if (!ckpt.ParseFromString(bytes)) return absl::DataLossError(absl::StrCat(ckpt_path, ": corrupt checkpoint"));
    if (ckpt.version() != kServerCheckpointVersion || ckpt.run_fingerprint() != run_.Fingerprint()) {
      return absl::FailedPreconditionError(absl::StrCat(ckpt_path, ": checkpoint of a different run"));
    }
    if (ckpt.round() < 1 || ckpt.round() > run_.rounds || ckpt.records_size() != ckpt.round()) {
      return absl::DataLossError(absl::StrCat(ckpt_path, ": inconsistent checkpoint"));
    }
    FGL_RETURN_IF_ERROR(server->RestoreState(ckpt.server()));
    for (const proto::RoundRecord& p : ckpt.records()) {
      result.rounds.push_back(RoundRecordFromProto(p));
      result.bytes_up += p.bytes_up();
      result.bytes_down += p.bytes_down();
    }
    first_round = ckpt.round() + 1;
    LOG(INFO) << "resumed from " << ckpt_path << " after round " << ckpt.round();
  }
  std::vector<int64_t> sizes(run_.clients, 0);
  const Clock::time_point train_start = Clock::now();

  if (first_round == 1) {
    std::map<int, Task> tasks;
    for (int k : ConnectedClients()) tasks[k] = MakeTask(proto::PREPARE, 0, nullptr);
    std::map<int, Outcome> outcomes = Exchange(tasks);
    for (auto& [k, o] : outcomes) {  // client-id order, as in the simulator
      if (!o.answer.ok()) {
        LOG(WARNING) << "preparation: client " << k << " left out: " << o.answer.status();
        continue;
      }
      if (o.answer->empty()) continue;  // the method sends nothing before round 1
      result.preparation_bytes_up += static_cast<int64_t>(o.answer->size());
      proto::Message m;
      absl::Status accepted = m.ParseFromString(*o.answer)
                                  ? server->AcceptPreparation(m)
                                  : absl::DataLossError("cannot parse preparation message");
      if (!accepted.ok()) LOG(WARNING) << "preparation: client " << k << " left out: " << accepted;
    }
    FGL_RETURN_IF_ERROR(server->FinishPreparation());
  }

  for (int r = first_round; r <= run_.rounds; ++r) {
    if (r > 1) FGL_RETURN_IF_ERROR(WaitForClients(std::max(1, opt_.min_clients_per_round)));
    const Clock::time_point round_start = Clock::now();
    RoundRecord rec;
    rec.round = r;
    rec.clients.resize(run_.clients);
    for (int k = 0; k < run_.clients; ++k) rec.clients[k].id = k;
    const RoundInfo info = ServerRound(run_, r);
    const std::vector<int> sampled = SampleClients(run_, r, run_.clients);
    std::map<int, Task> tasks;
    if (server->PersonalisedBroadcast()) {
      for (int k : sampled) {
        FGL_ASSIGN_OR_RETURN(proto::Message m, server->BroadcastTo(k, info));
        tasks[k] = MakeTask(proto::TRAIN, r, std::make_shared<const std::string>(m.SerializeAsString()));
      }
    } else {
      FGL_ASSIGN_OR_RETURN(proto::Message m, server->Broadcast(info));
      auto shared = std::make_shared<const std::string>(m.SerializeAsString());
      for (int k : sampled) tasks[k] = MakeTask(proto::TRAIN, r, shared);
    }
    std::map<int, Outcome> outcomes = Exchange(tasks);
    for (auto& [k, o] : outcomes) {  // client-id order: aggregation is deterministic
      ClientRecord& cr = rec.clients[k];
      if (o.delivered) {
        cr.bytes_down = o.down.payload;
        rec.bytes_down += cr.bytes_down;
      }
      absl::Status accepted = o.answer.status();
      if (o.answer.ok()) {
        cr.bytes_up = static_cast<int64_t>(o.answer->size());
        rec.bytes_up += cr.bytes_up;
        proto::Message reply;
        if (!reply.ParseFromString(*o.answer)) {
          accepted = absl::DataLossError("cannot parse reply");
        } else {
          if (auto loss = reply.scalars().find("train_loss"); loss != reply.scalars().end()) {
            cr.train_loss = loss->second;
          }
          accepted = server->Accumulate(reply);
        }
      }
      if (!accepted.ok()) {
        LOG(WARNING) << "round " << r << ": client " << k << " left out: " << accepted;
        ++rec.failed_clients;
        continue;
      }
      ++rec.participants;
      cr.participated = true;
    }
    FGL_RETURN_IF_ERROR(server->FinishRound(info));

    // Evaluation on every connected client: the global model, or each client's own.
    std::shared_ptr<const std::string> global;
    if (global_eval) {
      FGL_ASSIGN_OR_RETURN(proto::Message g, server->Broadcast(info));
      global = std::make_shared<const std::string>(g.SerializeAsString());
    }
    std::map<int, Task> evals;
    for (int k : ConnectedClients()) evals[k] = MakeTask(proto::EVALUATE, r, global);
    std::vector<EvalCounts> counts;
    std::vector<int64_t> eval_sizes;
    for (auto& [k, o] : Exchange(evals)) {
      proto::Message m;
      absl::Status s = o.answer.status();
      if (s.ok() && !m.ParseFromString(*o.answer)) s = absl::DataLossError("cannot parse evaluation");
      EvalCounts c;
      if (s.ok()) {
        auto get = [&](const char* key) -> int64_t {
          auto it = m.scalars().find(key);
          return it == m.scalars().end() ? -1 : static_cast<int64_t>(it->second);
        };
        c = {get("val_correct"), get("val_n"), get("test_correct"), get("test_n")};
        const int64_t nodes = get("num_nodes");
        if (c.val_correct < 0 || c.val_n < c.val_correct || c.test_correct < 0 ||
            c.test_n < c.test_correct || nodes <= 0) {
          s = absl::InvalidArgumentError("evaluation counts missing or inconsistent");
        } else {
          sizes[k] = nodes;
        }
      }
      if (!s.ok()) {
        LOG(WARNING) << "round " << r << ": client " << k << " not evaluated: " << s;
        continue;
      }
      counts.push_back(c);
      eval_sizes.push_back(sizes[k]);
      const RoundAccuracy acc = WeightedAccuracy(run_.eval, {c}, {1});
      rec.clients[k].val_acc = acc.val;
      rec.clients[k].test_acc = acc.test;
    }
    if (counts.empty()) return absl::UnavailableError(absl::StrCat("round ", r, ": no client left to evaluate"));
    const RoundAccuracy acc = WeightedAccuracy(run_.eval, counts, eval_sizes);
    rec.val_acc = acc.val;
    rec.test_acc = acc.test;
    rec.seconds = Seconds(round_start);
    result.bytes_up += rec.bytes_up;
    result.bytes_down += rec.bytes_down;
    result.rounds.push_back(rec);
    if (r == run_.rounds && global) result.final_global = *global;
    LOG(INFO) << "round " << r << ": " << rec.participants << " participants, " << rec.failed_clients
              << " left out, " << counts.size() << " evaluated, val " << rec.val_acc << " test "
              << rec.test_acc << " (" << rec.seconds << " s)";
    if (!opt_.checkpoint_dir.empty()) {
      proto::Checkpoint ckpt;
      ckpt.set_version(kServerCheckpointVersion);
      ckpt.set_run_fingerprint(run_.Fingerprint());
      ckpt.set_round(r);
      for (const RoundRecord& done : result.rounds) *ckpt.add_records() = RoundRecordToProto(done);
      FGL_ASSIGN_OR_RETURN(*ckpt.mutable_server(), server->SaveState());
      FGL_RETURN_IF_ERROR(WriteFileAtomically(ckpt_path, ckpt));
    }
    if (on_round) on_round(rec);  // after the checkpoint: a crash in it loses nothing
  }
  result.train_s = Seconds(train_start);
  Finish();
  for (int64_t s : sizes) result.client_sizes.push_back(s);
  SelectReportedRound(run_.eval, result);
  FGL_ASSIGN_OR_RETURN(result.protocol, ProtocolCard(run_));
  result.wall_s = Seconds(start);
  return result;
}

FederationServer::FederationServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FederationServer::~FederationServer() = default;

absl::StatusOr<std::unique_ptr<FederationServer>> FederationServer::Start(const FederationOptions& run,
                                                                          const ServerOptions& options) {
  if (run.clients < 1) return absl::InvalidArgumentError("need at least one client");
  if (options.chunk_bytes < 1024 || options.chunk_bytes > (16 << 20)) {
    return absl::InvalidArgumentError("chunk_bytes must be in [1 KiB, 16 MiB]");
  }
  if (options.round_deadline_s <= 0 || options.join_timeout_s <= 0) {
    return absl::InvalidArgumentError("round_deadline_s and join_timeout_s must be positive");
  }
  std::map<int, std::string> tokens;
  if (!options.tokens_file.empty()) {
    FGL_ASSIGN_OR_RETURN(tokens, LoadTokens(options.tokens_file));
    for (const auto& [id, token] : tokens) {
      if (id >= run.clients) {
        return absl::InvalidArgumentError(absl::StrCat(options.tokens_file, ": client ", id,
                                                       " outside [0, ", run.clients, ")"));
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
