// nFedGNN's Algorithm 1 (§B.4) over every user of a graph at once: each round the users upload
// their latents, the server runs the rest of the model, takes one Adam step and sends each user
// ∂L/∂x̄_i, and every user takes one Adam step on its own map. The users are rows of batched
// tensors (user_models.h), so a round over 2,708 users costs about one centralised step.
#ifndef FGL_FL_NODE_LEVEL_FEDERATION_H_
#define FGL_FL_NODE_LEVEL_FEDERATION_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "fl/federation.h"
#include "fl/node_level/user_models.h"

namespace fgl::fl::node_level {

// Makes the users' side: nFedGNN's private maps or CNFGNN's averaged ones.
using UserModelsFactory =
    std::function<std::unique_ptr<UserModels>(const UserFeatures& features, const UserModelOptions& options)>;

// Runs a resolved spec whose partitioner is "node_level" (clients = the node count). λ comes from
// the spec's NfedgnnParams. Bytes are counted per user as the float32 payloads it would send and
// receive: its latent (H floats) up and its gradient (H floats) down, plus
// model_floats_per_user() each way. Checkpoints are not supported (an error when asked for).
absl::StatusOr<fl::FederationResult> RunNodeLevelFederation(
    const fl::FederationOptions& options, const std::function<void(const fl::RoundRecord&)>& on_round,
    const UserModelsFactory& make_users, bool laplacian_allowed);

}  // namespace fgl::fl::node_level

#endif  // FGL_FL_NODE_LEVEL_FEDERATION_H_
