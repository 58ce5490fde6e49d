// A run's options resolved and checked once, and the method configs the server and each client
// are built from.
#ifndef FGL_FL_RUN_SETUP_H_
#define FGL_FL_RUN_SETUP_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "fl/algorithm.h"
#include "fl/federation.h"

namespace fgl::fl {

class ResolvedOptions;

// `o` with its spec resolved (fl::ResolveFederationSpec: defaults filled, every value checked)
// and its method and typed parameters checked. The caller's boundary (experiments, a test) calls
// it once; the entry points of a run take its result and never resolve again.
absl::StatusOr<ResolvedOptions> ResolveOptions(FederationOptions o);

// Options that ResolveOptions returned, and only those: a function that takes one knows every
// default is present and every value checked.
class ResolvedOptions {
 public:
  const FederationOptions& operator*() const { return options_; }
  const FederationOptions* operator->() const { return &options_; }
  // The same run checkpointed to `dir` after every `every` rounds (0: never) and resumed from it
  // when `resume`: where a run checkpoints is the serving process's choice (fl/transport/server.cc),
  // and these fields are all ResolveOptions checks of it.
  ResolvedOptions WithCheckpoints(std::string dir, int every, bool resume) const {
    FederationOptions o = options_;
    o.checkpoint_dir = std::move(dir);
    o.checkpoint_every = std::max(every, 0);
    o.resume = resume;
    return ResolvedOptions(std::move(o));
  }

 private:
  friend absl::StatusOr<ResolvedOptions> ResolveOptions(FederationOptions o);
  explicit ResolvedOptions(FederationOptions o) : options_(std::move(o)) {}
  FederationOptions options_;
};

// The server's method config (model = the first spec), and client k's (spec k mod n).
absl::StatusOr<MethodConfig> ServerMethodConfig(const FederationOptions& o, int64_t num_features,
                                                int64_t num_classes);
MethodConfig ClientMethodConfig(const FederationOptions& o, const MethodConfig& server, int client);

// The spec's partitioner with a relative "reference:<dir>" resolved against the data root, so that
// specs (and cache keys) name a reference partition the same way on every machine.
std::string ResolvedPartitionerSpec(const FederationOptions& o);

}  // namespace fgl::fl

#endif  // FGL_FL_RUN_SETUP_H_
