#include "graph/random_walk.h"

#include <ATen/Parallel.h>

#include <vector>

namespace fgl::graph {

torch::Tensor RandomWalkReturnProbabilities(const CsrGraph& graph, int steps, bool add_self_loops) {
  const int64_t n = graph.num_nodes();
  torch::Tensor out = torch::zeros({n, steps}, torch::kFloat32);
  if (n == 0 || steps <= 0) return out;
  float* o = out.data_ptr<float>();
  const int64_t* rp = graph.row_ptr_data();
  const int64_t* cp = graph.col_data();
  std::vector<double> inv_deg(n);
  for (int64_t v = 0; v < n; ++v) {
    const int64_t d = graph.degree(v) + (add_self_loops ? 1 : 0);
    inv_deg[v] = d > 0 ? 1.0 / d : 0.0;
  }
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  // Each block writes only its own rows of `out`, so the result is thread-count independent.
  at::parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<double> cur(n * kBlock), next(n * kBlock);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t s0 = b * kBlock, width = std::min(kBlock, n - s0);
      std::fill(cur.begin(), cur.end(), 0.0);
      for (int64_t j = 0; j < width; ++j) cur[(s0 + j) * kBlock + j] = 1.0;
      for (int k = 0; k < steps; ++k) {
        // next[u] = sum over walkers at v moving v -> u with probability 1/deg(v).
        std::fill(next.begin(), next.end(), 0.0);
        for (int64_t v = 0; v < n; ++v) {
          const double* src = &cur[v * kBlock];
          double scale = inv_deg[v];
          bool any = false;
          for (int64_t j = 0; j < width && !any; ++j) any = src[j] != 0.0;
          if (!any || scale == 0.0) continue;
          auto push = [&](int64_t u) {
            double* dst = &next[u * kBlock];
            for (int64_t j = 0; j < width; ++j) dst[j] += scale * src[j];
          };
          for (int64_t e = rp[v]; e < rp[v + 1]; ++e) push(cp[e]);
          if (add_self_loops) push(v);
        }
        std::swap(cur, next);
        for (int64_t j = 0; j < width; ++j) o[(s0 + j) * steps + k] = static_cast<float>(cur[(s0 + j) * kBlock + j]);
      }
    }
  });
  return out;
}

}  // namespace fgl::graph
