#include "methods/fedtad/reliability.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/random.h"
#include "graph/random_walk.h"

namespace fgl::methods::fedtad {

absl::StatusOr<torch::Tensor> ClassReliability(const graph::CsrGraph& graph,
                                               const torch::Tensor& features,
                                               const torch::Tensor& labels,
                                               const torch::Tensor& train, int64_t num_classes,
                                               ReliabilityKind kind, int walk_length) {
  const int64_t n = graph.num_nodes();
  if (features.dim() != 2 || features.size(0) != n || labels.numel() != n || train.numel() != n ||
      num_classes < 1 || walk_length < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ClassReliability: graph has ", n, " nodes, features [", absl::StrJoin(features.sizes(), ","), "], labels ",
        labels.numel(), ", train mask ", train.numel(), ", classes ", num_classes, ", walk ", walk_length));
  }
  const torch::Tensor y = labels.to(torch::kCPU, torch::kLong).contiguous();
  const torch::Tensor mask = train.to(torch::kCPU, torch::kBool).contiguous();
  const int64_t* yp = y.data_ptr<int64_t>();
  const bool* mp = mask.data_ptr<bool>();
  for (int64_t i = 0; i < n; ++i) {
    if (mp[i] && (yp[i] < 0 || yp[i] >= num_classes)) {
      return absl::InvalidArgumentError(absl::StrCat("ClassReliability: label ", yp[i], " of node ", i,
                                                     " is outside [0, ", num_classes, ")"));
    }
  }
  std::vector<double> phi(num_classes, 0.0);
  if (kind == ReliabilityKind::kEqual) {
    std::fill(phi.begin(), phi.end(), 1.0);
  } else if (kind == ReliabilityKind::kNodeCount) {
    for (int64_t i = 0; i < n; ++i) if (mp[i]) phi[yp[i]] += 1.0;
  } else {
    // Hybrid embedding h = x ‖ topo, rows scaled to unit length (a zero row stays zero: cos 0).
    torch::Tensor h = torch::cat({features.to(torch::kCPU, torch::kFloat),
                                  graph::RandomWalkReturnProbabilities(graph, walk_length, true)}, 1);
    h = h / h.norm(2, 1, true).clamp_min(1e-12);
    h = h.contiguous();
    const float* hp = h.data_ptr<float>();
    const int64_t d = h.size(1);
    for (int64_t i = 0; i < n; ++i) {
      if (!mp[i]) continue;
      double sum = 1.0;  // the node itself, cos = 1
      for (int64_t j : graph.neighbors(i)) {
        if (j == i) continue;
        const float* a = hp + i * d;
        const float* b = hp + j * d;
        double dot = 0;
        for (int64_t t = 0; t < d; ++t) dot += static_cast<double>(a[t]) * b[t];
        sum += dot;
      }
      int64_t deg = 0;
      for (int64_t j : graph.neighbors(i)) deg += (j != i);
      phi[yp[i]] += sum / static_cast<double>(deg + 1);
    }
  }
  return torch::tensor(std::vector<float>(phi.begin(), phi.end()), torch::kFloat);
}

torch::Tensor PerturbReliability(const torch::Tensor& phi, double sigma, uint64_t seed) {
  graph::Rng rng(seed, "fedtad/reliability_noise");
  torch::Tensor out = phi.to(torch::kCPU, torch::kFloat).clone().contiguous();
  float* p = out.data_ptr<float>();
  for (int64_t c = 0; c < out.numel(); ++c) {
    p[c] = std::max(0.0f, static_cast<float>(p[c] * (1.0 + sigma * rng.Normal())));
  }
  return out;
}

}  // namespace fgl::methods::fedtad
