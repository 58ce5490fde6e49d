#include "graph/ego_graph.h"

#include "glog/logging.h"

namespace fgl::graph {

int64_t EgoTreeSize(int hops, int fanout) {
  int64_t size = 0, level = 1;
  for (int h = 0; h <= hops; ++h, level *= fanout) size += level;
  return size;
}

torch::Tensor SampleEgoTrees(const CsrGraph& graph, absl::Span<const int64_t> centres, int hops,
                             int fanout, Rng& rng) {
  CHECK_GE(hops, 0);
  CHECK_GE(fanout, 0);
  const int64_t size = EgoTreeSize(hops, fanout);
  const int64_t inner = EgoTreeSize(hops - 1, fanout);  // positions that have children
  torch::Tensor out = torch::full({static_cast<int64_t>(centres.size()), size}, -1, torch::kInt64);
  int64_t* o = out.data_ptr<int64_t>();
  for (size_t i = 0; i < centres.size(); ++i) {
    int64_t* tree = o + i * size;
    CHECK(centres[i] >= 0 && centres[i] < graph.num_nodes()) << "centre " << centres[i];
    tree[0] = centres[i];
    for (int64_t p = 0; p < (hops == 0 ? 0 : inner); ++p) {
      if (tree[p] < 0) continue;
      absl::Span<const int64_t> nb = graph.neighbors(tree[p]);
      if (nb.empty()) continue;
      for (int c = 1; c <= fanout; ++c) tree[fanout * p + c] = nb[rng.UniformInt(nb.size())];
    }
  }
  return out;
}

torch::Tensor ResampleEgoTreePositions(int hops, int fanout, int64_t count, Rng& rng) {
  CHECK_GE(hops, 0);
  CHECK_GE(fanout, 0);
  const int64_t size = EgoTreeSize(hops, fanout);
  const int64_t inner = hops == 0 ? 0 : EgoTreeSize(hops - 1, fanout);
  torch::Tensor out = torch::zeros({count, size}, torch::kInt64);
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < count; ++i) {
    int64_t* src = o + i * size;
    for (int64_t p = 0; p < inner; ++p) {
      for (int c = 1; c <= fanout; ++c) src[fanout * p + c] = fanout * src[p] + 1 + rng.UniformInt(fanout);
    }
  }
  return out;
}

}  // namespace fgl::graph
