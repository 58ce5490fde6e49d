// Loads a dataset by name from the data root: the one entry point for binaries and experiments.
#ifndef FGL_GRAPH_DATASETS_H_
#define FGL_GRAPH_DATASETS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/dataset.h"

namespace fgl::graph {

// The data root: `flag_value` if non-empty, else $FGL_DATA_DIR, else "./data".
std::string ResolveDataDir(const std::string& flag_value);

// Known dataset names, e.g. "cora", "coauthor_physics", "chameleon", "texas_geom", "ogbn_arxiv",
// "wikics", "csbm". A spec may carry options: "csbm:num_nodes=5000,homophily=0.6",
// "amazon_photo:lcc=true" (lcc keeps the largest connected component; row_normalize=true divides
// each feature row by its sum, as PyG's NormalizeFeatures).
std::vector<std::string> DatasetNames();

// The files a dataset needs under `data_dir` (empty for csbm).
absl::StatusOr<std::vector<std::string>> DatasetFiles(const std::string& spec,
                                                      const std::string& data_dir);

// True when every file of the dataset is present (false for unknown names).
bool DatasetPresent(const std::string& spec, const std::string& data_dir);

// Loads and validates. NotFound (naming the file and how to get it) when a file is missing;
// NotFound for an unknown name; InvalidArgument for bad options. `seed` only affects csbm.
absl::StatusOr<Dataset> LoadDataset(const std::string& spec, const std::string& data_dir,
                                    uint64_t seed = 0);

}  // namespace fgl::graph

#endif  // FGL_GRAPH_DATASETS_H_
