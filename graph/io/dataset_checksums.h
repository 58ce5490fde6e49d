// Dataset files are checked against the SHA-256 sums of third_party/dataset_sha256sums.txt (built
// into the binary) when a loader reads them: a damaged file is an error naming it, not a graph
// with 5,280 edges instead of 5,278. A verified file is remembered by path, size and mtime, so a
// second load costs nothing.
#ifndef FGL_GRAPH_IO_DATASET_CHECKSUMS_H_
#define FGL_GRAPH_IO_DATASET_CHECKSUMS_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace fgl::graph::io {

// While one is alive on this thread, files read with ReadFileBytes under `data_root` whose path
// relative to it is listed in the sums are verified. Scopes nest; the innermost counts.
class DatasetChecksumScope {
 public:
  explicit DatasetChecksumScope(const std::string& data_root);
  ~DatasetChecksumScope();
  DatasetChecksumScope(const DatasetChecksumScope&) = delete;
  DatasetChecksumScope& operator=(const DatasetChecksumScope&) = delete;

 private:
  std::optional<std::string> previous_;
};

// Process-wide switch, the flag --verify_data (default on): off for a user's own files under a
// listed name.
void SetVerifyDatasetFiles(bool verify);

// The listed SHA-256 (hex) of `relative_path` (e.g. "cora/ind.cora.x"), or nullopt.
std::optional<std::string_view> ListedSha256(std::string_view relative_path);

// Lowercase hex SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);

// OK when no scope covers `path`, it is not listed, verification is off, or `bytes` (the file's
// whole content, read at `path` with `size` and `mtime_ns`) match its listed sum; DataLoss naming
// the file and both sums otherwise.
absl::Status VerifyDatasetFile(const std::string& path, std::string_view bytes, int64_t size, int64_t mtime_ns);

}  // namespace fgl::graph::io

#endif  // FGL_GRAPH_IO_DATASET_CHECKSUMS_H_
