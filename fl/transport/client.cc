#include "fl/transport/client.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <csignal>
#include <optional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "fl/catch_exceptions.h"
#include "fl/evaluation.h"
#include "fl/federated_data.h"
#include "fl/proto/transport.grpc.pb.h"
#include "fl/registry.h"
#include "fl/round_schedule.h"
#include "fl/run_setup.h"
#include "fl/transport/chunked_stream.h"
#include "glog/logging.h"
#include "nn/threads.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl::transport {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

absl::Status FromGrpc(const grpc::Status& s, const std::string& what) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
}

// A reply whose first tensor has one extra row: what a buggy or hostile client might send.
void AddRowToFirstTensor(proto::Message& m) {
  if (m.tensors_size() == 0 || m.tensors(0).shape_size() == 0 || m.tensors(0).shape(0) == 0) return;
  proto::Tensor* t = m.mutable_tensors(0);
  const size_t row = t->data().size() / t->shape(0);
  t->set_shape(0, t->shape(0) + 1);
  t->mutable_data()->append(row, '\0');
}

class Connection {
 public:
  Connection(const ClientOptions& opt, std::shared_ptr<grpc::ChannelCredentials> creds)
      : opt_(opt) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(kMaxChunkBytes + (1 << 16));  // any server's chunk size
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20);  // see server.cc
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    stub_ = proto::Federation::NewStub(grpc::CreateCustomChannel(opt.server, creds, args));
  }

  ~Connection() { Close(); }

  absl::StatusOr<uint64_t> Join(const proto::JoinRequest& req) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    proto::JoinReply reply;
    FGL_RETURN_IF_ERROR(FromGrpc(stub_->Join(&ctx, req, &reply), "join"));
    return reply.session();
  }

  // Opens the session's stream (transport.proto) and introduces this client on it.
  absl::Status Open(uint64_t session) {
    Close();
    ctx_ = std::make_unique<grpc::ClientContext>();
    stream_ = stub_->Session(ctx_.get());
    proto::Chunk hello;
    hello.mutable_header()->set_client_id(opt_.client_id);
    hello.mutable_header()->set_token(opt_.token);
    hello.mutable_header()->set_session(session);
    if (!stream_->Write(hello)) return End("session");
    return absl::OkStatus();
  }

  // The next task.
  absl::StatusOr<Received> Next(ClientStats& stats) {
    absl::StatusOr<Received> got = ReadChunked([&](proto::Chunk* c) { return stream_->Read(c); },
                                               opt_.max_payload_bytes, "task");
    if (!got.ok()) {
      absl::Status ended = End("session");
      return ended.ok() ? got.status() : ended;
    }
    stats.wire_down += got->bytes.wire;
    stats.payload_down += got->bytes.payload;
    return got;
  }

  absl::Status Answer(proto::ChunkHeader header, std::string payload, ClientStats& stats) {
    header.set_client_id(opt_.client_id);
    absl::StatusOr<StreamBytes> sent = WriteChunked(header, std::move(payload), opt_.chunk_bytes,
                                                    [&](const proto::Chunk& c) { return stream_->Write(c); });
    if (!sent.ok()) return End("answer");
    stats.wire_up += sent->wire;
    stats.payload_up += sent->payload;
    return absl::OkStatus();
  }

  // Ends the stream politely (after FINISH) or, on a broken one, collects why it broke.
  absl::Status End(const std::string& what) {
    if (!stream_) return absl::OkStatus();
    stream_->WritesDone();
    absl::Status s = FromGrpc(stream_->Finish(), what);
    stream_.reset();
    ctx_.reset();
    if (s.ok()) return absl::UnavailableError(absl::StrCat(what, ": stream ended"));
    return s;
  }

  void Close() {
    if (!stream_) return;
    ctx_->TryCancel();
    stream_->Finish();
    stream_.reset();
    ctx_.reset();
  }

 private:
  const ClientOptions& opt_;
  std::unique_ptr<proto::Federation::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<proto::Chunk, proto::Chunk>> stream_;
};

// The server refused a new stream because too many were waiting to introduce themselves
// (session_hub.cc): the session is still ours, only the stream has to be opened again.
bool StreamRefused(const absl::Status& s) {
  return absl::IsResourceExhausted(s) && absl::StrContains(s.message(), "waiting for their first message");
}

// Errors after which retrying cannot help.
bool Fatal(const absl::Status& s) {
  return absl::IsUnauthenticated(s) || absl::IsPermissionDenied(s) || absl::IsInvalidArgument(s) ||
         (absl::IsFailedPrecondition(s) && !absl::StrContains(s.message(), "unknown session"));
}

}  // namespace

// At most n holders at a time: clients of one process take turns computing.
class ComputeGate {
 public:
  explicit ComputeGate(int n) : free_(std::max(1, n)) {}
  void Acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return free_ > 0; });
    --free_;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    ++free_;
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int free_;
};

