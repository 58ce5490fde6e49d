#include "fl/aggregate/weighted_mean.h"

#include <cmath>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "fl/tensor_codec.h"

namespace fgl::fl {
namespace {

bool IsDenseFloat32(const torch::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == torch::kFloat32 && t.is_contiguous();
}

// sum = sum + double(x) * weight, elementwise, in one pass. Each step rounds exactly as
// `sum.add_(x.to(kFloat64) * weight)` does (a product, then a sum; no fused multiply-add at the
// x86-64 baseline), so the result is bit-identical to the tensor expression it replaces.
void AddScaledFloat32(const float* x, double weight, int64_t n, double* sum, bool first) {
  if (first) {
    for (int64_t i = 0; i < n; ++i) sum[i] = static_cast<double>(x[i]) * weight;
  } else {
    for (int64_t i = 0; i < n; ++i) sum[i] += static_cast<double>(x[i]) * weight;
  }
}

}  // namespace

absl::Status WeightedMean::Accumulate(const std::map<std::string, torch::Tensor>& tensors,
                                      double weight) {
  if (reported_) return absl::FailedPreconditionError("WeightedMean::Accumulate after Report");
  if (!(weight > 0) || !std::isfinite(weight)) {
    return absl::InvalidArgumentError(absl::StrCat("WeightedMean: weight ", weight));
  }
  if (!sums_.empty() && tensors.size() != sums_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("WeightedMean: ", tensors.size(),
                                                   " tensors, expected ", sums_.size()));
  }
  for (const auto& [name, t] : tensors) {
    if (!AllFinite(t)) {
      return absl::InvalidArgumentError(absl::StrCat("WeightedMean: tensor '", name, "' is not finite"));
    }
    if (!sums_.empty()) {
      auto it = sums_.find(name);
      if (it == sums_.end() || it->second.sizes() != t.sizes()) {
        return absl::InvalidArgumentError(absl::StrCat("WeightedMean: unexpected tensor '", name, "'"));
      }
    }
  }
  for (const auto& [name, t] : tensors) {
    auto it = sums_.find(name);
    if (IsDenseFloat32(t)) {
      // The server's hot path: one pass, one allocation per tensor for the whole round.
      const bool first = it == sums_.end();
      if (first) {
        it = sums_.emplace(name, torch::empty(t.sizes(), torch::kFloat64)).first;
        types_.emplace(name, t.scalar_type());
      }
      AddScaledFloat32(t.data_ptr<float>(), weight, t.numel(), it->second.data_ptr<double>(), first);
      continue;
    }
    // Contiguous, so that a later float32 contribution may take the one-pass path.
    torch::Tensor contribution = (t.detach().to(torch::kFloat64) * weight).contiguous();
    if (it == sums_.end()) {
      sums_.emplace(name, contribution);
      types_.emplace(name, t.scalar_type());
    } else {
      it->second.add_(contribution);
    }
  }
  total_weight_ += weight;
  ++count_;
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, torch::Tensor>> WeightedMean::Report() && {
  if (reported_) return absl::FailedPreconditionError("WeightedMean::Report called twice");
  if (!CanReport()) return absl::FailedPreconditionError("WeightedMean::Report with no contribution");
  reported_ = true;
  std::map<std::string, torch::Tensor> out;
  for (auto& [name, sum] : sums_) out.emplace(name, (sum / total_weight_).to(types_[name]));
  return out;
}

}  // namespace fgl::fl
