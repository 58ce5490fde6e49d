// The wire side of a federation server: the gRPC service clients join and hold one session stream
// with, handing out tasks and collecting answers under deadlines, tokens, TLS and rejoins. It knows
// nothing of rounds or methods; FederationServer (server.h) adapts it to a ClientChannel.
#ifndef FGL_FL_TRANSPORT_SESSION_HUB_H_
#define FGL_FL_TRANSPORT_SESSION_HUB_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "fl/proto/transport.grpc.pb.h"
#include "fl/transport/chunked_stream.h"
#include "fl/transport/server.h"

namespace fgl::fl::transport {

// One task as it goes on the wire (see transport.proto).
struct Task {
  proto::TaskKind kind = proto::WAIT;
  uint64_t id = 0;
  int round = 0;
  std::shared_ptr<const std::string> payload;  // the method's message (TRAIN, PREPARE)
  int exchange = 0;  // TRAIN: within the round
  // The previous round's evaluation, done first.
  int eval_round = 0;
  std::shared_ptr<const std::string> eval_payload;  // null: reuses `payload`, or own model
  bool eval_reuses_train = false;
  bool eval_own_model = false;
  proto::Header eval_header;
};

// What one task brought back from one client.
struct Outcome {
  bool delivered = false;  // the task went out completely
  absl::StatusOr<std::string> answer = absl::UnavailableError("not asked");
  std::optional<proto::EvalCounts> eval;
  std::map<std::string, double> reports;       // TRAIN: the client's ReportingClient::Reports
  std::map<std::string, double> eval_reports;  // the same, right after its evaluation
  std::shared_ptr<proto::Message> parsed;  // `answer` parsed on arrival (TRAIN)
  StreamBytes down, up;
};

class SessionHub final : public proto::Federation::Service {
 public:
  // Clients must present `run_fingerprint` (the same resolved run) and, with `tokens`, their token.
  SessionHub(int num_clients, std::string run_fingerprint, ServerOptions options,
             std::map<int, std::string> tokens);
  ~SessionHub() override;

  // The shard shape (features, classes) every client must report: known where the server can read
  // the run's dataset. Without it, the first quorum's agreement fixes it (WaitForClients). Call
  // before Listen.
  void ExpectShape(int64_t num_features, int64_t num_classes);
  absl::Status Listen();  // binds options.listen and starts serving joins
  int port() const;
  TransportStats stats() const;

  // Waits until `min_clients` (0: all) are connected, at most join_timeout_s. While no shard shape
  // is fixed (ExpectShape), they must be `min_clients` reporting one shape, more than report any
  // other; that shape is then fixed for the run and every client reporting another is refused.
  absl::Status WaitForClients(int min_clients);
  std::vector<int> ConnectedClients();
  // The shard shape of the run: the expected one, or the first quorum's (0, 0 before it).
  std::pair<int64_t, int64_t> FeaturesAndClasses() const;

  // A task with a fresh id (only the driver thread makes tasks).
  Task MakeTask(proto::TaskKind kind, int round, std::shared_ptr<const std::string> payload);
  // Hands every task to its client and calls on_outcome(k, outcome) on this thread exactly once
  // per task, in client-id order, each as soon as it and every outcome before it are in; a client
  // not connected, gone, or past round_deadline_s has an Unavailable or DeadlineExceeded answer.
  void Exchange(const std::map<int, Task>& tasks, const std::function<void(int, Outcome&)>& on_outcome);
  // Sends FINISH to every client and waits briefly for them to take it.
  void Finish();

  // gRPC handlers.
  grpc::Status Join(grpc::ServerContext*, const proto::JoinRequest* req, proto::JoinReply* reply) override;
  grpc::Status Session(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<proto::Chunk, proto::Chunk>* stream) override;

 private:
  using Clock = std::chrono::steady_clock;
  struct Slot;

  absl::StatusOr<StreamBytes> SendTask(const Task& task,
                                       grpc::ServerReaderWriter<proto::Chunk, proto::Chunk>* stream,
                                       int64_t& eval_bytes);
  absl::Status Authenticate(int client, const std::string& token) const;
  void Disconnect(int client, const std::string& why);  // requires mu_
  // Fixes the shard shape once the joined clients agree on one (see WaitForClients) and refuses
  // the clients that claimed another; true when fixed. Requires mu_.
  bool FixShapeByQuorum(int need);
  // Cancels streams that sent no first message in time (a thread of its own; see Session).
  void WatchFirstMessages();
  Outcome TakeOutcome(int k, const Task& task);         // requires mu_ and an answer in the slot

  const int num_clients_;
  const std::string fingerprint_;
  const ServerOptions opt_;
  const std::map<int, std::string> tokens_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable driver_cv_;  // the round driver waits on it
  std::vector<Slot> slots_;
  int64_t num_features_ = 0, num_classes_ = 0;  // the run's shard shape, once fixed
  bool shape_fixed_ = false;
  uint64_t next_session_ = 1;
  uint64_t next_task_ = 1;
  bool finished_ = false;
  bool started_ = false;
  TransportStats stats_;

  // Session streams that have not introduced themselves yet, with their deadlines. Own mutex: the
  // watchdog cancels them while the round driver may hold mu_.
  struct Awaiting {
    Clock::time_point deadline;
    bool cancelled = false;
    std::string peer;
  };
  std::mutex hello_mu_;
  std::condition_variable hello_cv_;
  std::map<grpc::ServerContext*, Awaiting> awaiting_hello_;
  bool stopping_ = false;
  std::thread watchdog_;
};

}  // namespace fgl::fl::transport

#endif  // FGL_FL_TRANSPORT_SESSION_HUB_H_
