// nFedGNN (Gao, Guo, Gong: "One Node Per User"): every node is a user that keeps its features and
// its first-layer map; only latents go up and their gradients come down; a graph-Laplacian term
// on the latents (λ) ties neighbouring users together. Algorithm 1 is fl/node_level/federation.cc,
// the node-level runtime nFedGNN shares with CNFGNN.
#include "fl/node_level/method.h"
#include "fl/node_level/user_models.h"
#include "methods/nfedgnn/per_user.h"

namespace fgl::methods::nfedgnn {
namespace {

// In process the users are batched; across processes (serve/join) each user is a client.
fl::MethodFactories Nfedgnn() {
  fl::MethodFactories f =
      fl::node_level::NodeLevelMethod("nfedgnn", &fl::node_level::MakePrivateUserModels, /*laplacian_allowed=*/true);
  f.client = &MakePerUserClient;
  f.server = &MakePerUserServer;
  return f;
}

const fl::MethodRegistrar kRegistrar("nfedgnn", Nfedgnn());

}  // namespace
}  // namespace fgl::methods::nfedgnn
