#include "methods/fedego/mixup.h"

#include <algorithm>
#include <cmath>

namespace fgl::methods::fedego {

torch::Tensor LabelDistribution(const torch::Tensor& labels, int64_t num_classes) {
  TORCH_CHECK(labels.numel() > 0, "LabelDistribution: no labels");
  return torch::one_hot(labels.to(torch::kCPU), num_classes).to(torch::kFloat64).mean(0);
}

double LabelEmd(const torch::Tensor& p_local, const torch::Tensor& p_global) {
  TORCH_CHECK(p_local.sizes() == p_global.sizes(), "LabelEmd: distributions of different sizes");
  return (p_local.to(torch::kFloat64) - p_global.to(torch::kFloat64)).abs().sum().item<double>();
}

double MixingCoefficient(double emd, double gamma) {
  return std::clamp(std::pow(std::clamp(emd / 2.0, 0.0, 1.0), gamma), 0.0, 1.0);
}

MashedEgoGraphs MashEgoGraphs(const torch::Tensor& trees, const torch::Tensor& embeddings,
                              const torch::Tensor& labels, int64_t num_classes, int64_t chunk,
                              bool first_only) {
  TORCH_CHECK(trees.dim() == 2 && chunk >= 1, "MashEgoGraphs: trees must be [n, S], chunk >= 1");
  const int64_t n = trees.size(0), size = trees.size(1), h = embeddings.size(1);
  const torch::Tensor present = (trees >= 0).to(embeddings.scalar_type()).unsqueeze(-1);  // [n, S, 1]
  const torch::Tensor ids = trees.clamp_min(0);
  std::vector<torch::Tensor> xs, ys;
  // Gathered chunk by chunk: all n trees at once would be an [n, S, h] tensor (70 MB for a Cora
  // client at h = 512), page-faulted in fresh every round.
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t b = first_only ? 1 : std::min(chunk, n - begin);
    const torch::Tensor p = present.narrow(0, begin, b);
    const torch::Tensor chunk_ids = ids.narrow(0, begin, b).reshape({-1});
    const torch::Tensor x = embeddings.index_select(0, chunk_ids).reshape({b, size, h}) * p;
    const torch::Tensor y =
        torch::one_hot(labels.index_select(0, chunk_ids), num_classes).to(embeddings.scalar_type()).reshape({b, size, num_classes}) * p;
    const torch::Tensor count = p.sum(0).clamp_min(1);  // [S, 1]
    xs.push_back(x.sum(0) / count);
    ys.push_back(y.sum(0) / count);
  }
  if (xs.empty()) return {torch::zeros({0, size, h}), torch::zeros({0, size, num_classes})};
  return {torch::stack(xs), torch::stack(ys)};
}

}  // namespace fgl::methods::fedego
