#include "nn/adam.h"

#include <array>
#include <cmath>
#include <string>

#include "c10/util/string_utils.h"

namespace fgl::nn {
namespace {

thread_local std::array<torch::Tensor, 2> scratch;

// A tensor shaped like `like` in scratch buffer `i`, grown when too small. Parameters are
// contiguous; anything else gets a fresh tensor, as LibTorch's step would allocate.
torch::Tensor Scratch(int i, const torch::Tensor& like) {
  if (!like.is_contiguous()) return torch::empty_like(like);
  torch::Tensor& buffer = scratch[i];
  if (!buffer.defined() || buffer.numel() < like.numel() || buffer.dtype() != like.dtype() ||
      buffer.device() != like.device()) {
    buffer = torch::Tensor();  // free the old one first: peak memory as LibTorch's
    buffer = torch::empty({like.numel()}, like.options());
  }
  return buffer.narrow(0, 0, like.numel()).view(like.sizes());
}

}  // namespace

// The operations and their order are LibTorch 1.13's Adam::step (amsgrad off); only where the
// temporaries live differs. nn/adam_test.cc compares the two bit for bit.
torch::Tensor Adam::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    auto& options = static_cast<torch::optim::AdamOptions&>(group.options());
    TORCH_CHECK(!options.amsgrad(), "fgl::nn::Adam does not implement amsgrad");
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      torch::Tensor grad = p.grad();
      TORCH_CHECK(!grad.is_sparse(), "Adam does not support sparse gradients");
      const std::string key = c10::guts::to_string(p.unsafeGetTensorImpl());
      if (state_.find(key) == state_.end()) {
        auto state = std::make_unique<torch::optim::AdamParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state_[key] = std::move(state);
      }
      auto& state = static_cast<torch::optim::AdamParamState&>(*state_[key]);
      torch::Tensor& exp_avg = state.exp_avg();
      torch::Tensor& exp_avg_sq = state.exp_avg_sq();
      state.step(state.step() + 1);
      const double beta1 = std::get<0>(options.betas());
      const double beta2 = std::get<1>(options.betas());
      const double bias_correction1 = 1 - std::pow(beta1, state.step());
      const double bias_correction2 = 1 - std::pow(beta2, state.step());
      if (options.weight_decay() != 0) {
        torch::Tensor decayed = Scratch(0, grad);
        at::add_out(decayed, grad, p, options.weight_decay());
        grad = decayed;
      }
      exp_avg.mul_(beta1).add_(grad, 1 - beta1);
      exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
      torch::Tensor denom = Scratch(1, exp_avg_sq);
      at::sqrt_out(denom, exp_avg_sq);
      denom.div_(std::sqrt(bias_correction2)).add_(options.eps());
      p.addcdiv_(exp_avg, denom, -options.lr() / bias_correction1);
    }
  }
  return loss;
}

void Adam::ReleaseScratch() { scratch = {}; }

}  // namespace fgl::nn
