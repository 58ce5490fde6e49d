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
#include "fl/node_level/server_side.h"
#include "fl/node_level/user_models.h"
#include "fl/proto/message.pb.h"
#include "graph/dataset.h"
#include "graph/split.h"

namespace fgl::fl::node_level {

// Makes the users' side: nFedGNN's private maps or CNFGNN's averaged ones.
using UserModelsFactory =
    std::function<std::unique_ptr<UserModels>(const UserFeatures& features, const UserModelOptions& options)>;

// What a run computed, for tests that hold the runtime against a reference implementation
// (//methods/testing:trace). Reported before the first round (`round` 0, or the round a resumed
// run continues after) and after every round; the tensors are copies.
struct RoundTrace {
  int round = 0;
  // The run's data, its split and the users' non-zero features (valid during the call).
  const graph::Dataset* data = nullptr;
  const graph::NodeSplit* split = nullptr;
  const UserFeatures* features = nullptr;
  // Rounds >= 1: the users' feature values after input dropout [nnz], their latents [n, H], the
  // server's step (training-mode logits, CE, L_reg) and loss, the gradients sent down [n, H],
  // and the model after the round scored (eval-mode logits [n, C]).
  torch::Tensor values, latents, gradients, eval_logits;
  StepDetails step;
  double loss = 0;
  // The states after the round, as a checkpoint holds them: the server's parameters and Adam
  // state ("adam.*", fl/optimizer_state.h), the users' UserModels::State() and scalar "step".
  fl::proto::Message server, users;
};
using RoundTracer = std::function<void(const RoundTrace&)>;

// While alive, RunNodeLevelFederation on this thread reports to `tracer`; the run's numbers are
// the same with or without it. Scopes nest; the innermost wins. Tests only.
class RoundTracerScope {
 public:
  explicit RoundTracerScope(RoundTracer tracer);
  ~RoundTracerScope();
  RoundTracerScope(const RoundTracerScope&) = delete;
  RoundTracerScope& operator=(const RoundTracerScope&) = delete;

 private:
  RoundTracer tracer_;
  const RoundTracer* previous_;
};

// The seed of round t's dropout stream (nn::DropoutSeedScope): the users' input dropout, then
// the server's training forward draw their masks from it in that order.
uint64_t RoundDropoutSeed(uint64_t run_seed, int round);

// Runs a resolved spec whose partitioner is "node_level" (clients = the node count). λ comes from
// the spec's NfedgnnParams. Bytes are counted per user as the float32 payloads it would send and
// receive: its latent (H floats) up and its gradient (H floats) down, plus
// model_floats_per_user() each way. Checkpoints (o.checkpoint_dir/checkpoint.pb, the runner's own
// layout) resume bit for bit.
absl::StatusOr<fl::proto::FederationResult> RunNodeLevelFederation(
    const fl::ResolvedOptions& options, const std::function<void(const fl::proto::RoundRecord&)>& on_round,
    const UserModelsFactory& make_users, bool laplacian_allowed);

}  // namespace fgl::fl::node_level

#endif  // FGL_FL_NODE_LEVEL_FEDERATION_H_
