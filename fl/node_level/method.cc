#include "fl/node_level/method.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "fl/node_level/params.pb.h"

namespace fgl::fl::node_level {
namespace {

absl::Status Validate(const NfedgnnParams& p) {
  if (p.has_user_weight_decay() && !(std::isfinite(p.user_weight_decay()) && p.user_weight_decay() >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("NfedgnnParams.user_weight_decay must be finite and >= 0, not ", p.user_weight_decay()));
  }
  if (!std::isfinite(p.laplacian_weight()) || p.laplacian_weight() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("NfedgnnParams.laplacian_weight must be finite and >= 0, not ", p.laplacian_weight()));
  }
  return absl::OkStatus();
}

}  // namespace

MethodFactories NodeLevelMethod(const std::string& name, UserModelsFactory make_users, bool laplacian_allowed) {
  MethodFactories f;
  const std::string why = absl::StrCat(
      name, "'s users are rows of batched tensors in one process (methods/nfedgnn/README.md): it has no "
            "per-client algorithm to serve or join");
  f.client = [why](std::shared_ptr<const ClientData>, const MethodConfig&)
      -> absl::StatusOr<std::unique_ptr<ClientAlgorithm>> { return absl::UnimplementedError(why); };
  f.server = [why](const MethodConfig&) -> absl::StatusOr<std::unique_ptr<ServerAlgorithm>> {
    return absl::UnimplementedError(why);
  };
  f.params = {TypedParams(&Validate)};
  f.federation = [make_users, laplacian_allowed](const FederationOptions& o,
                                                 const std::function<void(const RoundRecord&)>& on_round) {
    return RunNodeLevelFederation(o, on_round, make_users, laplacian_allowed);
  };
  return f;
}

}  // namespace fgl::fl::node_level
