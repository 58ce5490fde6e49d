#include "methods/fedpub/proxy_graph.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/random.h"

namespace fgl::methods::fedpub {

absl::StatusOr<ProxyGraph> MakeProxyGraph(int64_t num_features, uint64_t seed, int blocks,
                                          int block_size, double p_in) {
  if (num_features < 1 || blocks < 1 || block_size < 1 || !(p_in >= 0 && p_in <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("proxy graph: features ", num_features, ", blocks ",
                                                   blocks, ", block size ", block_size, ", p_in ", p_in));
  }
  graph::Rng rng(seed, "fedpub/proxy");
  std::vector<int64_t> src, dst;
  for (int b = 0; b < blocks; ++b) {
    const int64_t base = static_cast<int64_t>(b) * block_size;
    for (int i = 0; i < block_size; ++i) {
      for (int j = i + 1; j < block_size; ++j) {
        if (rng.Uniform() < p_in) {
          src.push_back(base + i);
          dst.push_back(base + j);
        }
      }
    }
  }
  const int64_t n = static_cast<int64_t>(blocks) * block_size;
  auto g = graph::CsrFromEdges(n, src, dst, {}, "fedpub proxy graph");
  if (!g.ok()) return g.status();
  std::vector<float> x(n * num_features);
  for (float& v : x) v = static_cast<float>(rng.Normal());
  return ProxyGraph{*std::move(g), torch::tensor(x).view({n, num_features})};
}

}  // namespace fgl::methods::fedpub
