#include "fl/run_setup.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "fl/federation_spec.h"
#include "fl/registry.h"
#include "fl/round_schedule.h"
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

absl::StatusOr<FederationOptions> ResolveOptions(FederationOptions o) {
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
  return o;
}

absl::StatusOr<MethodConfig> ServerMethodConfig(const FederationOptions& o, int64_t num_features,
                                                int64_t num_classes) {
  const std::vector<std::string> specs = absl::StrSplit(o.spec.model(), ';', absl::SkipEmpty());
  if (specs.empty()) return absl::InvalidArgumentError("empty model spec");
  FGL_ASSIGN_OR_RETURN(torch::Device device, nn::ParseDevice(o.device));
  MethodConfig config;
  config.model_spec = specs[0];
  config.shared_group = o.spec.shared_group();
  config.num_features = num_features;
  config.num_classes = num_classes;
  config.local_epochs = o.spec.local_epochs();
  config.rounds = o.spec.rounds();
  config.num_clients = o.spec.clients();
  config.clients_per_round = ClientsPerRound(o, o.spec.clients());
  config.lr = o.spec.lr();
  config.weight_decay = o.spec.weight_decay();
  config.optimizer = o.spec.optimizer() == proto::FederationSpec::SGD ? MethodConfig::Optimizer::kSgd
                                                                      : MethodConfig::Optimizer::kAdam;
  config.momentum = o.spec.momentum();
  config.dropout_at_eval = o.eval().dropout_at_eval;
  config.params = MethodParamsOf(o.spec);
  config.seed = graph::Rng::Derive(o.seed, "init");
  config.run_seed = o.seed;
  config.dataset = o.spec.dataset();
  config.data_dir = graph::ResolveDataDir(o.spec.data_dir());
  config.partition_seed = o.spec.partition_seed();
  config.split = o.spec.split();
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
