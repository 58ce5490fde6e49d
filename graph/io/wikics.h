// Reader for Wiki-CS (Mernyei & Cangea 2020, "Wiki-CS: A Wikipedia-Based Benchmark for Graph
// Neural Networks"): the `dataset/data.json` of github.com/pmernyei/wiki-cs-dataset, which PyG's
// `WikiCS` dataset downloads. 11,701 nodes, 300 GloVe features, 10 classes, 20 splits.
#ifndef FGL_GRAPH_IO_WIKICS_H_
#define FGL_GRAPH_IO_WIKICS_H_

#include <string>

#include "absl/status/statusor.h"
#include "graph/dataset.h"

namespace fgl::graph::io {

// Loads `dir`/data.json, one JSON object (other keys are ignored), parsed by nlohmann/json: strict
// RFC 8259 (no comments, trailing commas, NaN, leading zeros or invalid UTF-8; a leading UTF-8 BOM
// is skipped), duplicate keys refused, at most 512 MiB, 16 levels of nesting and 2^25 values:
//   "features"        N lists of 300 numbers -> float32 [N, 300] (beyond float range: refused)
//   "labels"          N integers in [0, 65536) -> int64; num_classes = max + 1 (10 for Wiki-CS)
//   "links"           N lists of node ids in [0, N): out-links, symmetrised with self-loops and
//                     duplicates removed (PyG's is_undirected=True, which keeps self-loops)
//   "train_masks", "val_masks", "stopping_masks"   K lists (K = 20) of N entries
//   "test_mask"       one list of N entries
// Mask entries are true/false or 0/1. provided_splits[k] = {train_masks[k], val_masks[k],
// test_mask}. stopping_masks (the early-stopping set of the Wiki-CS protocol, which PyG keeps as
// `stopping_mask`) is checked but dropped: NodeSplit has no fourth set, and we take PyG's
// `val_mask`, not the stopping set, as val. So stopping nodes are in no mask of ours.
// Errors name "data.json:<line>:<column> (byte <offset>)" and the entry, e.g.
// "links[7][2]: node 11701 outside [0, 11701)", or the parser's message: InvalidArgument, DataLoss
// when the text ends early, ResourceExhausted past a limit; a missing file is NotFound naming
// `name` and how to get it. complexity: O(file size + N * 300 + K * N + E log d); an error in the
// content re-reads the file once to find its offset.
absl::StatusOr<Dataset> LoadWikiCs(const std::string& dir, const std::string& name);

}  // namespace fgl::graph::io

#endif  // FGL_GRAPH_IO_WIKICS_H_
