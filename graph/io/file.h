// Reading untrusted dataset files: whole-file reads with errors that name the file and, for a
// missing dataset file, say how to get it. Writing outputs so that a full disk is an error, never a
// silently short file.
#ifndef FGL_GRAPH_IO_FILE_H_
#define FGL_GRAPH_IO_FILE_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

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

// Replaces `path` with `contents` at once: written to a temporary file beside it, fsync'ed and
// renamed over it, so that a reader (or the next process, after a crash or a full disk) sees the old
// file or the new one, never a part. Unavailable naming `path` and the cause when any step fails
// (no space, a file size limit, a missing or unwritable directory); the temporary file is removed.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// A file written piece by piece while others may read it (a run's rounds.jsonl): every write is
// checked and Close() puts it on disk. Errors are Unavailable naming the path and the cause.
class AppendOnlyFile {
 public:
  // Opens `path` to append to it, creating it; `truncate` empties it first.
  static absl::StatusOr<std::unique_ptr<AppendOnlyFile>> Open(const std::string& path, bool truncate);
  ~AppendOnlyFile();  // closes without fsync if Close() was not called (an error path)
  AppendOnlyFile(const AppendOnlyFile&) = delete;
  AppendOnlyFile& operator=(const AppendOnlyFile&) = delete;

  // All of `bytes`, or an error (a short write is one).
  absl::Status Append(absl::string_view bytes);
  // fsync and close: a full disk on a network or delayed-allocation file system may only show here.
  absl::Status Close();
  const std::string& path() const { return path_; }

 private:
  AppendOnlyFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

}  // namespace fgl::graph::io

#endif  // FGL_GRAPH_IO_FILE_H_