absl::Status ServeClient(const FederationOptions& run, const ClientOptions& opt, ClientShard shard,
                         ComputeGate* gate, ClientStats* stats_out) {
  ClientStats stats;
  FGL_ASSIGN_OR_RETURN(MethodFactories factories, FindMethod(run.spec.method()));
  FGL_ASSIGN_OR_RETURN(MethodConfig server_config,
                       ServerMethodConfig(run, shard.num_features, shard.num_classes));
  std::unique_ptr<ClientAlgorithm> algorithm;
  {
    // Methods seed LibTorch's global generator and then build their models: with several clients
    // in one process, one construction at a time keeps every initialisation the simulator's.
    static std::mutex construction;
    std::lock_guard<std::mutex> lock(construction);
    FGL_ASSIGN_OR_RETURN(algorithm,
                         factories.client(shard.data, ClientMethodConfig(run, server_config, opt.client_id)));
  }
  const ClientData& data = *shard.data;
  LOG(INFO) << "client " << opt.client_id << ": " << data.data.num_nodes() << " nodes of " << run.spec.dataset();

  FGL_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> creds, MakeChannelCredentials(opt.tls));
  Connection conn(opt, creds);
  proto::JoinRequest join;
  join.set_client_id(opt.client_id);
  join.set_token(opt.token);
  join.set_run_fingerprint(run.Fingerprint());
  join.set_num_clients(shard.num_clients);
  join.set_num_nodes(data.data.num_nodes());
  join.set_num_features(shard.num_features);
  join.set_num_classes(shard.num_classes);

  uint64_t session = 0;
  Clock::time_point unreachable_since = Clock::now();
  auto retry_or_fail = [&](const absl::Status& s) -> absl::Status {
    if (Fatal(s)) return s;
    if (Seconds(unreachable_since) > opt.reconnect_s) {
      return absl::UnavailableError(absl::StrCat("server ", opt.server, " unreachable for ",
                                                 opt.reconnect_s, " s; last error: ", s.message()));
    }
    session = 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    return absl::OkStatus();
  };
  for (;;) {
    if (session == 0) {
      absl::StatusOr<uint64_t> joined = conn.Join(join);
      if (!joined.ok()) {
        FGL_RETURN_IF_ERROR(retry_or_fail(joined.status()));
        continue;
      }
      session = *joined;
      if (absl::Status s = conn.Open(session); !s.ok()) {
        FGL_RETURN_IF_ERROR(retry_or_fail(s));
        continue;
      }
      LOG(INFO) << "client " << opt.client_id << " joined " << opt.server << " (session " << session << ")";
    }
    absl::StatusOr<Received> task = conn.Next(stats);
    if (!task.ok() && StreamRefused(task.status())) {
      // Reopened for the same session rather than joining again: a rejoin would cost this client
      // a task the server may already have assigned it (and so change the round).
      if (Seconds(unreachable_since) > opt.reconnect_s) return retry_or_fail(task.status());
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (absl::Status s = conn.Open(session); !s.ok()) FGL_RETURN_IF_ERROR(retry_or_fail(s));
      continue;
    }
    if (!task.ok()) {
      FGL_RETURN_IF_ERROR(retry_or_fail(task.status()));
      continue;
    }
    unreachable_since = Clock::now();
    const Clock::time_point task_start = Clock::now();
    const proto::ChunkHeader& h = task->header;
    proto::ChunkHeader answer;
    answer.set_kind(h.kind());
    answer.set_task_id(h.task_id());
    answer.set_round(h.round());
    answer.set_session(session);
    std::string payload;
    if (h.kind() == proto::WAIT) continue;
    if (h.kind() == proto::FINISH) {
      (void)conn.End("session");
      LOG(INFO) << "client " << opt.client_id << ": run finished after " << stats.rounds_trained
                << " rounds of training; bytes up " << stats.payload_up << " down " << stats.payload_down;
      if (stats_out) *stats_out = stats;
      return absl::OkStatus();
    }
    if (h.kind() != proto::PREPARE && h.kind() != proto::TRAIN && h.kind() != proto::EVALUATE) {
      LOG(WARNING) << "client " << opt.client_id << ": ignoring task of unknown kind " << h.kind();
      continue;
    }
    if (h.eval_payload_bytes() < 0 || h.eval_payload_bytes() > static_cast<int64_t>(task->payload.size())) {
      answer.set_error("eval_payload_bytes outside the payload");
    }
    if (gate != nullptr) gate->Acquire();
    // The task's own message follows the evaluation model (if that was sent separately).
    const absl::string_view own(task->payload.data() + h.eval_payload_bytes(),
                                task->payload.size() - h.eval_payload_bytes());
    proto::Message from_server;
    const bool parsed = answer.error().empty() && (h.kind() != proto::TRAIN ||
                        from_server.ParseFromArray(own.data(), static_cast<int>(own.size())));
    if (!parsed && answer.error().empty()) answer.set_error("cannot parse the server's message");
    if (h.eval_round() > 0 && answer.error().empty()) {
      // The previous round's model first: the simulator scores it before the next round trains.
      proto::EvalCounts& out = *answer.mutable_eval();
      proto::Message eval_model;
      const proto::Message* global = nullptr;
      std::string error;
      if (h.eval_own_model()) {
      } else if (h.eval_reuses_train()) {
        if (h.kind() != proto::TRAIN) {
          error = "eval_reuses_train on a task without a train message";
        } else {
          std::swap(*from_server.mutable_header(), *eval_model.mutable_header());
          *from_server.mutable_header() = h.eval_header();
          global = &from_server;
        }
      } else if (!eval_model.ParseFromArray(task->payload.data(), static_cast<int>(h.eval_payload_bytes()))) {
        error = "cannot parse the evaluation model";
      } else {
        global = &eval_model;
      }
      if (error.empty()) {
        absl::StatusOr<proto::EvalCounts> c = EvaluateClient(*algorithm, data, global, ServerRound(run, h.eval_round()));
        if (c.ok()) {
          out = *std::move(c);  // whole: a new metric's field travels without the transport knowing it
          for (const auto& [name, value] : ReportsOf(*algorithm)) (*answer.mutable_eval_reports())[name] = value;
        } else {
          error = std::string(c.status().ToString());
        }
      }
      out.set_error(error);
      if (h.eval_reuses_train() && global == &from_server) {
        std::swap(*from_server.mutable_header(), *eval_model.mutable_header());  // the train header back
      }
    }
    if (!answer.error().empty()) {
      // nothing more to do: the answer says why
    } else if (h.kind() == proto::PREPARE) {
      // A client without PreparingClient sends nothing.
      if (PreparingClient* const preparing = algorithm->preparing(); preparing != nullptr) {
        absl::StatusOr<proto::Message> prepared = preparing->Prepare();
        if (!prepared.ok()) {
          answer.set_error(std::string(prepared.status().ToString()));
        } else {
          payload = prepared->SerializeAsString();
        }
      }
    } else if (h.kind() == proto::TRAIN) {
      const RoundInfo info = ClientRound(ServerRound(run, h.round(), h.exchange()), opt.client_id);
      absl::StatusOr<proto::Message> reply =
          h.exchange() < 0 ? absl::InvalidArgumentError(absl::StrCat("task exchange ", h.exchange(), " < 0"))
                           : algorithm->Train(from_server, info);
      if (!reply.ok()) {
        answer.set_error(std::string(reply.status().ToString()));
      } else {
        if (h.round() == opt.testonly_bad_shape_round) AddRowToFirstTensor(*reply);
        payload = reply->SerializeAsString();
        for (const auto& [name, value] : ReportsOf(*algorithm)) (*answer.mutable_reports())[name] = value;
        ++stats.rounds_trained;
      }
    }
    if (gate != nullptr) gate->Release();
    if (absl::Status s = conn.Answer(answer, std::move(payload), stats); !s.ok()) {
      LOG(WARNING) << "client " << opt.client_id << ": answer to task " << h.task_id() << " lost: " << s;
      FGL_RETURN_IF_ERROR(retry_or_fail(s));
    }
    VLOG(1) << "task " << h.task_id() << " (kind " << h.kind() << ", round " << h.round() << "): "
            << Seconds(task_start) << " s";
    if (h.eval_round() > 0 && h.eval_round() == opt.testonly_kill_after_round) {
      LOG(WARNING) << "client " << opt.client_id << ": killing itself after round " << h.round() << " (test)";
      google::FlushLogFiles(google::GLOG_INFO);
      std::raise(SIGKILL);
    }
  }
}

