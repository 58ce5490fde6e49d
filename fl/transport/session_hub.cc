#include "fl/transport/session_hub.h"

#include <chrono>
#include <csignal>
#include <limits>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl::transport {
namespace {

using Clock = std::chrono::steady_clock;

// Compares secrets in time independent of where they differ.
bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

}  // namespace

struct SessionHub::Slot {
  bool joined = false;
  bool connected = false;
  uint64_t session = 0;
  int64_t num_nodes = 0;
  int64_t num_features = 0, num_classes = 0;  // the shard shape this client claimed
  std::string peer;  // the connection it joined on (its session stream comes on the same one)
  std::optional<Task> pending;  // assigned, not pulled yet
  uint64_t awaited = 0;         // the task whose answer the round waits for (0: none)
  bool delivered = false;       // that task went out completely
  StreamBytes down, up;
  std::optional<absl::StatusOr<std::string>> answer;
  std::optional<proto::EvalCounts> eval;  // with the answer, when the task had an evaluation
  std::map<std::string, double> reports;       // with a TRAIN answer
  std::map<std::string, double> eval_reports;  // with an evaluation
  std::shared_ptr<proto::Message> parsed;  // the answer, parsed on arrival (TRAIN)
  bool finished = false;  // received FINISH
  std::condition_variable wake;  // this client's Session handler waits on it
  grpc::ServerContext* ctx = nullptr;  // of the open Session, to end it from the round driver
};

SessionHub::SessionHub(int num_clients, std::string run_fingerprint, ServerOptions options,
                       std::map<int, std::string> tokens)
    : num_clients_(num_clients), fingerprint_(std::move(run_fingerprint)), opt_(std::move(options)),
      tokens_(std::move(tokens)), slots_(num_clients) {
  // Sessions of a previous server process (before a restart) must never match this one's.
  std::random_device rd;
  next_session_ = ((uint64_t{rd()} << 32) | rd()) & ~(uint64_t{1} << 63);
  if (next_session_ == 0) next_session_ = 1;
}

SessionHub::~SessionHub() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  {
    std::lock_guard<std::mutex> lock(hello_mu_);
    stopping_ = true;
  }
  hello_cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void SessionHub::ExpectShape(int64_t num_features, int64_t num_classes) {
  std::lock_guard<std::mutex> lock(mu_);
  num_features_ = num_features;
  num_classes_ = num_classes;
  shape_fixed_ = true;
}

absl::Status SessionHub::Listen() {
  if (!watchdog_.joinable()) watchdog_ = std::thread([this] { WatchFirstMessages(); });
  FGL_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> creds, MakeServerCredentials(opt_.tls));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(opt_.listen, creds, &port_);
  builder.RegisterService(this);
  builder.SetMaxReceiveMessageSize(kMaxChunkBytes + (1 << 16));  // any peer's chunk size
  // Clients ping every 10 s so that a host that vanished without closing its sockets is noticed.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Every client holds one blocking call (its Session) for the whole run; keep enough polling
  // threads that gRPC never creates and destroys one per call (thread start-up showed up as
  // the server's largest kernel cost when each task was a call of its own).
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 2);
  // Models are megabytes: a large HTTP/2 window lets a chunk go without waiting for window
  // updates (the 64 KiB default made a 369 KB push take milliseconds on loopback).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              std::max(8, 2 * num_clients_ + 2));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", opt_.listen));
  LOG(INFO) << "listening on " << opt_.listen << " (port " << port_ << ")"
            << (opt_.tls.enabled() ? " with TLS" : " without TLS")
            << (tokens_.empty() ? "" : ", tokens required");
  return absl::OkStatus();
}

int SessionHub::port() const { return port_; }

TransportStats SessionHub::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

