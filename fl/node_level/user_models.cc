#include "fl/node_level/user_models.h"

#include <cmath>

#include "glog/logging.h"

namespace fgl::fl::node_level {

UserFeatures UserFeatures::FromDense(const torch::Tensor& x) {
  CHECK_EQ(x.dim(), 2);
  UserFeatures f;
  f.num_users = x.size(0);
  f.width = x.size(1);
  torch::Tensor dense = x.to(torch::kFloat).contiguous();
  torch::Tensor nz = dense.nonzero();  // [nnz, 2], row-major order
  f.user_of_entry = nz.select(1, 0).contiguous();
  f.col = nz.select(1, 1).contiguous();
  f.values = dense.index({f.user_of_entry, f.col}).contiguous();
  f.row_ptr = torch::zeros({f.num_users + 1}, torch::kInt64);
  f.row_ptr.slice(0, 1).copy_(torch::bincount(f.user_of_entry, {}, f.num_users).cumsum(0));
  return f;
}

void AdamStep(torch::Tensor& param, const torch::Tensor& grad, torch::Tensor& m, torch::Tensor& v,
              int64_t step, const AdamOptions& options) {
  // The operations and their order are torch::optim::Adam's (LibTorch 1.13, amsgrad off), so a
  // user's rows take exactly the step a per-user torch::optim::Adam would.
  constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;
  torch::NoGradGuard no_grad;
  const double bias_correction1 = 1 - std::pow(kBeta1, step);
  const double bias_correction2 = 1 - std::pow(kBeta2, step);
  torch::Tensor g = options.weight_decay != 0 ? grad.add(param, options.weight_decay) : grad;
  m.mul_(kBeta1).add_(g, 1 - kBeta1);
  v.mul_(kBeta2).addcmul_(g, g, 1 - kBeta2);
  torch::Tensor denom = (v.sqrt() / std::sqrt(bias_correction2)).add_(kEps);
  param.addcdiv_(m, denom, -options.lr / bias_correction1);
}

void AdamStepRows(torch::Tensor& param, const torch::Tensor& grad, torch::Tensor& m, torch::Tensor& v,
                  const torch::Tensor& steps, const torch::Tensor& active, const AdamOptions& options) {
  constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;
  torch::NoGradGuard no_grad;
  // Bias corrections per row, in double as torch::optim::Adam computes them, then to float.
  const torch::Tensor bias_correction1 = (1 - torch::pow(kBeta1, steps)).to(param.dtype()).unsqueeze(1);
  const torch::Tensor bias_correction2 = (1 - torch::pow(kBeta2, steps)).to(param.dtype()).unsqueeze(1);
  torch::Tensor g = options.weight_decay != 0 ? grad.add(param, options.weight_decay) : grad;
  const torch::Tensor m_new = m * kBeta1 + g * (1 - kBeta1);
  const torch::Tensor v_new = v * kBeta2 + g * g * (1 - kBeta2);
  const torch::Tensor denom = v_new.sqrt() / bias_correction2.sqrt() + kEps;
  const torch::Tensor param_new = param - options.lr / bias_correction1 * m_new / denom;
  const torch::Tensor keep = active.unsqueeze(1);
  m = torch::where(keep, m_new, m);
  v = torch::where(keep, v_new, v);
  param = torch::where(keep, param_new, param);
}

torch::Tensor SparseLatents(const UserFeatures& features, const torch::Tensor& values,
                            const torch::Tensor& entry_weights, const torch::Tensor& bias) {
  torch::Tensor out = torch::zeros({features.num_users, entry_weights.size(1)})
                          .index_add_(0, features.user_of_entry, values.unsqueeze(1) * entry_weights);
  return bias.defined() ? out + bias : out;
}

torch::Tensor InitialUserWeights(const UserFeatures& features, const UserModelOptions& options) {
  torch::Generator gen = at::detail::createCPUGenerator(options.seed);
  const double bound = std::sqrt(6.0 / static_cast<double>(features.width + options.latent_width));
  const int64_t rows = options.shared_init ? features.width : features.col.size(0);
  return torch::empty({rows, options.latent_width}, torch::kFloat).uniform_(-bound, bound, gen);
}

namespace {

class PrivateUserModels final : public UserModels {
 public:
  PrivateUserModels(const UserFeatures& features, const UserModelOptions& options)
      : features_(features), options_(options) {
    weights_ = InitialUserWeights(features, options);
    if (options.shared_init) weights_ = weights_.index_select(0, features.col);
    m_w_ = torch::zeros_like(weights_);
    v_w_ = torch::zeros_like(weights_);
    if (options.bias) {
      bias_ = torch::zeros({features.num_users, options.latent_width});
      m_b_ = torch::zeros_like(bias_);
      v_b_ = torch::zeros_like(bias_);
    }
    if (options.skip_zero_gradient) user_steps_ = torch::zeros({features.num_users}, torch::kDouble);
  }

  std::vector<std::pair<std::string, torch::Tensor>> State() override {
    std::vector<std::pair<std::string, torch::Tensor>> out = {{"weights", weights_}, {"m_w", m_w_}, {"v_w", v_w_}};
    if (bias_.defined()) out.insert(out.end(), {{"bias", bias_}, {"m_b", m_b_}, {"v_b", v_b_}});
    if (user_steps_.defined()) out.emplace_back("user_steps", user_steps_);
    return out;
  }
  int64_t step() const override { return step_; }
  void set_step(int64_t step) override { step_ = step; }

  torch::Tensor Latents(const torch::Tensor& values) const override {
    return SparseLatents(features_, values, weights_, bias_);
  }

  void Step(const torch::Tensor& values, const torch::Tensor& grad) override {
    // ∂L/∂W_i = x_iᵀ g_i on the stored rows; every user's gradient is defined (possibly zero), as
    // in PyTorch, so weight decay moves even users no label reaches (§B.4).
    torch::Tensor grad_w = values.unsqueeze(1) * grad.index_select(0, features_.user_of_entry);
    if (!options_.skip_zero_gradient) {
      ++step_;
      AdamStep(weights_, grad_w, m_w_, v_w_, step_, options_.adam);
      if (bias_.defined()) AdamStep(bias_, grad, m_b_, v_b_, step_, options_.adam);
      return;
    }
    // Only users with a non-zero gradient step, each with its own step count.
    const torch::Tensor active = grad.ne(0).any(1);
    user_steps_.add_(active.to(torch::kDouble));
    const torch::Tensor entry_steps = user_steps_.index_select(0, features_.user_of_entry);
    AdamStepRows(weights_, grad_w, m_w_, v_w_, entry_steps, active.index_select(0, features_.user_of_entry),
                 options_.adam);
    if (bias_.defined()) AdamStepRows(bias_, grad, m_b_, v_b_, user_steps_, active, options_.adam);
  }

 private:
  const UserFeatures& features_;
  UserModelOptions options_;
  torch::Tensor weights_, m_w_, v_w_;  // [nnz, H]
  torch::Tensor bias_, m_b_, v_b_;     // [n, H] or undefined
  int64_t step_ = 0;
  torch::Tensor user_steps_;  // double [n], with skip_zero_gradient only (updated in place)
};

}  // namespace

std::unique_ptr<UserModels> MakePrivateUserModels(const UserFeatures& features, const UserModelOptions& options) {
  return std::make_unique<PrivateUserModels>(features, options);
}

}  // namespace fgl::fl::node_level
