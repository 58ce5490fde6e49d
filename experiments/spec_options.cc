#include "experiments/spec_options.h"

#include "absl/strings/str_split.h"
#include "experiments/spec.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::experiments {

absl::StatusOr<fl::FederationOptions> OptionsFromSpec(const std::string& spec_path, const std::string& sets,
                                                  uint64_t seed) {
  if (spec_path.empty()) return absl::InvalidArgumentError("--spec is required");
  FGL_ASSIGN_OR_RETURN(proto::Experiment spec, LoadExperiment(spec_path));
  for (absl::string_view a : absl::StrSplit(sets, ';', absl::SkipEmpty())) {
    FGL_RETURN_IF_ERROR(ApplySet(std::string(a), &spec));
  }
  FGL_ASSIGN_OR_RETURN(proto::Experiment resolved, Resolve(spec, spec_path));
  if (seed == 0) seed = resolved.seeds(0);
  return ToFederationOptions(resolved, seed);  // resolved: every field present
}

}  // namespace fgl::experiments