grpc::Status SessionHub::Join(grpc::ServerContext* ctx, const proto::JoinRequest* req, proto::JoinReply* reply) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = Authenticate(req->client_id(), req->token()); !s.ok()) {
    ++stats_.refused_joins;
    LOG(WARNING) << "refused a join: " << s.message();
    return ToGrpc(s);
  }
  // The run's spec (its fingerprint) and shape go only to a caller that proved a token: they are
  // what an intruder would need to pass for a client.
  const bool authenticated = !tokens_.empty();
  if (req->run_fingerprint() != fingerprint_) {
    ++stats_.refused_joins;
    LOG(WARNING) << "refused client " << req->client_id() << ": it runs a different experiment";
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("client ", req->client_id(), " runs a different experiment",
                                     authenticated ? absl::StrCat(": ", req->run_fingerprint(), " (server: ",
                                                                  fingerprint_, ")")
                                                   : std::string()));
  }
  // A client's shape claim holds for that client only: it must match the run's once that is fixed
  // (the dataset's, or the first quorum's), so no joiner can impose its shape on the others.
  const bool mismatch = shape_fixed_ && (req->num_features() != num_features_ || req->num_classes() != num_classes_);
  if (req->num_clients() != num_clients_ || req->num_nodes() <= 0 || req->num_features() <= 0 ||
      req->num_classes() <= 1 || mismatch) {
    ++stats_.refused_joins;
    const std::string why = absl::StrCat(
        "client ", req->client_id(), ": inconsistent shard (clients ", req->num_clients(), ", nodes ",
        req->num_nodes(), ", features ", req->num_features(), ", classes ", req->num_classes(), ")",
        mismatch && authenticated ? absl::StrCat("; the run's shards have ", num_features_, " features, ",
                                                 num_classes_, " classes")
                                  : std::string());
    LOG(WARNING) << "refused " << why;
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, why);
  }
  Slot& slot = slots_[req->client_id()];
  const bool rejoin = slot.joined;
  if (slot.ctx != nullptr) slot.ctx->TryCancel();  // the previous session's stream
  slot.ctx = nullptr;
  slot.joined = true;
  slot.connected = true;
  slot.session = next_session_++;
  slot.num_nodes = req->num_nodes();
  slot.num_features = req->num_features();
  slot.num_classes = req->num_classes();
  slot.peer = ctx != nullptr ? ctx->peer() : std::string();
  slot.pending.reset();
  slot.finished = false;
  if (slot.awaited != 0 && !slot.answer) slot.answer = absl::UnavailableError("client rejoined");
  reply->set_session(slot.session);
  LOG(INFO) << "client " << req->client_id() << (rejoin ? " rejoined" : " joined") << " (session "
            << slot.session << ", " << req->num_nodes() << " nodes)";
  slot.wake.notify_all();
  driver_cv_.notify_all();
  return grpc::Status::OK;
}

