// The federation server over gRPC: clients join and pull work; the server drives the rounds of
// the same ServerAlgorithm the simulator runs, in the same order, so with every client present a
// run matches RunFederation bit for bit.
#ifndef FGL_FL_TRANSPORT_SERVER_H_
#define FGL_FL_TRANSPORT_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "fl/federation.h"
#include "fl/run_setup.h"
#include "fl/transport/credentials.h"

namespace fgl::fl::transport {

struct ServerOptions {
  std::string listen = "127.0.0.1:0";  // port 0: any free port (see FederationServer::port)
  int min_clients = 0;                 // clients that must join before round 1; 0 = all
  int min_clients_per_round = 1;       // connected clients every later round waits for
  double join_timeout_s = 600;         // waiting for either
  double round_deadline_s = 600;       // per exchange; a client that misses it is dropped
  // "client_id token" lines. Empty: the server makes a random token per client for this run and
  // writes them to `run_tokens_file` (default: DefaultRunTokensPath(port), credentials.h), where
  // `join` on this host finds them; such a server listens only on loopback.
  std::string tokens_file;
  std::string run_tokens_file;
  // A Session stream must introduce itself (its first message) within this many seconds, and at
  // most this many streams may be waiting to: each holds a server thread until then, so silent
  // streams could otherwise take every thread before anyone authenticated. Excess streams are
  // refused at once (RESOURCE_EXHAUSTED; a real client retries).
  double first_message_timeout_s = 10;
  int max_unauthenticated_streams = 64;
  TlsFiles tls;
  int64_t chunk_bytes = 4 << 20;  // a 2 MB model (Physics) goes in one message
  int64_t max_payload_bytes = int64_t{1} << 30;
  // After every round DIR/checkpoint.pb holds the server's state; with `resume` a restarted
  // server continues from it (clients keep their own state and rejoin). A restart reproduces an
  // uninterrupted run when the server died between a checkpoint and the next round's tasks; if
  // clients had already trained that round, they train it again.
  std::string checkpoint_dir;
  bool resume = false;
  // Tests only: SIGKILL the server right after writing this round's checkpoint.
  int testonly_kill_after_checkpoint = 0;
};

// Traffic at the transport. `payload` counts the serialised messages, as the simulator does;
// `wire` adds the chunk framing. Evaluation traffic (the global model sent for scoring and the
// counts returned) is not part of the method's cost and is kept apart.
struct TransportStats {
  int64_t payload_up = 0, payload_down = 0, wire_up = 0, wire_down = 0;
  int64_t eval_down = 0, eval_up = 0;
  int refused_joins = 0, rejected_answers = 0, dropped = 0;
  // Session streams refused because too many were awaiting their first message, and those closed
  // because it did not come in time.
  int refused_streams = 0, silent_streams = 0;
};

class FederationServer {
 public:
  // Binds the port and starts serving joins; rounds start with Run().
  static absl::StatusOr<std::unique_ptr<FederationServer>> Start(const ResolvedOptions& run,
                                                                 const ServerOptions& options);
  ~FederationServer();

  int port() const;
  // Waits for min_clients, then runs preparation and every round; the result has the simulator's
  // fields (accuracy over the clients that answered the evaluation).
  absl::StatusOr<proto::FederationResult> Run(const std::function<void(const proto::RoundRecord&)>& on_round = {});
  TransportStats stats() const;

  class Impl;

 private:
  explicit FederationServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fgl::fl::transport

#endif  // FGL_FL_TRANSPORT_SERVER_H_
