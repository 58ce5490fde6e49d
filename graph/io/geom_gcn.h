// Reader for the text files and splits of Geom-GCN (Pei et al. 2020,
// github.com/graphdml-uiuc-jlu/geom-gcn `new_data/<name>/` and `splits/`), which PyG's WebKB
// and Actor datasets download: Texas, Cornell, Wisconsin, Actor ("film"), Chameleon, Squirrel.
#ifndef FGL_GRAPH_IO_GEOM_GCN_H_
#define FGL_GRAPH_IO_GEOM_GCN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/dataset.h"

namespace fgl::graph::io {

// The name geom-gcn gives `name` in file names: "actor" -> "film", anything else unchanged.
std::string GeomGcnFilePrefix(const std::string& name);

// Loads `dir`/out1_node_feature_label.txt, `dir`/out1_graph_edges.txt and the 10 splits in
// `dir`/splits (see LoadGeomGcnSplits). The feature file is `node_id\tfeature\tlabel` with a
// dense comma-separated vector per node, or, when the header says
// `feature(feature_amount:K)` (Actor), a comma-separated list of active indices in [0, K],
// giving K + 1 binary columns as geom-gcn and PyG do (repeated indices stay 1). Node ids may
// come in any order but each of 0..N-1 exactly once. Edges are symmetrised, self-loops and
// duplicates removed. A bad line is InvalidArgument "file:line: ..."; a missing file NotFound
// naming `name`. complexity: O(N * D + E log d).
absl::StatusOr<Dataset> LoadGeomGcn(const std::string& dir, const std::string& name);

// Reads `splits_dir`/<GeomGcnFilePrefix(name)>_split_0.6_0.2_<k>.npz for k = 0..9, each with
// train_mask/val_mask/test_mask, bool or 0/1 uint8 [num_nodes]. Also serves the Planetoid
// geom_gcn_splits/ folders. complexity: O(10 * num_nodes).
absl::StatusOr<std::vector<NodeSplit>> LoadGeomGcnSplits(const std::string& splits_dir,
                                                         const std::string& name,
                                                         int64_t num_nodes);

}  // namespace fgl::graph::io

#endif  // FGL_GRAPH_IO_GEOM_GCN_H_
