// The records of a run, written straight into its protos (fl.proto.RoundRecord, RunResult,
// FederationResult): a client's reply booked into its round, a client's report, the run's
// identity, totals and protocol card.
#ifndef FGL_FL_ROUND_RECORDS_H_
#define FGL_FL_ROUND_RECORDS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fl/algorithm.h"
#include "fl/federation.h"
#include "fl/proto/checkpoint.pb.h"
#include "fl/proto/federation.pb.h"

namespace fgl::fl {

// Round `round`'s record with `num_clients` clients, ids 0..num_clients-1, nothing yet counted.
proto::RoundRecord EmptyRoundRecord(int round, int num_clients);

// Hands one client's reply (or why there is none) to the server and records the outcome in the
// round: the client's train loss and participation, or a warning and one more left-out client.
// Returns why the reply was not taken.
absl::Status AccumulateReply(ServerAlgorithm& server, const absl::StatusOr<proto::Message>& reply,
                             proto::ClientRoundRecord& client, proto::RoundRecord& round);

// Client `client`'s value of report `name` this round (ReportingClient::Reports); the other
// clients read NaN until they report it. `round` must hold its clients.
void SetClientReport(proto::RoundRecord& round, int client, const std::string& name, double value);

// A finished round as a checkpoint keeps it: without the per-client detail (the reports stay).
proto::RoundRecord WithoutClients(proto::RoundRecord round);

// A finished round's traffic, added to the run's totals.
void AddRoundTraffic(const proto::RoundRecord& round, proto::RunResult& result);

// The protocol card every result carries: evaluation, sharing, split and partition.
absl::StatusOr<std::string> ProtocolCard(const ResolvedOptions& o);

// Fills what every runner's result holds once its rounds are done: the run's identity (method,
// dataset, seeds, the resolved spec without the machine's data root), the reported round
// (SelectReportedRound), the uploaded tensors' total and the protocol card. `result.rounds` must
// not be empty.
absl::Status CompleteResult(const ResolvedOptions& o, proto::FederationResult& result);

}  // namespace fgl::fl

#endif  // FGL_FL_ROUND_RECORDS_H_
