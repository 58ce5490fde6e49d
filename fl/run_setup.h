// A run's options resolved and checked once, and the method configs the server and each client
// are built from.
#ifndef FGL_FL_RUN_SETUP_H_
#define FGL_FL_RUN_SETUP_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "fl/algorithm.h"
#include "fl/federation.h"

namespace fgl::fl {

// `o` with its spec resolved (fl::ResolveFederationSpec: defaults filled, every value checked)
// and its method and typed parameters checked. The caller's boundary (experiments, a test) calls
// it once; the entry points of a run take its result and never resolve again.
absl::StatusOr<ResolvedOptions> ResolveOptions(FederationOptions o);

// The server's method config (model = the first spec), and client k's (spec k mod n).
absl::StatusOr<MethodConfig> ServerMethodConfig(const FederationOptions& o, int64_t num_features,
                                                int64_t num_classes);
MethodConfig ClientMethodConfig(const FederationOptions& o, const MethodConfig& server, int client);

// The spec's partitioner with a relative "reference:<dir>" resolved against the data root, so that
// specs (and cache keys) name a reference partition the same way on every machine.
std::string ResolvedPartitionerSpec(const FederationOptions& o);

}  // namespace fgl::fl

#endif  // FGL_FL_RUN_SETUP_H_
