// Louvain communities packed into near-equal clients, as FedSage+/OpenFGL/FedTAD do.
#ifndef FGL_GRAPH_PARTITION_LOUVAIN_PARTITIONER_H_
#define FGL_GRAPH_PARTITION_LOUVAIN_PARTITIONER_H_

#include <string>

#include "graph/partition/partitioner.h"

namespace fgl::graph {

struct LouvainOptions {
  double resolution = 1.0;  // modularity resolution (python-louvain and OpenFGL use 1)
  int delta = 20;           // packing slack: communities are cut to N/K - delta nodes
  // After OpenFGL's packing, move groups from the largest to the smallest client until every
  // client holds N/K ± delta nodes (OpenFGL's packing bounds clients only from above).
  bool rebalance = true;
  // FedSage's class-coverage fix (FedMpa uses it): an owner with < 2 nodes of a class takes the
  // last such node from every owner that has > 2.
  bool class_coverage_fix = false;
};

// Louvain (igraph multilevel, seeded) followed by the balanced packing of
// ../shared/papers/seeds_fedgkc_fedtad.md §0.2: communities in order of first appearance are cut
// to at most N/K - delta nodes, sorted by size (descending, stable), and dealt to owners so that
// no owner passes N/K + delta; then (rebalance) short clients are topped up from the largest.
// Cross-client edges are dropped. complexity: O(E log N + N K).
class LouvainPartitioner final : public Partitioner {
 public:
  explicit LouvainPartitioner(const LouvainOptions& options = {}) : options_(options) {}
  absl::StatusOr<Partition> Run(const Dataset& dataset, int num_clients,
                                uint64_t seed) const override;
  std::string Fingerprint() const override;

 private:
  LouvainOptions options_;
};

// The packing step alone, on a given community id per node (exposed for tests).
absl::StatusOr<Partition> PackCommunities(absl::Span<const int64_t> community, int num_clients,
                                          int delta, bool rebalance);

}  // namespace fgl::graph

#endif  // FGL_GRAPH_PARTITION_LOUVAIN_PARTITIONER_H_
