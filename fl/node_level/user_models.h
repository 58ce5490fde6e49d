// nFedGNN's users, batched: user i holds only its feature vector x_i and its first-layer map
// (x̄_i = x_i W_i + b_i for GCN, x_i W_i for GAT's 8 heads); thousands of users are rows of a few
// tensors, not thousands of objects, and every user steps with its own Adam state.
#ifndef FGL_FL_NODE_LEVEL_USER_MODELS_H_
#define FGL_FL_NODE_LEVEL_USER_MODELS_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fgl::fl::node_level {

// Every user's feature vector as its non-zero entries (CSR over users). A feature that is zero
// for user i never reaches an output through W_i, so only these rows of W_i are stored: memory
// is nnz(X)·H instead of n·d·H (Cora: 49k rows instead of 3.9M).
struct UserFeatures {
  int64_t num_users = 0, width = 0;
  torch::Tensor row_ptr;        // int64 [n + 1]
  torch::Tensor col;            // int64 [nnz]: the feature of each entry
  torch::Tensor values;         // float [nnz]
  torch::Tensor user_of_entry;  // int64 [nnz]

  static UserFeatures FromDense(const torch::Tensor& x);  // float [n, d]
};

// PyTorch's Adam step (torch::optim::Adam, betas (0.9, 0.999), eps 1e-8, L2-coupled weight
// decay) on a tensor of parameters that all share the step count `step` (1-based). Elementwise,
// so one call on every user's rows is every user's own Adam.
struct AdamOptions {
  double lr = 0.01, weight_decay = 5e-4;
};
void AdamStep(torch::Tensor& param, const torch::Tensor& grad, torch::Tensor& m, torch::Tensor& v,
              int64_t step, const AdamOptions& options);
// The same step for rows with their own step counts: row k uses steps[k] (double [rows]); rows
// where `active` is false are left as they are (parameters and moments).
void AdamStepRows(torch::Tensor& param, const torch::Tensor& grad, torch::Tensor& m, torch::Tensor& v,
                  const torch::Tensor& steps, const torch::Tensor& active, const AdamOptions& options);

struct UserModelOptions {
  int64_t latent_width = 16;  // H: 16 (GCN) or heads × hidden (GAT: 128)
  bool bias = true;           // GCN's user-side bias (§B.2.1); GAT's users have none
  AdamOptions adam;
  bool shared_init = false;   // one Glorot draw for every user instead of one each
  bool skip_zero_gradient = false;  // users with an all-zero gradient row take no step
  uint64_t seed = 0;
};

// The users' side of every round: latents up, then one Adam step on the gradients that come down.
class UserModels {
 public:
  virtual ~UserModels() = default;
  // x̄ [n, H] for the features' non-zero `values` [nnz] (dropout already applied where the model
  // has it on the user's input).
  virtual torch::Tensor Latents(const torch::Tensor& values) const = 0;
  // Every user's step for ∂L/∂x̄_i, the rows of `grad` [n, H], with the `values` of the forward.
  virtual void Step(const torch::Tensor& values, const torch::Tensor& grad) = 0;
  // Floats each user uploads and downloads besides its latent and its gradient (CNFGNN: its model).
  virtual int64_t model_floats_per_user() const { return 0; }
  // The users' whole state for checkpoints: named live tensors (restored by copying into them)
  // and the shared Adam step count.
  virtual std::vector<std::pair<std::string, torch::Tensor>> State() = 0;
  virtual int64_t step() const = 0;
  virtual void set_step(int64_t step) = 0;
};

// Every user's latent x̄_i = Σ_r values_r · entry_weights_r (+ bias) over its stored entries:
// [n, H] from `values` [nnz] and `entry_weights` [nnz, H]; `bias` is [n, H], [H] or undefined.
torch::Tensor SparseLatents(const UserFeatures& features, const torch::Tensor& values,
                            const torch::Tensor& entry_weights, const torch::Tensor& bias);

// nFedGNN's private user models, Glorot-initialised over [d, H] and stored for non-zero features.
std::unique_ptr<UserModels> MakePrivateUserModels(const UserFeatures& features, const UserModelOptions& options);

// The Glorot-uniform bound of a user's [d, H] map and one draw per entry (or per feature when
// shared): the initial weights of the entries, [nnz, H] (shared: [d, H]).
torch::Tensor InitialUserWeights(const UserFeatures& features, const UserModelOptions& options);

}  // namespace fgl::fl::node_level

#endif  // FGL_FL_NODE_LEVEL_USER_MODELS_H_
