// FedEgo's client sampler: a shared global test set, then overlapping label-skewed clients
// ("each client mostly holds 3 classes"), see ../shared/papers/seeds_fedego.md §10.3.
#ifndef FGL_GRAPH_PARTITION_FEDEGO_SAMPLER_H_
#define FGL_GRAPH_PARTITION_FEDEGO_SAMPLER_H_

#include <string>

#include "graph/partition/partitioner.h"

namespace fgl::graph {

struct FedEgoSamplerOptions {
  double global_test_fraction = 0.3;  // alpha_global, of the non-isolated nodes
  double local_fraction = 0.5;        // alpha_local, per client, of the non-isolated nodes
  int major_classes = 3;              // major labels drawn per client
  double major_rate = 0.8;            // nominal share of major-label nodes (capped by supply)
  int64_t local_test_nodes = 200;     // the last nodes of each client's order are its local test set
  // Table 8 with many clients: only the global test set leaves the pool (flagged in results).
  bool reuse_local_test_nodes = false;
};

// Partition.server_nodes is the global test set; clients are in shuffled order and their last
// `local_test_nodes` are disjoint local test sets; non-test nodes may repeat across clients.
// Isolated nodes (in the whole graph, or within a client) are dropped. complexity: O(K (N + E)).
class FedEgoSampler final : public Partitioner {
 public:
  explicit FedEgoSampler(const FedEgoSamplerOptions& options = {}) : options_(options) {}
  absl::StatusOr<Partition> Run(const Dataset& dataset, int num_clients,
                                uint64_t seed) const override;
  std::string Fingerprint() const override;

 private:
  FedEgoSamplerOptions options_;
};

}  // namespace fgl::graph

#endif  // FGL_GRAPH_PARTITION_FEDEGO_SAMPLER_H_
