// Node-to-client partitions for subgraph FL, and the interface every partitioner implements.
#ifndef FGL_GRAPH_PARTITION_PARTITIONER_H_
#define FGL_GRAPH_PARTITION_PARTITIONER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/dataset.h"

namespace fgl::graph {

// Which global nodes each client holds, in the client's local node order. Clients are disjoint
// except for the FedEgo sampler, whose clients may share non-test nodes.
struct Partition {
  std::vector<std::vector<int64_t>> clients;
  // Nodes kept by the server, not by any client (FedEgo's global test set); usually empty.
  std::vector<int64_t> server_nodes;
  // True when the server holds the whole topology and clients hold only node data (nFedGNN).
  bool server_keeps_topology = false;

  int num_clients() const { return static_cast<int>(clients.size()); }
};

// Assigns nodes to `num_clients` clients. The same dataset, options and seed give the same
// partition on any thread count. Implementations state their complexity.
class Partitioner {
 public:
  virtual ~Partitioner() = default;
  virtual absl::StatusOr<Partition> Run(const Dataset& dataset, int num_clients,
                                        uint64_t seed) const = 0;
  // Name and every parameter, e.g. "louvain(resolution=1,delta=20)": part of the cache key.
  virtual std::string Fingerprint() const = 0;
};

// Common argument check: 1 <= num_clients <= num_nodes.
absl::Status CheckClientCount(const Dataset& dataset, int num_clients, const std::string& who);

// Checks that every client's nodes are in range and, if `disjoint`, that no node is held twice.
absl::Status ValidatePartition(const Partition& partition, int64_t num_nodes, bool disjoint);

}  // namespace fgl::graph

#endif  // FGL_GRAPH_PARTITION_PARTITIONER_H_