absl::Status RunClient(const ResolvedOptions& resolved, const ClientOptions& opt, ClientStats* stats) {
  const FederationOptions& run = *resolved;
  if (opt.chunk_bytes < 1024 || opt.chunk_bytes > kMaxChunkBytes) {
    return absl::InvalidArgumentError("chunk_bytes must be in [1 KiB, 16 MiB]");
  }
  nn::SetComputeThreads(std::max(1, opt.threads));
  FGL_ASSIGN_OR_RETURN(ClientShard shard, LoadClientShard(resolved, opt.client_id));
  return ServeClient(run, opt, std::move(shard), nullptr, stats);
}

absl::Status RunClients(const ResolvedOptions& resolved, const ClientOptions& opt,
                        const std::vector<int>& ids, int parallel,
                        const std::map<int, std::string>& tokens) {
  const FederationOptions& run = *resolved;
  if (ids.empty()) return absl::InvalidArgumentError("no client ids");
  nn::SetComputeThreads(std::max(1, opt.threads));
  FGL_ASSIGN_OR_RETURN(std::vector<ClientShard> shards, LoadClientShards(resolved, ids));
  ComputeGate gate(parallel);
  std::vector<absl::Status> results(ids.size());
  std::vector<std::thread> threads;
  std::vector<ClientOptions> options(ids.size(), opt);
  for (size_t i = 0; i < ids.size(); ++i) {
    options[i].client_id = ids[i];
    if (auto it = tokens.find(ids[i]); it != tokens.end()) options[i].token = it->second;
    threads.emplace_back([&, i] {
      // An exception must not leave this thread (std::terminate): it becomes this client's error.
      results[i] = CatchExceptions(absl::StrCat("client ", ids[i]), [&] {
        return ServeClient(run, options[i], std::move(shards[i]), &gate, nullptr);
      });
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : results) FGL_RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

}  // namespace fgl::fl::transport
