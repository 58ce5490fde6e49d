#include "fl/run_setup.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "fl/federation_spec.h"
#include "fl/registry.h"
#include "graph/datasets.h"
#include "graph/partition/partitioner_registry.h"
#include "graph/random.h"
#include "nn/device.h"
#include "nn/models/gnn_model.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {

std::string ResolvedPartitionerSpec(const FederationOptions& o) {
  absl::string_view dir = o.spec.partitioner();
  if (!absl::ConsumePrefix(&dir, "reference:") || absl::StartsWith(dir, "/")) return o.spec.partitioner();
  return absl::StrCat("reference:", graph::ResolveDataDir(o.spec.data_dir()), "/", dir);
}

absl::StatusOr<ResolvedOptions> ResolveOptions(FederationOptions o) {
  FGL_ASSIGN_OR_RETURN(o.spec, ResolveFederationSpec(std::move(o.spec), "run"));
  FGL_RETURN_IF_ERROR(CheckMethod(o.spec).status());
  // The option strings too, so that a bad model or partitioner spec fails before the data loads.
  if (absl::Status s = graph::MakePartitioner(ResolvedPartitionerSpec(o)).status(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("partitioner: ", s.message()));
  }
  for (absl::string_view model : absl::StrSplit(o.spec.model(), ';', absl::SkipEmpty())) {
    if (absl::Status s = nn::MakeModel(std::string(model), 1, 2).status(); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("model: ", s.message()));
    }
  }
  if (o.threads < 1) return absl::InvalidArgumentError(absl::StrCat("threads = ", o.threads, ": must be >= 1"));
  if (o.checkpoint_every < 0) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint_every = ", o.checkpoint_every, ": must be >= 0"));
  }
  if (!(o.checkpoint_minutes >= 0 && std::isfinite(o.checkpoint_minutes))) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint_minutes = ", o.checkpoint_minutes, ": must be finite and >= 0"));
  }
  return ResolvedOptions(std::move(o));
}

absl::StatusOr<MethodConfig> ServerMethodConfig(const FederationOptions& o, int64_t num_features,
                                                int64_t num_classes) {
  const std::vector<std::string> specs = absl::StrSplit(o.spec.model(), ';', absl::SkipEmpty());
  if (specs.empty()) return absl::InvalidArgumentError("empty model spec");
  FGL_ASSIGN_OR_RETURN(torch::Device device, nn::ParseDevice(o.device));
  MethodConfig config;
  // Every reader sees the spec's own values; only data_dir is resolved here (a relative or empty
  // one names the data root of the machine that runs the method).
  config.spec = o.spec;
  config.spec.set_data_dir(graph::ResolveDataDir(o.spec.data_dir()));
  config.model_spec = specs[0];
  config.num_features = num_features;
  config.num_classes = num_classes;
  config.seed = graph::Rng::Derive(o.seed, "init");
  config.run_seed = o.seed;
  config.device = device;
  return config;
}

MethodConfig ClientMethodConfig(const FederationOptions& o, const MethodConfig& server, int client) {
  const std::vector<std::string> specs = absl::StrSplit(o.spec.model(), ';', absl::SkipEmpty());
  MethodConfig config = server;
  config.model_spec = specs[client % specs.size()];
  return config;
}

}  // namespace fgl::fl
