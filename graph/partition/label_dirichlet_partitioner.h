// Label-skewed partition: each class's nodes are dealt to clients in Dirichlet(alpha) shares.
#ifndef FGL_GRAPH_PARTITION_LABEL_DIRICHLET_PARTITIONER_H_
#define FGL_GRAPH_PARTITION_LABEL_DIRICHLET_PARTITIONER_H_

#include <string>

#include "graph/partition/partitioner.h"

namespace fgl::graph {

struct LabelDirichletOptions {
  double alpha = 0.5;          // concentration: small = strong label skew
  int64_t min_client_nodes = 10;  // redraw until every client has at least this many (capped at N/K)
  int max_draws = 1000;        // then fail with FailedPrecondition
};

// For every class c: shuffle its nodes, draw p ~ Dir(alpha, K), cut at floor(cumsum(p) * n_c)
// (Hsu et al. 2019). Clients list their nodes ascending. complexity: O(N + C K) per draw.
class LabelDirichletPartitioner final : public Partitioner {
 public:
  explicit LabelDirichletPartitioner(const LabelDirichletOptions& options = {})
      : options_(options) {}
  absl::StatusOr<Partition> Run(const Dataset& dataset, int num_clients,
                                uint64_t seed) const override;
  std::string Fingerprint() const override;

 private:
  LabelDirichletOptions options_;
};

}  // namespace fgl::graph

#endif  // FGL_GRAPH_PARTITION_LABEL_DIRICHLET_PARTITIONER_H_
