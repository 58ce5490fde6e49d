#include "graph/partition/label_dirichlet_partitioner.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/random.h"

namespace fgl::graph {

absl::StatusOr<Partition> LabelDirichletPartitioner::Run(const Dataset& dataset, int num_clients,
                                                         uint64_t seed) const {
  if (auto s = CheckClientCount(dataset, num_clients, "label_dirichlet"); !s.ok()) return s;
  if (!(options_.alpha > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("label_dirichlet: alpha = ", options_.alpha, " must be > 0"));
  }
  const int64_t n = dataset.num_nodes();
  const int64_t* y = dataset.labels.data_ptr<int64_t>();
  std::vector<std::vector<int64_t>> by_class(dataset.num_classes);
  for (int64_t v = 0; v < n; ++v) by_class[y[v]].push_back(v);
  const int64_t min_size = std::min<int64_t>(options_.min_client_nodes, n / num_clients);
  Rng rng(seed, "label_dirichlet");
  for (int draw = 0; draw < options_.max_draws; ++draw) {
    Partition out;
    out.clients.resize(num_clients);
    for (const std::vector<int64_t>& members : by_class) {
      std::vector<int64_t> nodes = members;
      rng.Shuffle(nodes);
      const std::vector<double> p = rng.Dirichlet(options_.alpha, num_clients);
      double cum = 0;
      size_t begin = 0;
      for (int k = 0; k < num_clients; ++k) {
        cum += p[k];
        size_t end = k + 1 == num_clients
                         ? nodes.size()
                         : std::min(nodes.size(), static_cast<size_t>(cum * nodes.size()));
        end = std::max(end, begin);
        out.clients[k].insert(out.clients[k].end(), nodes.begin() + begin, nodes.begin() + end);
        begin = end;
      }
    }
    const bool ok = std::all_of(out.clients.begin(), out.clients.end(), [&](const auto& c) {
      return static_cast<int64_t>(c.size()) >= std::max<int64_t>(1, min_size);
    });
    if (!ok) continue;
    for (auto& c : out.clients) std::sort(c.begin(), c.end());
    return out;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "label_dirichlet: no draw in ", options_.max_draws, " gave every one of ", num_clients,
      " clients at least ", min_size, " nodes (alpha = ", options_.alpha, ")"));
}

std::string LabelDirichletPartitioner::Fingerprint() const {
  return absl::StrCat("label_dirichlet(alpha=", options_.alpha,
                      ",min_client_nodes=", options_.min_client_nodes, ")");
}

}  // namespace fgl::graph
