#include "methods/cnfgnn/averaged_user_models.h"

#include "glog/logging.h"

namespace fgl::methods::cnfgnn {
namespace {

using fl::node_level::AdamStep;

class AveragedUserModels final : public fl::node_level::UserModels {
 public:
  AveragedUserModels(const fl::node_level::UserFeatures& features, const fl::node_level::UserModelOptions& options)
      : features_(features), options_(options) {
    fl::node_level::UserModelOptions shared = options;
    shared.shared_init = true;  // every user starts from the same θ̄_0 [P, §B.5]
    average_ = fl::node_level::InitialUserWeights(features, shared);  // [d, H]
    m_entry_ = torch::zeros({features.col.size(0), options.latent_width});
    v_entry_ = torch::zeros_like(m_entry_);
    m_background_ = torch::zeros_like(average_);
    v_background_ = torch::zeros_like(average_);
    // Users without feature r: n − (users with it).
    absent_ = (features.num_users - torch::bincount(features.col, {}, features.width)).to(torch::kFloat).unsqueeze(1);
    if (options.bias) {
      bias_average_ = torch::zeros({options.latent_width});
      m_bias_ = torch::zeros({features.num_users, options.latent_width});
      v_bias_ = torch::zeros_like(m_bias_);
    }
  }

  torch::Tensor Latents(const torch::Tensor& values) const override {
    return fl::node_level::SparseLatents(features_, values, average_.index_select(0, features_.col), bias_average_);
  }

  void Step(const torch::Tensor& values, const torch::Tensor& grad) override {
    torch::NoGradGuard no_grad;
    ++step_;
    // Every user's updated rows: its own where x_i[r] != 0, the background step elsewhere.
    torch::Tensor entry = average_.index_select(0, features_.col);
    AdamStep(entry, values.unsqueeze(1) * grad.index_select(0, features_.user_of_entry), m_entry_, v_entry_, step_,
             options_.adam);
    torch::Tensor background = average_.clone();
    AdamStep(background, torch::zeros_like(background), m_background_, v_background_, step_, options_.adam);
    // The server's average over all n users of their updated maps.
    torch::Tensor sum = (background * absent_).index_add_(0, features_.col, entry);
    average_.copy_(sum / static_cast<double>(features_.num_users));
    if (bias_average_.defined()) {
      torch::Tensor bias = bias_average_.expand({features_.num_users, options_.latent_width}).clone();
      AdamStep(bias, grad, m_bias_, v_bias_, step_, options_.adam);
      bias_average_.copy_(bias.mean(0));
    }
  }

  std::vector<std::pair<std::string, torch::Tensor>> State() override {
    std::vector<std::pair<std::string, torch::Tensor>> out = {
        {"average", average_},           {"m_entry", m_entry_},           {"v_entry", v_entry_},
        {"m_background", m_background_}, {"v_background", v_background_}};
    if (bias_average_.defined()) {
      out.insert(out.end(), {{"bias_average", bias_average_}, {"m_bias", m_bias_}, {"v_bias", v_bias_}});
    }
    return out;
  }
  int64_t step() const override { return step_; }
  void set_step(int64_t step) override { step_ = step; }

  // The whole [d, H] map (and bias) goes up after the step and the average comes down.
  int64_t model_floats_per_user() const override {
    return average_.numel() + (bias_average_.defined() ? bias_average_.numel() : 0);
  }

 private:
  const fl::node_level::UserFeatures& features_;
  fl::node_level::UserModelOptions options_;
  torch::Tensor average_;                      // θ̄ [d, H]
  torch::Tensor m_entry_, v_entry_;            // per (user, non-zero feature) [nnz, H]
  torch::Tensor m_background_, v_background_;  // per feature, for every user without it [d, H]
  torch::Tensor absent_;                       // [d, 1]
  torch::Tensor bias_average_, m_bias_, v_bias_;
  int64_t step_ = 0;
};

}  // namespace

std::unique_ptr<fl::node_level::UserModels> MakeAveragedUserModels(const fl::node_level::UserFeatures& features,
                                                            const fl::node_level::UserModelOptions& options) {
  return std::make_unique<AveragedUserModels>(features, options);
}

}  // namespace fgl::methods::cnfgnn
