// METIS k-way (or recursive-bisection) partition into clients.
#ifndef FGL_GRAPH_PARTITION_METIS_PARTITIONER_H_
#define FGL_GRAPH_PARTITION_METIS_PARTITIONER_H_

#include <string>

#include "graph/partition/partitioner.h"

namespace fgl::graph {

struct MetisOptions {
  bool recursive_bisection = false;  // METIS_PartGraphRecursive instead of Kway
};

// libmetis with METIS_OPTION_SEED from the run seed; clients list their nodes ascending.
// Cross-client edges are dropped. complexity: O(E) per METIS level, roughly O(E log K).
class MetisPartitioner final : public Partitioner {
 public:
  explicit MetisPartitioner(const MetisOptions& options = {}) : options_(options) {}
  absl::StatusOr<Partition> Run(const Dataset& dataset, int num_clients,
                                uint64_t seed) const override;
  std::string Fingerprint() const override;

 private:
  MetisOptions options_;
};

}  // namespace fgl::graph

#endif  // FGL_GRAPH_PARTITION_METIS_PARTITIONER_H_
