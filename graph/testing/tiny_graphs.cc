#include "graph/testing/tiny_graphs.h"

#include <vector>

#include "glog/logging.h"

namespace fgl::graph::testing {
namespace {

CsrGraph FromPairs(int64_t n, const std::vector<std::pair<int64_t, int64_t>>& edges) {
  std::vector<int64_t> src, dst;
  for (auto [u, v] : edges) src.push_back(u), dst.push_back(v);
  auto g = CsrFromEdges(n, src, dst);
  CHECK(g.ok()) << g.status();
  return *std::move(g);
}

}  // namespace

CsrGraph CycleGraph(int64_t n) {
  std::vector<std::pair<int64_t, int64_t>> e;
  for (int64_t i = 0; i < n; ++i) e.emplace_back(i, (i + 1) % n);
  return FromPairs(n, e);
}

CsrGraph PathGraph(int64_t n) {
  std::vector<std::pair<int64_t, int64_t>> e;
  for (int64_t i = 0; i + 1 < n; ++i) e.emplace_back(i, i + 1);
  return FromPairs(n, e);
}

CsrGraph TwoTrianglesJoinedByOneEdge() {
  return FromPairs(6, {{0, 1}, {1, 2}, {0, 2}, {3, 4}, {4, 5}, {3, 5}, {2, 3}});
}

Dataset TinyDataset(CsrGraph graph, int64_t num_classes, int64_t num_features) {
  Dataset d;
  d.name = "tiny";
  const int64_t n = graph.num_nodes();
  d.graph = std::move(graph);
  d.features = torch::zeros({n, num_features});
  d.labels = torch::empty({n}, torch::kInt64);
  for (int64_t v = 0; v < n; ++v) {
    d.features[v][v % num_features] = 1.0f;
    d.labels[v] = v % num_classes;
  }
  d.num_classes = num_classes;
  return d;
}

}  // namespace fgl::graph::testing
