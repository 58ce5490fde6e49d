#include "fl/node_level/method.h"

#include "absl/strings/str_cat.h"
#include "fl/node_level/params.pb.h"

namespace fgl::fl::node_level {

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
  f.params = {TypedParams<NfedgnnParams>()};  // ranges on the fields
  f.federation = [make_users, laplacian_allowed](const ResolvedOptions& o,
                                                 const std::function<void(const proto::RoundRecord&)>& on_round) {
    return RunNodeLevelFederation(o, on_round, make_users, laplacian_allowed);
  };
  return f;
}

}  // namespace fgl::fl::node_level
