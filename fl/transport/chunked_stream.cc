#include "fl/transport/chunked_stream.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace fgl::fl::transport {

absl::StatusOr<StreamBytes> WriteChunked(proto::ChunkHeader header, const std::string& payload,
                                         int64_t chunk_bytes,
                                         const std::function<bool(const proto::Chunk&)>& write) {
  if (chunk_bytes < 1) return absl::InvalidArgumentError("chunk_bytes must be positive");
  StreamBytes bytes;
  bytes.payload = static_cast<int64_t>(payload.size());
  header.set_payload_bytes(bytes.payload);
  proto::Chunk chunk;
  *chunk.mutable_header() = std::move(header);
  size_t offset = 0;
  do {
    const size_t n = std::min<size_t>(chunk_bytes, payload.size() - offset);
    chunk.mutable_data()->assign(payload, offset, n);
    offset += n;
    bytes.wire += static_cast<int64_t>(chunk.ByteSizeLong());
    if (!write(chunk)) return absl::UnavailableError("peer closed the stream");
    chunk.clear_header();
  } while (offset < payload.size());
  return bytes;
}

absl::StatusOr<StreamBytes> WriteChunked(proto::ChunkHeader header, std::string&& payload,
                                         int64_t chunk_bytes,
                                         const std::function<bool(const proto::Chunk&)>& write) {
  if (static_cast<int64_t>(payload.size()) > chunk_bytes || chunk_bytes < 1) {
    return WriteChunked(std::move(header), static_cast<const std::string&>(payload), chunk_bytes, write);
  }
  StreamBytes bytes;
  bytes.payload = static_cast<int64_t>(payload.size());
  header.set_payload_bytes(bytes.payload);
  proto::Chunk chunk;
  *chunk.mutable_header() = std::move(header);
  chunk.set_data(std::move(payload));
  bytes.wire = static_cast<int64_t>(chunk.ByteSizeLong());
  if (!write(chunk)) return absl::UnavailableError("peer closed the stream");
  return bytes;
}

absl::StatusOr<Received> ReadChunked(const std::function<bool(proto::Chunk*)>& read,
                                     int64_t max_payload_bytes, const std::string& what) {
  Received r;
  proto::Chunk chunk;
  if (!read(&chunk)) return absl::UnavailableError(absl::StrCat(what, ": stream ended before its header"));
  if (!chunk.has_header()) return absl::InvalidArgumentError(absl::StrCat(what, ": first chunk has no header"));
  r.header = chunk.header();
  const int64_t expected = r.header.payload_bytes();
  if (expected < 0 || expected > max_payload_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": payload_bytes ", expected,
                                                     " outside [0, ", max_payload_bytes, "]"));
  }
  for (bool first = true;; first = false) {
    if (!first) {
      if (static_cast<int64_t>(r.payload.size()) == expected) break;
      if (!read(&chunk)) {
        return absl::UnavailableError(absl::StrCat(what, ": stream ended after ", r.payload.size(),
                                                   " of ", expected, " payload bytes"));
      }
      if (chunk.has_header()) return absl::InvalidArgumentError(absl::StrCat(what, ": second header"));
    }
    r.bytes.wire += static_cast<int64_t>(chunk.ByteSizeLong());
    if (static_cast<int64_t>(r.payload.size() + chunk.data().size()) > expected) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": more payload than the header's ",
                                                     expected, " bytes"));
    }
    if (r.payload.empty()) {
      r.payload.swap(*chunk.mutable_data());  // a payload in one chunk is taken, not copied
      // No reserve(expected): the size is the peer's claim; memory grows only with what arrives.
    } else {
      r.payload += chunk.data();
    }
    if (first && expected == 0) break;
  }
  r.bytes.payload = expected;
  return r;
}

}  // namespace fgl::fl::transport