// One client's session: hands out its tasks and takes its answers on one stream, so a task
// costs no new call, and a broken connection (crash, lost host) ends the stream at once.
grpc::Status SessionHub::Session(grpc::ServerContext* ctx,
                     grpc::ServerReaderWriter<proto::Chunk, proto::Chunk>* stream) {
  // Until its first message this stream is anyone's, and it holds one of the server's threads
  // (the synchronous API blocks in Read): a bounded number may wait, each for a bounded time.
  // A stream on a connection that has just joined with a token (one such stream per connection)
  // passes the cap, so that a flood of silent streams cannot lock the real clients out.
  const std::string peer = ctx->peer();
  bool joined_peer = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Slot& s : slots_) joined_peer = joined_peer || (s.joined && !tokens_.empty() && s.peer == peer);
  }
  {
    std::lock_guard<std::mutex> lock(hello_mu_);
    if (joined_peer) {
      for (const auto& [other, awaiting] : awaiting_hello_) joined_peer = joined_peer && awaiting.peer != peer;
    }
    if (!joined_peer && awaiting_hello_.size() >= static_cast<size_t>(opt_.max_unauthenticated_streams)) {
      LOG_EVERY_N(WARNING, 100) << "refused a session stream: " << awaiting_hello_.size()
                                << " are already waiting for their first message (" << google::COUNTER
                                << " refused so far)";
      std::lock_guard<std::mutex> stats_lock(mu_);
      ++stats_.refused_streams;
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "too many session streams waiting for their first message; retry");
    }
    Awaiting& awaiting = awaiting_hello_[ctx];
    awaiting.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(opt_.first_message_timeout_s));
    awaiting.peer = peer;
  }
  hello_cv_.notify_all();
  proto::Chunk hello;
  const bool read = stream->Read(&hello);
  bool silent = false;
  {
    std::lock_guard<std::mutex> lock(hello_mu_);
    silent = awaiting_hello_[ctx].cancelled;
    awaiting_hello_.erase(ctx);  // before this handler returns: the watchdog must never see a stale ctx
  }
  if (silent) {
    LOG_EVERY_N(WARNING, 100) << "closed a session stream that sent nothing within "
                              << opt_.first_message_timeout_s << " s (" << google::COUNTER << " so far)";
    std::lock_guard<std::mutex> stats_lock(mu_);
    ++stats_.silent_streams;
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "session: no first message in time");
  }
  if (!read || !hello.has_header()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "session: expected a header first");
  }
  const int id = hello.header().client_id();
  std::unique_lock<std::mutex> lock(mu_);
  if (absl::Status s = Authenticate(id, hello.header().token()); !s.ok()) return ToGrpc(s);
  Slot& slot = slots_[id];
  const uint64_t session = hello.header().session();
  if (!slot.joined || slot.session != session) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "unknown session: join again");
  }
  if (!slot.connected) LOG(INFO) << "client " << id << " is back";
  // One stream per session: a second one (a client never opens it) ends the first, so that
  // streams, and the threads they hold, stay bounded by the clients even for a token's holder.
  if (slot.ctx != nullptr && slot.ctx != ctx) slot.ctx->TryCancel();
  slot.connected = true;
  slot.ctx = ctx;
  auto end = [&](const grpc::Status& status, const std::string& why) {
    if (slot.session == session && slot.ctx == ctx) {
      if (!why.empty()) Disconnect(id, why);
      slot.ctx = nullptr;
    }
    return status;
  };
  for (;;) {
    while (!slot.pending && !finished_ && slot.session == session && slot.ctx == ctx && !ctx->IsCancelled()) {
      slot.wake.wait_for(lock, std::chrono::milliseconds(200));
    }
    if (slot.session != session) return grpc::Status(grpc::StatusCode::ABORTED, "superseded by a newer join");
    if (slot.ctx != ctx) return grpc::Status(grpc::StatusCode::ABORTED, "superseded by a newer stream");
    if (ctx->IsCancelled()) return end(grpc::Status::CANCELLED, "connection lost");
    Task task;
    if (slot.pending) {
      task = std::move(*slot.pending);
      slot.pending.reset();
    } else {
      task.kind = proto::FINISH;
    }
    lock.unlock();
    int64_t eval_bytes = 0;
    absl::StatusOr<StreamBytes> sent = SendTask(task, stream, eval_bytes);
    lock.lock();
    if (!sent.ok()) return end(grpc::Status::CANCELLED, "connection lost while sending work");
    if (task.kind == proto::TRAIN || task.kind == proto::PREPARE) {
      stats_.payload_down += sent->payload - eval_bytes;
      stats_.wire_down += sent->wire - eval_bytes;
      stats_.eval_down += eval_bytes;
    } else if (task.kind == proto::EVALUATE) {
      stats_.eval_down += sent->wire;
    }
    if (slot.session == session && slot.awaited == task.id) {
      slot.delivered = true;
      slot.down = *sent;
    }
    if (task.kind == proto::FINISH) {
      slot.finished = true;
      driver_cv_.notify_all();
      return end(grpc::Status::OK, "");
    }
    lock.unlock();
    absl::StatusOr<Received> got = ReadChunked([&](proto::Chunk* c) { return stream->Read(c); },
                                               opt_.max_payload_bytes, "answer");
    // Parsed here, while other clients still train; the round only has to aggregate.
    std::shared_ptr<proto::Message> parsed;
    if (got.ok() && task.kind == proto::TRAIN && got->header.error().empty()) {
      parsed = std::make_shared<proto::Message>();
      if (!parsed->ParseFromString(got->payload)) parsed.reset();  // the round reports it
    }
    lock.lock();
    if (!got.ok()) {
      if (!absl::IsUnavailable(got.status())) {
        ++stats_.rejected_answers;
        LOG(WARNING) << "client " << id << ": malformed answer: " << got.status().message();
      }
      return end(ToGrpc(got.status()), absl::IsUnavailable(got.status())
                                           ? "connection lost while working on a task"
                                           : std::string(got.status().message()));
    }
    const proto::ChunkHeader& h = got->header;
    if (slot.session != session || h.task_id() != task.id || slot.awaited != task.id || slot.answer) {
      ++stats_.rejected_answers;  // late: the round gave up on this task
      continue;
    }
    if (!h.error().empty()) {
      slot.answer = absl::InternalError(absl::StrCat("client ", id, " failed: ", h.error()));
    } else {
      slot.answer = std::move(got->payload);
      slot.parsed = std::move(parsed);
    }
    slot.delivered = true;
    slot.up = got->bytes;
    if (h.has_eval()) slot.eval = h.eval();
    slot.reports.clear();
    for (const auto& [name, value] : h.reports()) slot.reports[name] = value;
    slot.eval_reports.clear();
    for (const auto& [name, value] : h.eval_reports()) slot.eval_reports[name] = value;
    if (task.kind == proto::EVALUATE) {
      stats_.eval_up += got->bytes.wire;
    } else {
      stats_.eval_up += static_cast<int64_t>(h.eval().ByteSizeLong());
      stats_.payload_up += got->bytes.payload;
      stats_.wire_up += got->bytes.wire;
    }
    driver_cv_.notify_all();
  }
}

