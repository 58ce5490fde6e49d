#include "fl/optimizer_state.h"

#include "absl/strings/str_cat.h"
#include "nn/adam.h"

namespace fgl::fl {
namespace {

// Spilled moments (nn::Adam::Spill) are empty in memory: reading or replacing the state then is a
// programmer error (Unspill first).
void CheckNotSpilled(const torch::optim::Adam& optimizer) {
  const auto* ours = dynamic_cast<const nn::Adam*>(&optimizer);
  TORCH_CHECK(ours == nullptr || !ours->spilled(), "Adam state saved or restored while spilled: Unspill first");
}

}  // namespace

void SaveAdamState(const torch::optim::Adam& optimizer, const NamedTensors& params,
                   const std::string& prefix, proto::Message* message) {
  CheckNotSpilled(optimizer);
  auto& optim = const_cast<torch::optim::Adam&>(optimizer);  // state() has no const overload
  auto& state = optim.state();
  NamedTensors tensors;
  for (const auto& [name, p] : params) {
    auto it = state.find(c10::guts::to_string(p.unsafeGetTensorImpl()));
    if (it == state.end()) continue;  // not stepped yet
    const auto& s = static_cast<const torch::optim::AdamParamState&>(*it->second);
    tensors.emplace_back(prefix + "exp_avg." + name, s.exp_avg());
    tensors.emplace_back(prefix + "exp_avg_sq." + name, s.exp_avg_sq());
    (*message->mutable_scalars())[prefix + "step." + name] = static_cast<double>(s.step());
  }
  AddTensors(tensors, message);
}

absl::Status RestoreAdamState(const proto::Message& message,
                              const std::map<std::string, torch::Tensor>& tensors,
                              const NamedTensors& params, const std::string& prefix,
                              const std::string& owner, torch::optim::Adam* optimizer) {
  CheckNotSpilled(*optimizer);
  auto& state = optimizer->state();
  state.clear();
  for (const auto& [name, p] : params) {
    auto step = message.scalars().find(prefix + "step." + name);
    if (step == message.scalars().end()) continue;
    auto avg = tensors.find(prefix + "exp_avg." + name);
    auto sq = tensors.find(prefix + "exp_avg_sq." + name);
    if (avg == tensors.end() || sq == tensors.end() || avg->second.sizes() != p.sizes() ||
        sq->second.sizes() != p.sizes() || !(step->second >= 0)) {
      return absl::InvalidArgumentError(absl::StrCat(owner, ": bad optimiser state for '", prefix, name, "'"));
    }
    auto s = std::make_unique<torch::optim::AdamParamState>();
    s->step(static_cast<int64_t>(step->second));
    s->exp_avg(avg->second.to(p.device()));
    s->exp_avg_sq(sq->second.to(p.device()));
    state[c10::guts::to_string(p.unsafeGetTensorImpl())] = std::move(s);
  }
  return absl::OkStatus();
}

void SaveSgdState(const torch::optim::SGD& optimizer, const NamedTensors& params, const std::string& prefix,
                  proto::Message* message) {
  auto& state = const_cast<torch::optim::SGD&>(optimizer).state();  // state() has no const overload
  NamedTensors tensors;
  for (const auto& [name, p] : params) {
    auto it = state.find(c10::guts::to_string(p.unsafeGetTensorImpl()));
    if (it == state.end()) continue;  // not stepped yet, or no momentum
    tensors.emplace_back(prefix + "momentum_buffer." + name,
                         static_cast<const torch::optim::SGDParamState&>(*it->second).momentum_buffer());
  }
  AddTensors(tensors, message);
}

absl::Status RestoreSgdState(const std::map<std::string, torch::Tensor>& tensors, const NamedTensors& params,
                             const std::string& prefix, const std::string& owner, torch::optim::SGD* optimizer) {
  auto& state = optimizer->state();
  state.clear();
  for (const auto& [name, p] : params) {
    auto buffer = tensors.find(prefix + "momentum_buffer." + name);
    if (buffer == tensors.end()) continue;
    if (buffer->second.sizes() != p.sizes()) {
      return absl::InvalidArgumentError(absl::StrCat(owner, ": bad optimiser state for '", prefix, name, "'"));
    }
    auto s = std::make_unique<torch::optim::SGDParamState>();
    s->momentum_buffer(buffer->second.to(p.device()));
    state[c10::guts::to_string(p.unsafeGetTensorImpl())] = std::move(s);
  }
  return absl::OkStatus();
}

}  // namespace fgl::fl
