#include "graph/io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/io/dataset_checksums.h"

namespace fgl::graph::io {

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

absl::Status MissingDatasetFile(const std::string& path, const std::string& dataset) {
  if (dataset.empty()) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  return absl::NotFoundError(absl::StrCat(
      path, ": no such file. Dataset '", dataset,
      "' is not under the data root: run `third_party/download_datasets.sh ", dataset,
      " <data_dir>` on a machine with internet access, then pass --data_dir or set "
      "$FGL_DATA_DIR"));
}

absl::StatusOr<std::string> ReadFileBytes(const std::string& path, const std::string& dataset,
                                          size_t max_bytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return MissingDatasetFile(path, dataset);
    return absl::UnavailableError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat(path, ": not a file"));
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": ", st.st_size, " bytes exceeds the limit of ", max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::UnavailableError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (in.gcount() != static_cast<std::streamsize>(bytes.size())) {
    return absl::DataLossError(absl::StrCat(path, ": short read"));
  }
  const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (absl::Status verified = VerifyDatasetFile(path, bytes, st.st_size, mtime_ns); !verified.ok()) return verified;
  return bytes;
}

absl::Status MakeDirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/') continue;
    const std::string prefix = path.substr(0, i);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::UnavailableError(absl::StrCat("mkdir ", prefix, ": ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadMaybeGzip(const std::string& path, const std::string& dataset,
                                          size_t max_bytes) {
  if (!absl::EndsWith(path, ".gz")) return ReadFileBytes(path, dataset, max_bytes);
  auto packed = ReadFileBytes(path, dataset);
  if (!packed.ok()) return packed.status();
  z_stream zs{};
  // 16 + MAX_WBITS: expect a gzip header.
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    return absl::InternalError(absl::StrCat(path, ": inflateInit2 failed"));
  }
  zs.next_in = reinterpret_cast<Bytef*>(packed->data());
  zs.avail_in = static_cast<uInt>(packed->size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      return absl::DataLossError(absl::StrCat(path, ": corrupt gzip stream (zlib error ", rc,
                                              zs.msg ? absl::StrCat(": ", zs.msg) : "", ")"));
    }
    out.append(buf, sizeof(buf) - zs.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&zs);
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": decompresses to more than ", max_bytes, " bytes"));
    }
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      inflateEnd(&zs);
      return absl::DataLossError(absl::StrCat(path, ": truncated gzip stream"));
    }
  }
  inflateEnd(&zs);
  return out;
}

namespace {

absl::Status WriteError(const std::string& path, int error) {
  return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", std::strerror(error)));
}

// Writes all of `bytes` to `fd`: write(2) may take fewer bytes than asked, or be interrupted.
// The errno of the failure, 0 on success.
int WriteAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : ENOSPC;  // 0 bytes written for a non-empty buffer: no room
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  // One temporary file per process: two runners may write the same record at once.
  const std::string tmp = absl::StrCat(path, ".", ::getpid(), ".tmp");
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return WriteError(path, errno);
  int error = WriteAll(fd, contents);
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    std::remove(tmp.c_str());
    return WriteError(path, error);
  }
  // The rename itself reaches the disk with the directory; the contents are already safe, so a
  // directory that cannot be synced (some file systems refuse) is no error.
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<AppendOnlyFile>> AppendOnlyFile::Open(const std::string& path, bool truncate) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
  if (fd < 0) return WriteError(path, errno);
  return std::unique_ptr<AppendOnlyFile>(new AppendOnlyFile(path, fd));
}

AppendOnlyFile::~AppendOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status AppendOnlyFile::Append(absl::string_view bytes) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": already closed"));
  if (const int error = WriteAll(fd_, bytes); error != 0) return WriteError(path_, error);
  return absl::OkStatus();
}

absl::Status AppendOnlyFile::Close() {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": already closed"));
  int error = ::fsync(fd_) == 0 ? 0 : errno;
  if (::close(fd_) != 0 && error == 0) error = errno;
  fd_ = -1;
  return error == 0 ? absl::OkStatus() : WriteError(path_, error);
}

}  // namespace fgl::graph::io