absl::StatusOr<StreamBytes> SessionHub::SendTask(const Task& task,
                                     grpc::ServerReaderWriter<proto::Chunk, proto::Chunk>* stream,
                                     int64_t& eval_bytes) {
  proto::ChunkHeader header;
  header.set_kind(task.kind);
  header.set_task_id(task.id);
  header.set_round(task.round);
  header.set_exchange(task.exchange);
  static const std::string kEmpty;
  const std::string* payload = task.payload ? task.payload.get() : &kEmpty;
  std::string joined;  // the evaluation model first, then the task's own message
  if (task.eval_round > 0) {
    header.set_eval_round(task.eval_round);
    header.set_eval_reuses_train(task.eval_reuses_train);
    header.set_eval_own_model(task.eval_own_model);
    *header.mutable_eval_header() = task.eval_header;
    if (task.eval_payload) {
      eval_bytes = static_cast<int64_t>(task.eval_payload->size());
      header.set_eval_payload_bytes(eval_bytes);
      joined = *task.eval_payload + *payload;
      payload = &joined;
    }
  }
  return WriteChunked(header, *payload, opt_.chunk_bytes,
                      [&](const proto::Chunk& c) { return stream->Write(c); });
}

absl::Status SessionHub::Authenticate(int client, const std::string& token) const {
  if (client < 0 || client >= num_clients_) {
    // The number of clients is part of the run's spec: only a run without tokens tells it.
    return absl::InvalidArgumentError(
        tokens_.empty() ? absl::StrCat("client id ", client, " outside [0, ", num_clients_, ")")
                        : absl::StrCat("client id ", client, " is not one of this run's"));
  }
  if (tokens_.empty()) return absl::OkStatus();
  auto it = tokens_.find(client);
  if (it == tokens_.end() || !SameSecret(it->second, token)) {
    return absl::UnauthenticatedError(absl::StrCat("client ", client, ": wrong token"));
  }
  return absl::OkStatus();
}

// Requires mu_.
void SessionHub::Disconnect(int client, const std::string& why) {
  Slot& slot = slots_[client];
  if (slot.connected) LOG(WARNING) << "client " << client << " disconnected: " << why;
  slot.connected = false;
  slot.pending.reset();
  if (slot.awaited != 0 && !slot.answer) slot.answer = absl::UnavailableError(absl::StrCat("client ", client, " ", why));
  slot.wake.notify_all();
  driver_cv_.notify_all();
}

