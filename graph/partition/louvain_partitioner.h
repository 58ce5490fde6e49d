// Louvain communities packed into near-equal clients, as FedSage+/OpenFGL/FedTAD do.
#ifndef FGL_GRAPH_PARTITION_LOUVAIN_PARTITIONER_H_
#define FGL_GRAPH_PARTITION_LOUVAIN_PARTITIONER_H_

#include <string>
#include <vector>

#include "graph/partition/partitioner.h"

namespace fgl::graph {

// How communities are found before they are packed into clients.
enum class CommunityAlgorithm {
  kMultilevel,  // igraph_community_multilevel: the papers' protocol, and the default
  kLeiden,      // igraph_community_leiden on modularity: near-linear, for large graphs
};

struct LouvainOptions {
  double resolution = 1.0;  // modularity resolution (python-louvain and OpenFGL use 1)
  int delta = 20;           // packing slack: communities are cut to N/K - delta nodes
  // After OpenFGL's packing, move groups from the largest to the smallest client until every
  // client holds N/K ± delta nodes (OpenFGL's packing bounds clients only from above).
  bool rebalance = true;
  // FedSage's class-coverage fix (FedMpa uses it): an owner with < 2 nodes of a class takes the
  // last such node from every owner that has > 2.
  bool class_coverage_fix = false;
  // `louvain:algorithm=leiden`. Leiden optimises the same modularity (with `resolution`) and its
  // communities go through the same packing; it starts from singletons, and igraph's RNG is
  // seeded from Rng::Derive(seed, "leiden"), so a seed gives one partition.
  CommunityAlgorithm algorithm = CommunityAlgorithm::kMultilevel;
  double leiden_beta = 0.01;   // randomness of Leiden's refinement (igraph's default)
  // Leiden iterations, >= 1 (python-igraph's default 2). igraph's "< 0: until stable" is not
  // offered: Debian's igraph 0.10.2 stops after one iteration then (the same partition as 1).
  int leiden_iterations = 2;
};

// Louvain (igraph multilevel, seeded; or Leiden, see LouvainOptions::algorithm) followed by
// the balanced packing of ../shared/papers/seeds_fedgkc_fedtad.md §0.2: communities in order of
// first appearance are cut to at most N/K - delta nodes, sorted by size (descending, stable),
// and dealt to owners so that no owner passes N/K + delta; then (rebalance) short clients are
// topped up from the largest.
// Cross-client edges are dropped. complexity: O(E log N + N K) for the packing; multilevel
// Louvain itself is superlinear on graphs with weak community structure (graph/README.md).
class LouvainPartitioner final : public Partitioner {
 public:
  explicit LouvainPartitioner(const LouvainOptions& options = {}) : options_(options) {}
  absl::StatusOr<Partition> Run(const Dataset& dataset, int num_clients,
                                uint64_t seed) const override;
  std::string Fingerprint() const override;
  // The community of every node (multilevel or Leiden, seeded as Run seeds it), before packing:
  // Run packs exactly these. Exposed for tests and for timing the two steps apart.
  absl::StatusOr<std::vector<int64_t>> Communities(const Dataset& dataset, uint64_t seed) const;
  const LouvainOptions& options() const { return options_; }

 private:
  LouvainOptions options_;
};

// The packing step alone, on a given community id per node (exposed for tests).
absl::StatusOr<Partition> PackCommunities(absl::Span<const int64_t> community, int num_clients,
                                          int delta, bool rebalance);

}  // namespace fgl::graph

#endif  // FGL_GRAPH_PARTITION_LOUVAIN_PARTITIONER_H_
