// Generated data roots for tests: a copy of one real dataset directory with a file left out, so
// that a missing-file check keeps checking once the real root is complete.
#ifndef FGL_GRAPH_TESTING_DATA_ROOT_H_
#define FGL_GRAPH_TESTING_DATA_ROOT_H_

#include <string>

#include "absl/status/statusor.h"

namespace fgl::graph::testing {

// Makes `<scratch>/<dataset_dir>/` holding a symlink to every file of `<data_dir>/<dataset_dir>/`
// except `omitted_file`, and returns `scratch` as the new data root. Fails (naming the path) when
// the source directory or `omitted_file` in it does not exist.
absl::StatusOr<std::string> DataRootWithout(const std::string& data_dir,
                                            const std::string& dataset_dir,
                                            const std::string& omitted_file,
                                            const std::string& scratch);

}  // namespace fgl::graph::testing

#endif  // FGL_GRAPH_TESTING_DATA_ROOT_H_