// Requires mu_ and an answer (or error) in the slot: moves it out and closes the task.
Outcome SessionHub::TakeOutcome(int k, const Task& task) {
  Slot& slot = slots_[k];
  Outcome o;
  o.delivered = slot.delivered;
  o.down = slot.down;
  o.down.payload = task.payload ? static_cast<int64_t>(task.payload->size()) : 0;
  o.up = slot.up;
  o.eval = std::move(slot.eval);
  o.reports = std::move(slot.reports);
  slot.reports.clear();
  o.eval_reports = std::move(slot.eval_reports);
  slot.eval_reports.clear();
  o.parsed = std::move(slot.parsed);
  slot.eval.reset();
  o.answer = std::move(*slot.answer);
  slot.awaited = 0;
  slot.answer.reset();
  slot.pending.reset();
  return o;
}

std::vector<int> SessionHub::ConnectedClients() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> ids;
  for (int k = 0; k < num_clients_; ++k) {
    if (slots_[k].joined && slots_[k].connected) ids.push_back(k);
  }
  return ids;
}

Task SessionHub::MakeTask(proto::TaskKind kind, int round, std::shared_ptr<const std::string> payload) {
  return Task{kind, next_task_++, round, std::move(payload)};
}

void SessionHub::WatchFirstMessages() {
  std::unique_lock<std::mutex> lock(hello_mu_);
  while (!stopping_) {
    Clock::time_point next = Clock::time_point::max();
    const Clock::time_point now = Clock::now();
    for (auto& [ctx, awaiting] : awaiting_hello_) {
      if (awaiting.cancelled) continue;
      if (awaiting.deadline <= now) {
        awaiting.cancelled = true;
        ctx->TryCancel();  // its Read returns; the handler erases the entry before it returns
      } else {
        next = std::min(next, awaiting.deadline);
      }
    }
    if (next == Clock::time_point::max()) {
      hello_cv_.wait(lock);
    } else {
      hello_cv_.wait_until(lock, next);
    }
  }
}

bool SessionHub::FixShapeByQuorum(int need) {
  std::map<std::pair<int64_t, int64_t>, int> claims;
  for (const Slot& s : slots_) {
    if (s.joined && s.connected) ++claims[{s.num_features, s.num_classes}];
  }
  std::pair<int64_t, int64_t> best;
  int most = 0, runner_up = 0;
  for (const auto& [shape, n] : claims) {
    if (n > most) {
      runner_up = most;
      most = n;
      best = shape;
    } else {
      runner_up = std::max(runner_up, n);
    }
  }
  if (most < need || most == runner_up) return false;
  num_features_ = best.first;
  num_classes_ = best.second;
  shape_fixed_ = true;
  LOG(INFO) << "shard shape fixed by the first quorum: " << most << " clients report " << num_features_
            << " features and " << num_classes_ << " classes";
  for (int k = 0; k < num_clients_; ++k) {
    Slot& slot = slots_[k];
    if (!slot.joined || (slot.num_features == num_features_ && slot.num_classes == num_classes_)) continue;
    ++stats_.refused_joins;
    LOG(WARNING) << "refused client " << k << ": its shard (" << slot.num_features << " features, "
                 << slot.num_classes << " classes) disagrees with the first quorum's";
    Disconnect(k, "its shard disagrees with the first quorum's");
    slot.joined = false;  // a rejoin is checked against the fixed shape, and refused
    if (slot.ctx != nullptr) slot.ctx->TryCancel();
  }
  return true;
}

absl::Status SessionHub::WaitForClients(int min_clients) {
  const int need = min_clients > 0 ? std::min(min_clients, num_clients_) : num_clients_;
  std::unique_lock<std::mutex> lock(mu_);
  auto joined = [&] {
    int n = 0;
    for (const Slot& s : slots_) n += s.joined && s.connected;
    return n;
  };
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(opt_.join_timeout_s));
  auto ready = [&] { return shape_fixed_ ? joined() >= need : FixShapeByQuorum(need); };
  if (!driver_cv_.wait_until(lock, deadline, ready)) {
    std::string shapes;  // why they do not count, when they disagree
    std::set<std::pair<int64_t, int64_t>> distinct;
    for (int k = 0; k < num_clients_; ++k) {
      const Slot& s = slots_[k];
      if (shape_fixed_ || !s.joined || !s.connected) continue;
      distinct.insert({s.num_features, s.num_classes});
      absl::StrAppend(&shapes, shapes.empty() ? "; their shards (features, classes) disagree: " : ", ",
                      "client ", k, " (", s.num_features, ", ", s.num_classes, ")");
    }
    if (distinct.size() < 2) shapes.clear();
    return absl::DeadlineExceededError(absl::StrCat("only ", joined(), " of the ", need,
                                                    " clients needed were connected within ",
                                                    opt_.join_timeout_s, " s", shapes));
  }
  if (!started_) LOG(INFO) << joined() << " of " << num_clients_ << " clients joined; starting";
  started_ = true;
  return absl::OkStatus();
}

