// How a round is scored: one client's counts under the protocol, the round's metrics combined from
// its clients' counts, and the round a result reports. A new per-round metric computed by the
// clients is a field of proto::EvalCounts and of proto::RoundRecord, and this file's .cc
// (EvaluateClient, ScoreRound): the driver and the transports pass the counts whole, and run
// records take RoundRecord's new double fields by reflection (experiments/run_records.cc).
#ifndef FGL_FL_EVALUATION_H_
#define FGL_FL_EVALUATION_H_

#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "fl/algorithm.h"
#include "fl/client_channel.h"
#include "fl/federation.h"
#include "fl/proto/federation.pb.h"

namespace fgl::fl {

// Scores the protocol's model on one client (`global`: the server's model, or nullptr for the
// client's own). Dropout at evaluation is seeded per client and round, independent of threads.
absl::StatusOr<proto::EvalCounts> EvaluateClient(ClientAlgorithm& algorithm, const ClientData& client,
                                                 const proto::Message* global, const RoundInfo& round);

// InvalidArgument when counts that came back from a client cannot be a real evaluation (it may be
// across a network: the driver checks every answer before scoring with it).
absl::Status CheckEvalCounts(const proto::EvalCounts& c);

// Percent accuracy of the protocol over clients (node-weighted or not); `sizes[k]` = nodes of k.
struct RoundAccuracy {
  double val = 0, test = 0;
  double global = std::numeric_limits<double>::quiet_NaN();  // NaN: no client scored a global test
};
RoundAccuracy WeightedAccuracy(proto::EvalProtocol::Weighting weighting, const std::vector<proto::EvalCounts>& counts,
                               const std::vector<int64_t>& sizes);
// Fills `rec`'s metrics from the counts of the clients that scored it (at least one): accuracies
// per the protocol's weighting, the unweighted client mean, the mean test loss. Every per-round
// metric computed from EvalCounts is combined here, in one place.
void ScoreRound(proto::EvalProtocol::Weighting weighting, const std::vector<proto::EvalCounts>& counts,
                const std::vector<int64_t>& sizes, proto::RoundRecord& rec);
// Picks the reported round per the protocol (ties go to the earliest) and fills the result's
// best_round and its accuracies. `result.rounds` must not be empty.
void SelectReportedRound(proto::EvalProtocol::Round round, proto::FederationResult& result);

}  // namespace fgl::fl

#endif  // FGL_FL_EVALUATION_H_
