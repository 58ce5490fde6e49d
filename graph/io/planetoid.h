// The Planetoid citation datasets (Cora, CiteSeer, PubMed; Yang et al. 2016) from their original
// `ind.<name>.*` files, with the same nodes, features, labels and public split as PyG's
// `read_planetoid_data`.
#ifndef FGL_GRAPH_IO_PLANETOID_H_
#define FGL_GRAPH_IO_PLANETOID_H_

#include <string>

#include "absl/status/statusor.h"
#include "graph/dataset.h"

namespace fgl::graph::io {

// Reads `dir`/ind.<name>.{x,tx,allx,y,ty,ally,graph,test.index} for `name` in cora, citeseer,
// pubmed. Nodes are the allx rows, then the test range; test node test.index[i] gets row i of
// tx/ty; CiteSeer's 15 test-range ids without a row are zero-feature, label-0 nodes (PyG's
// tx_ext/ty_ext). Labels are the argmax of the one-hot rows; the graph is the adjacency dict
// symmetrised, without self-loops or duplicates. provided_splits[0] is the public split: train
// the first len(y) nodes, val the next 500, test the test.index nodes.
// Errors: NotFound for a missing file (naming it and how to get it) or an unknown name;
// InvalidArgument / DataLoss, naming the file, for malformed contents.
absl::StatusOr<Dataset> LoadPlanetoid(const std::string& dir, const std::string& name);

}  // namespace fgl::graph::io

#endif  // FGL_GRAPH_IO_PLANETOID_H_
