// Reader for the `.npz` files of Platonov et al. 2023, "A critical look at the evaluation of
// GNNs under heterophily" (github.com/yandex-research/heterophilous-graphs).
#ifndef FGL_GRAPH_IO_HETEROPHILOUS_H_
#define FGL_GRAPH_IO_HETEROPHILOUS_H_

#include <string>

#include "absl/status/statusor.h"
#include "graph/dataset.h"

namespace fgl::graph::io {

// Loads e.g. chameleon.npz, texas.npz, minesweeper.npz: node_features float [N, D],
// node_labels int [N] (num_classes = max + 1), edges int [E, 2] (symmetrised, self-loops and
// duplicates removed), train_masks/val_masks/test_masks bool or 0/1 [K, N] (numpy may store
// them Fortran-ordered) -> K provided splits. Errors name the file and member; a missing file
// is NotFound naming `name`. complexity: O(N * D + K * N + E log d).
absl::StatusOr<Dataset> LoadHeterophilousNpz(const std::string& path, const std::string& name);

}  // namespace fgl::graph::io

#endif  // FGL_GRAPH_IO_HETEROPHILOUS_H_
