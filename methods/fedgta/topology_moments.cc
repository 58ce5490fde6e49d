#include "methods/fedgta/topology_moments.h"

#include <cmath>
#include <vector>

namespace fgl::methods::fedgta {

torch::Tensor LabelPropagation(const graph::CsrGraph& graph, const torch::Tensor& y,
                               const torch::Tensor& mask, int steps, double alpha) {
  const int64_t n = graph.num_nodes();
  const torch::Tensor y0 = y.to(torch::kCPU, torch::kFloat);
  const torch::Tensor seed =
      torch::where(mask.to(torch::kCPU, torch::kBool).unsqueeze(1), y0, torch::zeros_like(y0)).contiguous();
  const torch::Tensor residual = (1 - alpha) * seed;
  std::vector<float> inv_sqrt(n);
  for (int64_t v = 0; v < n; ++v) inv_sqrt[v] = graph.degree(v) > 0 ? 1.0f / std::sqrt(static_cast<float>(graph.degree(v))) : 0.0f;
  const int64_t c = y0.size(1);
  torch::Tensor out = seed.clone();
  for (int s = 0; s < steps; ++s) {
    torch::Tensor next = torch::zeros_like(out);
    const float* o = out.data_ptr<float>();
    float* x = next.data_ptr<float>();
    for (int64_t v = 0; v < n; ++v) {
      for (int64_t u : graph.neighbors(v)) {
        const float w = inv_sqrt[v] * inv_sqrt[u];
        for (int64_t j = 0; j < c; ++j) x[v * c + j] += w * o[u * c + j];
      }
    }
    out = (alpha * next + residual).clamp(0, 1);
  }
  return out;
}

torch::Tensor MixedMoments(const torch::Tensor& x, int num_moments) {
  const torch::Tensor xf = x.to(torch::kCPU, torch::kDouble);
  const torch::Tensor centred = xf - xf.mean(0, true);
  std::vector<torch::Tensor> raw, central;
  for (int p = 1; p <= num_moments; ++p) {
    raw.push_back(xf.pow(p).mean(0));
    central.push_back(centred.pow(p).mean(0));
  }
  return torch::cat({torch::stack(raw), torch::stack(central)}).flatten().to(torch::kFloat);
}

double ConfidenceWeight(const graph::CsrGraph& graph, const torch::Tensor& x) {
  const torch::Tensor xd = x.to(torch::kCPU, torch::kDouble).contiguous();
  const int64_t n = xd.size(0), c = xd.size(1);
  const double* p = xd.data_ptr<double>();
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    double plogp = 0;
    for (int64_t j = 0; j < c; ++j) plogp += p[i * c + j] * std::log(p[i * c + j] + 1e-8);
    total += 2.0 * graph.degree(i) * (static_cast<double>(c) / std::exp(1.0) + plogp);
  }
  return total;
}

}  // namespace fgl::methods::fedgta
