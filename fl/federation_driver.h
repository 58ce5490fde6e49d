// The federation's round loop, once for every transport: preparation, then per round client
// sampling, broadcast, aggregation in client-id order, evaluation per the protocol, round records,
// checkpoints and resume. Clients are reached through a ClientChannel (in process or gRPC).
#ifndef FGL_FL_FEDERATION_DRIVER_H_
#define FGL_FL_FEDERATION_DRIVER_H_

#include <functional>

#include "absl/status/statusor.h"
#include "fl/algorithm.h"
#include "fl/client_channel.h"
#include "fl/federation.h"
#include "fl/run_setup.h"

namespace fgl::fl {

struct DriverHooks {
  std::function<void(const proto::RoundRecord&)> on_round;  // each round once it is scored
  std::function<void(int round)> after_checkpoint;          // tests: a crash right after a checkpoint
  // Every task a client was handed and its answer, in the order the driver takes them (tests:
  // round-level traces of the exchanged messages, compared with a reference port).
  std::function<void(int client, const ClientTask& task, const ClientAnswer& answer)> on_exchange;
};

// Runs `o` with `server` and the clients behind `channel`.
//
// A round's evaluation rides on the next round's tasks: every reachable client first scores the
// model of round r (the server's, or its own) and then trains round r + 1, so a transport sends
// each model once. Scores are what an evaluation right after aggregation gives.
//
// A client that sends nothing usable is left out of the round (o.strict: the run fails). A client
// that cannot be reached is left out of the evaluation; any other evaluation failure fails the
// run, so that no accuracy is silently over a subset of the clients.
//
// Checkpoints: o.checkpoint_dir/checkpoint.pb after every o.checkpoint_every rounds, holding the
// server's state, the records, the pending evaluation and (in process) every client's state; with
// o.resume a run continues from it.
absl::StatusOr<proto::FederationResult> DriveFederation(const ResolvedOptions& o, ServerAlgorithm& server,
                                                        ClientChannel& channel, const DriverHooks& hooks = {});

}  // namespace fgl::fl

#endif  // FGL_FL_FEDERATION_DRIVER_H_
