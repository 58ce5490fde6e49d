// A federation client over gRPC: loads only its own subgraph, joins the server, then pulls tasks
// (prepare, train, evaluate) until the server says the run is over. It runs the same
// ClientAlgorithm the simulator runs, with the same per-round seeds.
#ifndef FGL_FL_TRANSPORT_CLIENT_H_
#define FGL_FL_TRANSPORT_CLIENT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fl/federation.h"
#include "fl/run_setup.h"
#include "fl/transport/credentials.h"

namespace fgl::fl::transport {

struct ClientOptions {
  std::string server = "127.0.0.1:50051";
  int client_id = 0;
  std::string token;
  TlsFiles tls;
  // How long to keep trying while the server is unreachable (it may be restarting).
  double reconnect_s = 60;
  int64_t chunk_bytes = 4 << 20;  // a 2 MB model (Physics) goes in one message
  int64_t max_payload_bytes = int64_t{1} << 30;
  int threads = 1;  // intra-op threads; 1 matches the simulator's numbers exactly
  // Fault injection for the transport's tests: in this round, send a reply whose first tensor has
  // one extra row (the server must reject it and carry on).
  int testonly_bad_shape_round = 0;
  // ... and after answering the task that carried this round's evaluation, die by SIGKILL (a
  // crash, as the OS sees it).
  int testonly_kill_after_round = 0;
};

// What this client sent and received (serialised messages; framing included in `wire`).
struct ClientStats {
  int64_t payload_up = 0, payload_down = 0, wire_up = 0, wire_down = 0;
  int rounds_trained = 0;
};

// Runs until the server sends FINISH (OK), refuses this client (its status), or stays
// unreachable for longer than reconnect_s (Unavailable).
absl::Status RunClient(const ResolvedOptions& run, const ClientOptions& options,
                       ClientStats* stats = nullptr);

// Several clients in one process (a site holding several clients' data), each on its own thread
// and connection, at most `parallel` computing at a time. `tokens[id]` replaces options.token.
// Returns the first client's error, after every client stopped.
absl::Status RunClients(const ResolvedOptions& run, const ClientOptions& options,
                        const std::vector<int>& client_ids, int parallel,
                        const std::map<int, std::string>& tokens = {});

}  // namespace fgl::fl::transport

#endif  // FGL_FL_TRANSPORT_CLIENT_H_
