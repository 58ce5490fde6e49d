// The weighted mean of named tensors from several clients (FedAvg's server step).
#ifndef FGL_FL_AGGREGATE_WEIGHTED_MEAN_H_
#define FGL_FL_AGGREGATE_WEIGHTED_MEAN_H_

#include <torch/torch.h>

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace fgl::fl {

// Sum_k w_k t_k / Sum_k w_k per tensor name, accumulated in float64 in the order Accumulate is
// called (the simulator calls it in client-id order, so results are deterministic).
class WeightedMean {
 public:
  WeightedMean() = default;
  WeightedMean(const WeightedMean&) = delete;
  WeightedMean& operator=(const WeightedMean&) = delete;

  // InvalidArgument for a weight <= 0 or non-finite, a non-finite tensor, or names/shapes that
  // differ from the first contribution; nothing is added then.
  absl::Status Accumulate(const std::map<std::string, torch::Tensor>& tensors, double weight);
  bool CanReport() const { return total_weight_ > 0; }
  int count() const { return count_; }
  // The means, in the dtype of the first contribution; FailedPrecondition when empty.
  // Consumes the aggregator.
  absl::StatusOr<std::map<std::string, torch::Tensor>> Report() &&;

 private:
  std::map<std::string, torch::Tensor> sums_;
  std::map<std::string, torch::ScalarType> types_;
  double total_weight_ = 0;
  int count_ = 0;
  bool reported_ = false;
};

}  // namespace fgl::fl

#endif  // FGL_FL_AGGREGATE_WEIGHTED_MEAN_H_
