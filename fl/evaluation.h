// How a round is scored: one client's counts under the protocol, their weighted accuracy, and the
// round a result reports.
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
absl::StatusOr<EvalCounts> EvaluateClient(ClientAlgorithm& algorithm, const ClientData& client,
                                          const proto::Message* global, const RoundInfo& round);

// Percent accuracy of the protocol over clients (node-weighted or not); `sizes[k]` = nodes of k.
struct RoundAccuracy {
  double val = 0, test = 0;
  double global = std::numeric_limits<double>::quiet_NaN();  // NaN: no client scored a global test
};
RoundAccuracy WeightedAccuracy(proto::EvalProtocol::Weighting weighting, const std::vector<EvalCounts>& counts,
                               const std::vector<int64_t>& sizes);
// Picks the reported round per the protocol (ties go to the earliest) and fills the result's
// best_round and its accuracies. `result.rounds` must not be empty.
void SelectReportedRound(proto::EvalProtocol::Round round, proto::FederationResult& result);

}  // namespace fgl::fl

#endif  // FGL_FL_EVALUATION_H_
