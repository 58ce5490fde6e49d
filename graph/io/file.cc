#include "graph/io/file.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>

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

}  // namespace fgl::graph::io
