// The server's half of every nFedGNN round, shared by the batched runner and the per-user
// deployment: the split model with its Adam, the topology, the training users' labels and λ.
#ifndef FGL_FL_NODE_LEVEL_SERVER_SIDE_H_
#define FGL_FL_NODE_LEVEL_SERVER_SIDE_H_

#include <torch/torch.h>

#include <memory>

#include "absl/status/statusor.h"
#include "fl/tensor_codec.h"
#include "graph/dataset.h"
#include "fl/node_level/params.pb.h"
#include "fl/node_level/split_server.h"
#include "fl/node_level/user_models.h"
#include "nn/graph_view.h"

namespace fgl::fl::node_level {

// What a training step computed besides the loss and the gradients, for tests that hold the
// runtime against a reference implementation (federation.h's RoundTracer).
struct StepDetails {
  torch::Tensor logits;  // [n, C] of the training-mode forward (pre-update model)
  double ce = 0;         // the cross-entropy term
  double reg = 0;        // L_reg of the latents (computed for the record when λ = 0)
};

class ServerSide {
 public:
  // The split model is initialised from Derive(run_seed, "nfedgnn/server_init"). InvalidArgument
  // when the split has no training user.
  static absl::StatusOr<std::unique_ptr<ServerSide>> Create(const SplitModelSpec& model, const graph::Dataset& data,
                                                            const graph::NodeSplit& split, double lr,
                                                            double weight_decay, const NfedgnnParams& params,
                                                            uint64_t run_seed);
  // One training step on every user's latent [n, H] with the pre-update model (§B.10 #2, #3):
  // CE over the training users (mean or sum, NfedgnnParams.ce_reduction) + λ·L_reg, one backward pass, one Adam step. Returns the
  // loss; `gradients` gets ∂L/∂x̄ [n, H]; `details`, when given, the logits and both terms.
  double Step(const torch::Tensor& latents, torch::Tensor* gradients, StepDetails* details = nullptr);
  // Logits [n, C] of the eval-mode model.
  torch::Tensor EvalLogits(const torch::Tensor& latents);
  // The model's parameters and its optimiser, for checkpoints.
  fl::NamedTensors Parameters() const;
  torch::optim::Adam& optimizer() { return *optimizer_; }

 private:
  ServerSide(SplitServer model, nn::GraphView graph) : model_(std::move(model)), graph_(std::move(graph)) {}
  SplitServer model_;
  nn::GraphView graph_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  torch::Tensor train_index_, train_labels_;
  double laplacian_weight_ = 0;
  bool sum_ce_ = false;
};

// The users' options of a run: latent width and bias from the split model, Adam from the run,
// init and skip switch from the params.
UserModelOptions UserOptionsFor(const SplitModelSpec& model, const NfedgnnParams& params, double lr,
                                double weight_decay, uint64_t seed);

}  // namespace fgl::fl::node_level

#endif  // FGL_FL_NODE_LEVEL_SERVER_SIDE_H_