void SessionHub::Finish() {
  std::unique_lock<std::mutex> lock(mu_);
  finished_ = true;
  if (stats_.refused_streams > 0 || stats_.silent_streams > 0) {
    LOG(WARNING) << "session streams refused while " << opt_.max_unauthenticated_streams
                 << " were waiting for their first message: " << stats_.refused_streams
                 << "; closed for sending nothing within " << opt_.first_message_timeout_s
                 << " s: " << stats_.silent_streams;
  }
  for (Slot& s : slots_) s.wake.notify_all();
  // Give connected clients a moment to receive FINISH, so they exit instead of retrying.
  driver_cv_.wait_for(lock, std::chrono::seconds(10), [&] {
    for (const Slot& s : slots_) {
      if (s.joined && s.connected && !s.finished) return false;
    }
    return true;
  });
}


void SessionHub::Exchange(const std::map<int, Task>& tasks, const std::function<void(int, Outcome&)>& on_outcome) {
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<int> asked;
  std::map<int, Outcome> unasked;
  for (const auto& [k, task] : tasks) {
    Slot& slot = slots_[k];
    if (!slot.joined || !slot.connected) {
      unasked[k].answer = absl::UnavailableError(absl::StrCat("client ", k, " is not connected"));
      continue;
    }
    slot.pending = task;
    slot.awaited = task.id;
    slot.delivered = false;
    slot.down = slot.up = StreamBytes();
    slot.answer.reset();
    slot.eval.reset();
    slot.parsed.reset();
    asked.push_back(k);
  }
  for (int k : asked) slots_[k].wake.notify_all();
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(opt_.round_deadline_s));
  // Hands `o` to the caller without the lock (it aggregates while later clients still work).
  auto deliver = [&](int k, Outcome o) {
    lock.unlock();
    on_outcome(k, o);
    lock.lock();
  };
  auto deliver_unasked_below = [&](int limit) {  // clients never asked answer in their turn
    while (!unasked.empty() && unasked.begin()->first < limit) {
      auto node = unasked.extract(unasked.begin());
      deliver(node.key(), std::move(node.mapped()));
    }
  };
  size_t taken = 0;  // asked[0..taken) are delivered
  for (; taken < asked.size(); ++taken) {
    const int k = asked[taken];
    if (!driver_cv_.wait_until(lock, deadline, [&] { return slots_[k].answer.has_value(); })) break;
    deliver_unasked_below(k);
    deliver(k, TakeOutcome(k, tasks.at(k)));
  }
  driver_cv_.wait_until(lock, deadline, [&] {
    for (size_t i = taken; i < asked.size(); ++i) {
      if (!slots_[asked[i]].answer) return false;
    }
    return true;
  });
  for (size_t i = taken; i < asked.size(); ++i) {
    const int k = asked[i];
    Slot& slot = slots_[k];
    if (!slot.answer) {
      ++stats_.dropped;
      Disconnect(k, "missed the deadline");
      if (slot.ctx != nullptr) slot.ctx->TryCancel();  // it rejoins when it is back
      slot.answer = absl::DeadlineExceededError(absl::StrCat("client ", k, " missed the ",
                                                             opt_.round_deadline_s, " s deadline"));
    }
    deliver_unasked_below(k);
    deliver(k, TakeOutcome(k, tasks.at(k)));
  }
  deliver_unasked_below(std::numeric_limits<int>::max());
}

std::pair<int64_t, int64_t> SessionHub::FeaturesAndClasses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {num_features_, num_classes_};
}

}  // namespace fgl::fl::transport
