// nFedGNN (Gao, Guo, Gong: "One Node Per User"): every node is a user that keeps its features and
// its first-layer map; only latents go up and their gradients come down; a graph-Laplacian term
// on the latents (λ) ties neighbouring users together. Algorithm 1 is node_level_federation.cc.
#include "methods/nfedgnn/nfedgnn.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "methods/nfedgnn/nfedgnn.pb.h"
#include "methods/nfedgnn/per_user.h"

namespace fgl::methods::nfedgnn {
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

fl::MethodFactories NodeLevelMethod(const std::string& name, UserModelsFactory make_users, bool laplacian_allowed) {
  fl::MethodFactories f;
  const std::string why = absl::StrCat(
      name, "'s users are rows of batched tensors in one process (methods/nfedgnn/README.md): it has no "
            "per-client algorithm to serve or join");
  f.client = [why](std::shared_ptr<const fl::ClientData>, const fl::MethodConfig&)
      -> absl::StatusOr<std::unique_ptr<fl::ClientAlgorithm>> { return absl::UnimplementedError(why); };
  f.server = [why](const fl::MethodConfig&) -> absl::StatusOr<std::unique_ptr<fl::ServerAlgorithm>> {
    return absl::UnimplementedError(why);
  };
  f.params = {fl::TypedParams(&Validate)};
  f.federation = [make_users, laplacian_allowed](const fl::FederationOptions& o,
                                                 const std::function<void(const fl::RoundRecord&)>& on_round) {
    return RunNodeLevelFederation(o, on_round, make_users, laplacian_allowed);
  };
  return f;
}

namespace {

// In process the users are batched; across processes (serve/join) each user is a client.
fl::MethodFactories Nfedgnn() {
  fl::MethodFactories f = NodeLevelMethod("nfedgnn", &MakePrivateUserModels, /*laplacian_allowed=*/true);
  f.client = &MakePerUserClient;
  f.server = &MakePerUserServer;
  return f;
}

const fl::MethodRegistrar kRegistrar("nfedgnn", Nfedgnn());

}  // namespace
}  // namespace fgl::methods::nfedgnn
