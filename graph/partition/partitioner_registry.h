// Builds a partitioner from its option string, e.g. "louvain", "louvain:delta=20",
// "louvain:algorithm=leiden,resolution=1" (Leiden instead of multilevel; also beta=0.01,
// iterations=2; see louvain_partitioner.h),
// "metis:recursive_bisection=true", "label_dirichlet:alpha=0.5", "random", "node_level",
// "fedego:local_fraction=0.5,local_test_nodes=200", "reference:<dir>" (a paper's saved
// partition read from `dir`, which is taken verbatim; see reference_partitioner.h).
#ifndef FGL_GRAPH_PARTITION_PARTITIONER_REGISTRY_H_
#define FGL_GRAPH_PARTITION_PARTITIONER_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/partition/partitioner.h"

namespace fgl::graph {

// NotFound for an unknown name; InvalidArgument for unknown or malformed options.
absl::StatusOr<std::unique_ptr<Partitioner>> MakePartitioner(const std::string& spec);

// The names MakePartitioner accepts.
std::vector<std::string> PartitionerNames();

}  // namespace fgl::graph

#endif  // FGL_GRAPH_PARTITION_PARTITIONER_REGISTRY_H_
