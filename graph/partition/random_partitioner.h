// Uniformly random partition into near-equal clients (sizes differ by at most one).
#ifndef FGL_GRAPH_PARTITION_RANDOM_PARTITIONER_H_
#define FGL_GRAPH_PARTITION_RANDOM_PARTITIONER_H_

#include <string>

#include "graph/partition/partitioner.h"

namespace fgl::graph {

// Shuffles the nodes and cuts them into K runs; clients list their nodes ascending. O(N).
class RandomPartitioner final : public Partitioner {
 public:
  absl::StatusOr<Partition> Run(const Dataset& dataset, int num_clients,
                                uint64_t seed) const override;
  std::string Fingerprint() const override { return "random()"; }
};

// Every node is its own client and the server keeps the topology (nFedGNN, one node per user).
// `num_clients` must equal the node count. O(N).
class NodeLevelPartitioner final : public Partitioner {
 public:
  absl::StatusOr<Partition> Run(const Dataset& dataset, int num_clients,
                                uint64_t seed) const override;
  std::string Fingerprint() const override { return "node_level()"; }
};

}  // namespace fgl::graph

#endif  // FGL_GRAPH_PARTITION_RANDOM_PARTITIONER_H_
