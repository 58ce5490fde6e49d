// The in-process federation: loads and partitions a dataset, gives every client its subgraph and
// split, and runs rounds of broadcast -> local training -> reply -> aggregation -> evaluation.
// Every message is serialised and parsed, so byte counts are what a transport would send.
#ifndef FGL_FL_SIMULATOR_H_
#define FGL_FL_SIMULATOR_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fl/federation.h"
#include "fl/run_setup.h"

namespace fgl::fl {

struct DriverHooks;  // fl/federation_driver.h

// Runs resolved options (fl::ResolveOptions); `on_round` sees each finished round.
absl::StatusOr<proto::FederationResult> RunFederation(
    const ResolvedOptions& options, const std::function<void(const proto::RoundRecord&)>& on_round = {});
// The same with every driver hook (fl/federation_driver.h), e.g. a trace of the exchanged messages.
absl::StatusOr<proto::FederationResult> RunFederation(const ResolvedOptions& options, const DriverHooks& hooks);

// For callers that hold options of their own making (tests, tools): ResolveOptions, then the run.
absl::StatusOr<proto::FederationResult> RunFederation(
    const FederationOptions& options, const std::function<void(const proto::RoundRecord&)>& on_round = {});
absl::StatusOr<proto::FederationResult> RunFederation(const FederationOptions& options, const DriverHooks& hooks);

}  // namespace fgl::fl

#endif  // FGL_FL_SIMULATOR_H_
