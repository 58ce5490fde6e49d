#include "graph/homophily.h"

#include <algorithm>

namespace fgl::graph {

double EdgeHomophily(const CsrGraph& graph, const torch::Tensor& labels) {
  const int64_t* y = labels.data_ptr<int64_t>();
  int64_t same = 0;
  for (int64_t u = 0; u < graph.num_nodes(); ++u)
    for (int64_t v : graph.neighbors(u)) same += (y[u] == y[v]);
  return graph.num_entries() == 0 ? 0.0 : static_cast<double>(same) / graph.num_entries();
}

double NodeHomophily(const CsrGraph& graph, const torch::Tensor& labels) {
  const int64_t* y = labels.data_ptr<int64_t>();
  double total = 0;
  int64_t counted = 0;
  for (int64_t u = 0; u < graph.num_nodes(); ++u) {
    if (graph.degree(u) == 0) continue;
    int64_t same = 0;
    for (int64_t v : graph.neighbors(u)) same += (y[u] == y[v]);
    total += static_cast<double>(same) / graph.degree(u);
    ++counted;
  }
  return counted == 0 ? 0.0 : total / counted;
}

std::vector<double> ClassWiseHomophily(const CsrGraph& graph, const torch::Tensor& labels,
                                       int64_t num_classes) {
  const int64_t* y = labels.data_ptr<int64_t>();
  std::vector<int64_t> same(num_classes, 0), all(num_classes, 0);
  for (int64_t u = 0; u < graph.num_nodes(); ++u) {
    for (int64_t v : graph.neighbors(u)) {
      ++all[y[u]];
      same[y[u]] += (y[u] == y[v]);
    }
  }
  std::vector<double> h(num_classes, 0.0);
  for (int64_t c = 0; c < num_classes; ++c)
    if (all[c] > 0) h[c] = static_cast<double>(same[c]) / all[c];
  return h;
}

double ClassHomophily(const CsrGraph& graph, const torch::Tensor& labels, int64_t num_classes) {
  if (num_classes < 2 || graph.num_nodes() == 0) return 0.0;
  const std::vector<double> h = ClassWiseHomophily(graph, labels, num_classes);
  std::vector<int64_t> count(num_classes, 0);
  const int64_t* y = labels.data_ptr<int64_t>();
  for (int64_t u = 0; u < graph.num_nodes(); ++u) ++count[y[u]];
  double sum = 0;
  for (int64_t c = 0; c < num_classes; ++c)
    sum += std::max(0.0, h[c] - static_cast<double>(count[c]) / graph.num_nodes());
  return sum / (num_classes - 1);
}

}  // namespace fgl::graph
