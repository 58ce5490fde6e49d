#include "fl/aggregate/prototypes.h"

#include "glog/logging.h"

namespace fgl::fl {

GlobalPrototypes CountWeightedPrototypes(const std::vector<torch::Tensor>& prototypes,
                                         const std::vector<torch::Tensor>& counts) {
  CHECK(!prototypes.empty() && prototypes.size() == counts.size());
  torch::Tensor sum = torch::zeros_like(prototypes[0], torch::kDouble);
  torch::Tensor total = torch::zeros({prototypes[0].size(0)}, torch::kDouble);
  for (size_t k = 0; k < prototypes.size(); ++k) {
    const torch::Tensor n = counts[k].to(torch::kDouble);
    sum += prototypes[k].to(torch::kDouble) * n.unsqueeze(1);
    total += n;
  }
  GlobalPrototypes out;
  out.present = total.gt(0);
  out.prototypes = (sum / total.clamp_min(1).unsqueeze(1)).to(prototypes[0].dtype());
  return out;
}

GlobalPrototypes ClientSizeWeightedPrototypes(const std::vector<torch::Tensor>& prototypes,
                                              const std::vector<double>& sizes) {
  CHECK(!prototypes.empty() && prototypes.size() == sizes.size());
  double total = 0;
  for (double n : sizes) total += n;
  CHECK_GT(total, 0);
  torch::Tensor sum = torch::zeros_like(prototypes[0], torch::kDouble);
  for (size_t k = 0; k < prototypes.size(); ++k) sum += prototypes[k].to(torch::kDouble) * (sizes[k] / total);
  return {sum.to(prototypes[0].dtype()), torch::ones({prototypes[0].size(0)}, torch::kBool)};
}

}  // namespace fgl::fl
