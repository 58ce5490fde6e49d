#include "nn/adam.h"

#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "c10/util/string_utils.h"
#include "nn/spill_file.h"

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

Adam::~Adam() = default;

absl::Status Adam::Spill(const std::string& dir, int64_t min_bytes) {
  TORCH_CHECK(!spilled(), "fgl::nn::Adam::Spill: already spilled");
  std::vector<Spilled> chosen;
  std::vector<torch::Tensor> moments;
  for (auto& [key, base] : state_) {
    auto& state = static_cast<torch::optim::AdamParamState&>(*base);
    for (const bool squared : {false, true}) {
      const torch::Tensor& moment = squared ? state.exp_avg_sq() : state.exp_avg();
      const int64_t bytes = moment.numel() * static_cast<int64_t>(moment.element_size());
      if (bytes >= min_bytes && moment.device().is_cpu()) {
        chosen.push_back({key, squared, moment.options()});
        moments.push_back(moment);
      }
    }
  }
  if (chosen.empty()) return absl::OkStatus();  // nothing worth a file
  absl::StatusOr<SpillFile> file = SpillFile::Write(dir, moments);
  if (!file.ok()) return absl::Status(file.status().code(), absl::StrCat("optimiser state: ", file.status().message()));
  moments.clear();
  // Only now that every write succeeded are the moments freed.
  for (const Spilled& s : chosen) {
    auto& state = static_cast<torch::optim::AdamParamState&>(*state_.at(s.key));
    torch::Tensor empty = torch::empty({0}, s.options);
    s.squared ? state.exp_avg_sq(empty) : state.exp_avg(empty);
  }
  spill_file_ = std::make_unique<SpillFile>(*std::move(file));
  spilled_ = std::move(chosen);
  return absl::OkStatus();
}

absl::Status Adam::Unspill() {
  if (!spilled()) return absl::OkStatus();
  absl::StatusOr<std::vector<torch::Tensor>> moments = spill_file_->Read();
  if (!moments.ok()) return absl::Status(moments.status().code(), absl::StrCat("optimiser state: ", moments.status().message()));
  for (size_t i = 0; i < spilled_.size(); ++i) {
    auto& state = static_cast<torch::optim::AdamParamState&>(*state_.at(spilled_[i].key));
    spilled_[i].squared ? state.exp_avg_sq((*moments)[i]) : state.exp_avg((*moments)[i]);
  }
  spill_file_.reset();
  spilled_.clear();
  return absl::OkStatus();
}

// The operations and their order are LibTorch 1.13's Adam::step (amsgrad off); only where the
// temporaries live differs. nn/adam_test.cc compares the two bit for bit.
torch::Tensor Adam::step(LossClosure closure) {
  TORCH_CHECK(!spilled(), "fgl::nn::Adam::step with its moments spilled: Unspill first");
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
