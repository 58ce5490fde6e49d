#include "graph/augment.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "glog/logging.h"

namespace fgl::graph {

CsrGraph DropEdges(const CsrGraph& graph, double p, Rng& rng) {
  std::vector<int64_t> src, dst;
  for (int64_t u = 0; u < graph.num_nodes(); ++u) {
    for (int64_t v : graph.neighbors(u)) {
      if (u < v && rng.Uniform() >= p) src.push_back(u), dst.push_back(v);
    }
  }
  auto g = CsrFromEdges(graph.num_nodes(), src, dst);
  CHECK(g.ok()) << g.status();  // edges come from a valid graph
  return *std::move(g);
}

torch::Tensor EdgeKeepMask(const CsrGraph& graph, double p, Rng& rng) {
  torch::Tensor keep = torch::zeros({graph.num_entries()}, torch::kBool);
  bool* k = keep.data_ptr<bool>();
  absl::flat_hash_map<std::pair<int64_t, int64_t>, bool> kept;  // {u, v}, u < v -> drawn
  const int64_t* row_ptr = graph.row_ptr_data();
  const int64_t* col = graph.col_data();
  for (int64_t u = 0; u < graph.num_nodes(); ++u) {
    for (int64_t e = row_ptr[u]; e < row_ptr[u + 1]; ++e) {
      if (u < col[e]) kept[{u, col[e]}] = k[e] = rng.Uniform() >= p;
    }
  }
  for (int64_t u = 0; u < graph.num_nodes(); ++u) {
    for (int64_t e = row_ptr[u]; e < row_ptr[u + 1]; ++e) {
      if (u > col[e]) {
        auto it = kept.find({col[e], u});
        k[e] = it != kept.end() && it->second;
      }
    }
  }
  return keep;
}

torch::Tensor FeatureColumnKeepMask(int64_t f, double p, Rng& rng) {
  torch::Tensor keep = torch::empty({f}, torch::kFloat32);
  float* k = keep.data_ptr<float>();
  for (int64_t j = 0; j < f; ++j) k[j] = rng.Uniform() < p ? 0.0f : 1.0f;
  return keep;
}

torch::Tensor MaskFeatureColumns(const torch::Tensor& features, double p, Rng& rng) {
  return features * FeatureColumnKeepMask(features.size(1), p, rng).to(features.device()).unsqueeze(0);
}

}  // namespace fgl::graph
