// A payload as a stream of gRPC chunks: a header first, then the bytes in pieces of at most
// `chunk_bytes`. The reader trusts nothing: a missing header, a size over the limit or a total
// that differs from the header is an error naming what was wrong.
#ifndef FGL_FL_TRANSPORT_CHUNKED_STREAM_H_
#define FGL_FL_TRANSPORT_CHUNKED_STREAM_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "fl/proto/transport.pb.h"

namespace fgl::fl::transport {

// The largest chunk either side sends (and so the gRPC receive limit on both).
constexpr int kMaxChunkBytes = 16 << 20;

// Bytes a stream put on (or took off) the wire, framing included, and its payload alone.
struct StreamBytes {
  int64_t wire = 0;
  int64_t payload = 0;
};

// Writes `header` (payload_bytes set here) and `payload` through `write`; Unavailable when the
// peer went away (write returned false).
absl::StatusOr<StreamBytes> WriteChunked(proto::ChunkHeader header, const std::string& payload,
                                         int64_t chunk_bytes,
                                         const std::function<bool(const proto::Chunk&)>& write);

// The same for a payload this side owns: one that fits in a chunk is moved into it, not copied.
absl::StatusOr<StreamBytes> WriteChunked(proto::ChunkHeader header, std::string&& payload,
                                         int64_t chunk_bytes,
                                         const std::function<bool(const proto::Chunk&)>& write);

struct Received {
  proto::ChunkHeader header;
  std::string payload;
  StreamBytes bytes;
};
// Reads one header and its payload through `read` (false: end of stream). `what` names the
// stream in errors.
absl::StatusOr<Received> ReadChunked(const std::function<bool(proto::Chunk*)>& read,
                                     int64_t max_payload_bytes, const std::string& what);

}  // namespace fgl::fl::transport

#endif  // FGL_FL_TRANSPORT_CHUNKED_STREAM_H_
