// Reader for OGB node-property datasets in their raw CSV layout (the unpacked OGB zip, e.g.
// ogbn-arxiv), without the ogb Python package or its processed/ pickles.
#ifndef FGL_GRAPH_IO_OGB_H_
#define FGL_GRAPH_IO_OGB_H_

#include <string>

#include "absl/status/statusor.h"
#include "graph/dataset.h"

namespace fgl::graph::io {

// Loads `dir`/raw/{num-node-list,node-feat,node-label,edge}.csv.gz (or the same names without
// .gz): one node count; N rows of D comma-separated floats; N integer labels
// (num_classes = max + 1); directed "src,dst" rows, symmetrised with self-loops and duplicates
// removed. When `dir`/split/<scheme>/{train,valid,test}.csv[.gz] exist (node ids, one per
// line), each scheme becomes one provided split, in name order. A bad line is
// InvalidArgument "file:line: ..."; a missing file NotFound naming `name`.
// complexity: O(N * D + E log d) plus decompression.
absl::StatusOr<Dataset> LoadOgbNodeProp(const std::string& dir, const std::string& name);

}  // namespace fgl::graph::io

#endif  // FGL_GRAPH_IO_OGB_H_
