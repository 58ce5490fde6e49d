// The records of a run: a client's reply booked into its round, the protocol card, and rounds and
// results as the protos written to disk and checkpoints.
#ifndef FGL_FL_ROUND_RECORDS_H_
#define FGL_FL_ROUND_RECORDS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fl/algorithm.h"
#include "fl/federation.h"
#include "fl/proto/federation.pb.h"

namespace fgl::fl {

// Hands one client's reply (or why there is none) to the server and records the outcome in the
// round: the client's train loss and participation, or a warning and one more left-out client.
// Returns why the reply was not taken.
absl::Status AccumulateReply(ServerAlgorithm& server, const absl::StatusOr<proto::Message>& reply,
                             ClientRecord& client, RoundRecord& round);

// The protocol card every result carries: evaluation, sharing, split and partition.
absl::StatusOr<std::string> ProtocolCard(const FederationOptions& o);

// The clients' reports a RoundRecord proto carries, into `r.clients` (those it has).
void ApplyClientReports(const proto::RoundRecord& p, RoundRecord& r);
// Round records as protos: with the per-client detail in rounds.jsonl and a checkpoint's pending
// round, without it for a checkpoint's finished rounds (the clients' reports are always kept).
RoundRecord RoundRecordFromProto(const proto::RoundRecord& p);
proto::RoundRecord RoundRecordToProto(const RoundRecord& r, bool with_clients = false);

// A run's result as the proto written to result.json.
proto::RunResult RunResultToProto(const FederationOptions& o, const FederationResult& r);

}  // namespace fgl::fl

#endif  // FGL_FL_ROUND_RECORDS_H_
