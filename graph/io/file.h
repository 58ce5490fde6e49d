// Reading untrusted dataset files: whole-file reads with errors that name the file and, for a
// missing dataset file, say how to get it.
#ifndef FGL_GRAPH_IO_FILE_H_
#define FGL_GRAPH_IO_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace fgl::graph::io {

// The file's bytes. NotFound names `path` and, when `dataset` is non-empty, says to run
// third_party/download_datasets.sh for it. Refuses files over `max_bytes` (ResourceExhausted), and
// a listed dataset file under an active DatasetChecksumScope whose sum differs (DataLoss).
absl::StatusOr<std::string> ReadFileBytes(const std::string& path, const std::string& dataset = "",
                                          size_t max_bytes = size_t{4} << 30);

// The NotFound error for a missing dataset file.
absl::Status MissingDatasetFile(const std::string& path, const std::string& dataset);

// True if `path` names an existing regular file.
bool FileExists(const std::string& path);

// mkdir -p: creates `path` and its missing parents; Unavailable naming the directory on failure.
absl::Status MakeDirs(const std::string& path);

// Reads a whole .gz file (gzip, via zlib) or a plain file if it does not end in ".gz".
absl::StatusOr<std::string> ReadMaybeGzip(const std::string& path, const std::string& dataset = "",
                                          size_t max_bytes = size_t{8} << 30);

}  // namespace fgl::graph::io

#endif  // FGL_GRAPH_IO_FILE_H_
