// How the federation driver (fl/federation_driver.h) reaches its clients: in process
// (fl/in_process_channel.h) or over gRPC (fl/transport/server.h). The driver decides what every
// client does; a channel only delivers tasks and brings back answers, or says why there is none.
#ifndef FGL_FL_CLIENT_CHANNEL_H_
#define FGL_FL_CLIENT_CHANNEL_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fl/checkpoint_file.h"
#include "fl/proto/federation.pb.h"
#include "fl/proto/message.pb.h"

namespace fgl::fl {

// A serialised message and its parsed form (parsed once, shared by every client it goes to).
struct SharedMessage {
  std::shared_ptr<const proto::Message> message;
  std::shared_ptr<const std::string> bytes;

  static SharedMessage Of(proto::Message m);
  int64_t size() const { return bytes ? static_cast<int64_t>(bytes->size()) : 0; }
};

// One client's work in one exchange. When `eval_round` > 0 the client first scores that round's
// model (the server's `eval_model`, or its own when that is empty) on its val/test nodes, before
// any training: its state is then exactly the state right after round `eval_round`.
struct ClientTask {
  enum class Kind { kPrepare, kTrain, kEvaluate };
  Kind kind = Kind::kEvaluate;
  int round = 0;          // kTrain
  int exchange = 0;       // kTrain: within the round (MultiExchangeServer::ExchangesPerRound)
  SharedMessage message;  // kTrain: the server's message
  int eval_round = 0;
  SharedMessage eval_model;
};

// What came back for one task. `status` is not OK when there is no usable answer: Unavailable or
// DeadlineExceeded when the client could not be reached, anything else when it failed.
struct ClientAnswer {
  absl::Status status = absl::UnknownError("no answer");
  std::optional<proto::Message> reply;  // kTrain; kPrepare when the method sends something
  std::optional<absl::StatusOr<proto::EvalCounts>> eval;  // when the task carried an evaluation
  int64_t bytes_down = 0, bytes_up = 0;  // the method's serialised messages
  std::map<std::string, double> reports;       // kTrain: ReportingClient::Reports after training
  std::map<std::string, double> eval_reports;  // the same right after the evaluation, if any
  double seconds = 0;                    // the client's work, when the channel knows it
};

class ClientChannel {
 public:
  virtual ~ClientChannel() = default;
  virtual int num_clients() const = 0;
  // Called before round `round`'s tasks are made (a transport waits here for enough clients).
  virtual absl::Status BeforeRound(int round) { return absl::OkStatus(); }
  // The clients that can take work now, ascending.
  virtual std::vector<int> Reachable() = 0;
  // Hands every task to its client and calls on_answer(k, answer) on this thread exactly once per
  // task, in client-id order, each as soon as it and every answer before it are in (so the
  // caller aggregates while later clients still work).
  virtual void Exchange(const std::map<int, ClientTask>& tasks,
                        const std::function<void(int, ClientAnswer&)>& on_answer) = 0;
  // Client state in checkpoints: an in-process channel saves and restores every client; clients
  // across a network keep their own (then both do nothing).
  // Each client's state is its own message in the file (fl/checkpoint_file.h).
  virtual absl::Status SaveClients(CheckpointWriter& checkpoint) { return absl::OkStatus(); }
  virtual absl::Status RestoreClients(CheckpointReader& checkpoint) { return absl::OkStatus(); }
  // The run is over: clients may leave.
  virtual void Finish() {}
};

}  // namespace fgl::fl

#endif  // FGL_FL_CLIENT_CHANNEL_H_
