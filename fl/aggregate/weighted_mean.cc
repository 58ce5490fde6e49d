#include "fl/aggregate/weighted_mean.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fgl::fl {

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
    if (!torch::isfinite(t).all().item<bool>()) {
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
    torch::Tensor contribution = t.detach().to(torch::kFloat64) * weight;
    auto it = sums_.find(name);
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
