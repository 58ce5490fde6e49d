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
  // Each client's own train/val/test masks over its local nodes (clients[k] order), when the
  // partition comes with them (a paper's saved partition); empty: the run's split rule decides.
  std::vector<NodeSplit> client_splits;

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
  // False for partitioners that only read a partition from files: loading is as cheap as the
  // cache, and the cache key would not notice the files changing.
  virtual bool Cacheable() const { return true; }
  // True when Run fills Partition::client_splits (the run's split rule is then not used).
  virtual bool ProvidesSplits() const { return false; }
};

// Common argument check: 1 <= num_clients <= num_nodes.
absl::Status CheckClientCount(const Dataset& dataset, int num_clients, const std::string& who);

// Checks that every client's nodes are in range and, if `disjoint`, that no node is held twice;
// and that client_splits, when present, has one split per client of bool masks of its size.
absl::Status ValidatePartition(const Partition& partition, int64_t num_nodes, bool disjoint);

}  // namespace fgl::graph

#endif  // FGL_GRAPH_PARTITION_PARTITIONER_H_
