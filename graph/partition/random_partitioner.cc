#include "graph/partition/random_partitioner.h"

#include <algorithm>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/random.h"

namespace fgl::graph {

absl::StatusOr<Partition> RandomPartitioner::Run(const Dataset& dataset, int num_clients,
                                                 uint64_t seed) const {
  if (auto s = CheckClientCount(dataset, num_clients, "random"); !s.ok()) return s;
  const int64_t n = dataset.num_nodes();
  std::vector<int64_t> nodes(n);
  std::iota(nodes.begin(), nodes.end(), 0);
  Rng rng(seed, "random_partition");
  rng.Shuffle(nodes);
  Partition out;
  out.clients.resize(num_clients);
  for (int k = 0; k < num_clients; ++k) {
    const int64_t begin = n * k / num_clients, end = n * (k + 1) / num_clients;
    out.clients[k].assign(nodes.begin() + begin, nodes.begin() + end);
    std::sort(out.clients[k].begin(), out.clients[k].end());
  }
  return out;
}

absl::StatusOr<Partition> NodeLevelPartitioner::Run(const Dataset& dataset, int num_clients,
                                                    uint64_t seed) const {
  if (num_clients != dataset.num_nodes()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node_level: every node is a client, so num_clients must be ", dataset.num_nodes(),
        " for ", dataset.name, ", not ", num_clients));
  }
  Partition out;
  out.clients.resize(num_clients);
  for (int64_t v = 0; v < num_clients; ++v) out.clients[v] = {v};
  out.server_keeps_topology = true;
  return out;
}

}  // namespace fgl::graph
