// Reader for the gnn-benchmark `.npz` files of Shchur et al. 2018 ("Pitfalls of GNN
// evaluation"): Amazon Computers/Photo and Coauthor CS/Physics, stored as scipy CSR parts.
#ifndef FGL_GRAPH_IO_GNN_BENCHMARK_H_
#define FGL_GRAPH_IO_GNN_BENCHMARK_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "graph/dataset.h"

namespace fgl::graph::io {

// Loads amazon_electronics_{computers,photo}.npz or ms_academic_{cs,phy}.npz. The adjacency
// (adj_data/adj_indices/adj_indptr/adj_shape) is symmetrised with self-loops and duplicates
// removed; every stored entry is an edge, as in PyG. Features are the dense float32 form of
// attr_* (duplicate entries add up, as scipy's toarray does); labels come from `labels` and
// num_classes = max + 1. class_names, node_names and attr_names are never read (Coauthor's
// class_names is a pickled object array). Errors name the file and member; a missing file is
// NotFound naming `name`; dense features over `max_feature_bytes` are ResourceExhausted.
// No provided splits. complexity: O(N * D + E log d) time, O(N * D + E) memory.
absl::StatusOr<Dataset> LoadGnnBenchmarkNpz(const std::string& path, const std::string& name,
                                            size_t max_feature_bytes = size_t{8} << 30);

}  // namespace fgl::graph::io

#endif  // FGL_GRAPH_IO_GNN_BENCHMARK_H_
