#include "fl/checkpoint_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/delimited_message_util.h"
#include "graph/io/file.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {
namespace {

// Starts a delimited checkpoint. The single-message layout began with the tag of `version`
// (byte 0x08), so the two cannot be confused. Layout 4 ends with a trailer: kTrailerMagic, the
// CRC-32 of every byte between the magic and the trailer, and their count (little-endian), so a
// flipped bit or a cut file is caught before anything is restored. Layout 3 (no trailer,
// 2026-11-28 to 2026-12-07) is still read.
constexpr char kMagic[] = "FGLCKPT4";
constexpr char kMagicV3[] = "FGLCKPT3";
constexpr int kMagicSize = sizeof(kMagic) - 1;
constexpr char kTrailerMagic[] = "FGLCRC32";
constexpr int kTrailerSize = 8 + 4 + 8;

void PutLittleEndian(uint64_t value, int bytes, char* out) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}
uint64_t GetLittleEndian(const char* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return value;
}

// CRC-32 of `count` bytes of `fd` from `offset`; nullopt when they cannot all be read.
std::optional<uint32_t> Crc32OfRange(int fd, off_t offset, uint64_t count) {
  std::vector<char> buffer(1 << 20);
  uLong crc = crc32(0L, Z_NULL, 0);
  while (count > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(count, buffer.size()));
    const ssize_t got = ::pread(fd, buffer.data(), want, offset);
    if (got <= 0) return std::nullopt;
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buffer.data()), static_cast<uInt>(got));
    offset += got;
    count -= static_cast<uint64_t>(got);
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointWriter>> CheckpointWriter::Start(const std::string& path,
                                                                         const proto::Checkpoint& header) {
  CHECK_EQ(header.clients_size(), 0) << "client states go through AddClientState";
  std::unique_ptr<CheckpointWriter> w(new CheckpointWriter(path, path + ".tmp"));
  w->out_.open(w->tmp_, std::ios::binary | std::ios::trunc);
  if (!w->out_ || !w->out_.write(kMagic, kMagicSize) ||
      !google::protobuf::util::SerializeDelimitedToOstream(header, &w->out_)) {
    return absl::UnavailableError(absl::StrCat("cannot write ", w->tmp_));
  }
  return w;
}

CheckpointWriter::~CheckpointWriter() {
  if (committed_) return;
  out_.close();
  std::remove(tmp_.c_str());
}

absl::Status CheckpointWriter::AddClientState(const proto::Message& state) {
  if (committed_) return absl::FailedPreconditionError(absl::StrCat(path_, ": already committed"));
  if (state.ByteSizeLong() > static_cast<size_t>(INT32_MAX)) {
    return absl::UnavailableError(absl::StrCat("cannot write ", tmp_, ": a client state of ", state.ByteSizeLong(),
                                               " bytes is over protobuf's 2 GB limit"));
  }
  if (!google::protobuf::util::SerializeDelimitedToOstream(state, &out_)) {
    return absl::UnavailableError(absl::StrCat("cannot write ", tmp_));
  }
  return absl::OkStatus();
}

absl::Status CheckpointWriter::Commit() {
  out_.close();  // a full disk may only show when the last bytes are flushed
  if (!out_) return absl::UnavailableError(absl::StrCat("cannot write ", tmp_));
  // The trailer: the payload's checksum, read back from the file as the disk holds it.
  const int fd = ::open(tmp_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot reopen ", tmp_, ": ", std::strerror(errno)));
  struct stat st;
  const bool sized = ::fstat(fd, &st) == 0 && st.st_size >= kMagicSize;
  const uint64_t payload = sized ? static_cast<uint64_t>(st.st_size) - kMagicSize : 0;
  const std::optional<uint32_t> crc = sized ? Crc32OfRange(fd, kMagicSize, payload) : std::nullopt;
  char trailer[kTrailerSize];
  std::memcpy(trailer, kTrailerMagic, 8);
  PutLittleEndian(crc.value_or(0), 4, trailer + 8);
  PutLittleEndian(payload, 8, trailer + 12);
  const bool ok = crc.has_value() && ::pwrite(fd, trailer, kTrailerSize, st.st_size) == kTrailerSize && ::fsync(fd) == 0;
  const int saved_errno = errno;
  ::close(fd);
  if (!ok) return absl::UnavailableError(absl::StrCat("cannot write ", tmp_, ": ", std::strerror(saved_errno)));
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp_, " to ", path_));
  }
  committed_ = true;
  return absl::OkStatus();
}

struct CheckpointReader::Stream {  // owns the descriptor; reads at most `limit` bytes (-1: all)
  Stream(int fd, int64_t limit) : raw(fd) {
    raw.SetCloseOnDelete(true);
    if (limit >= 0) limited.emplace(&raw, limit);
  }
  google::protobuf::io::ZeroCopyInputStream* input() {
    return limited.has_value() ? static_cast<google::protobuf::io::ZeroCopyInputStream*>(&*limited) : &raw;
  }
  google::protobuf::io::FileInputStream raw;
  std::optional<google::protobuf::io::LimitingInputStream> limited;
};

CheckpointReader::CheckpointReader(std::string path) : path_(std::move(path)) {}

absl::StatusOr<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(const std::string& path) {
  std::unique_ptr<CheckpointReader> r(new CheckpointReader(path));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  char magic[kMagicSize] = {};
  struct stat st;
  if (::fstat(fd, &st) != 0 || ::pread(fd, magic, kMagicSize, 0) != kMagicSize) std::memset(magic, 0, kMagicSize);
  int64_t limit = -1;
  if (std::memcmp(magic, kMagic, kMagicSize) == 0) {
    // Layout 4: the trailer's checksum must match before anything is parsed.
    char trailer[kTrailerSize] = {};
    const bool has_trailer = st.st_size >= kMagicSize + kTrailerSize &&
                             ::pread(fd, trailer, kTrailerSize, st.st_size - kTrailerSize) == kTrailerSize &&
                             std::memcmp(trailer, kTrailerMagic, 8) == 0;
    const uint64_t payload = has_trailer ? GetLittleEndian(trailer + 12, 8) : 0;
    if (!has_trailer || payload != static_cast<uint64_t>(st.st_size) - kMagicSize - kTrailerSize) {
      ::close(fd);
      return absl::DataLossError(absl::StrCat(path, ": truncated or damaged checkpoint (no valid trailer)"));
    }
    const std::optional<uint32_t> crc = Crc32OfRange(fd, kMagicSize, payload);
    if (!crc.has_value() || *crc != GetLittleEndian(trailer + 8, 4)) {
      ::close(fd);
      return absl::DataLossError(absl::StrCat(path, ": checksum mismatch: the checkpoint was altered after it was written"));
    }
    limit = static_cast<int64_t>(payload);
  }
  if (std::memcmp(magic, kMagic, kMagicSize) == 0 || std::memcmp(magic, kMagicV3, kMagicSize) == 0) {
    if (::lseek(fd, kMagicSize, SEEK_SET) != kMagicSize) {
      ::close(fd);
      return absl::DataLossError(absl::StrCat(path, ": cannot read the checkpoint"));
    }
    r->stream_ = std::make_unique<Stream>(fd, limit);
    bool clean_eof = false;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&r->header_, r->stream_->input(), &clean_eof)) {
      return absl::DataLossError(absl::StrCat(path, ": corrupt checkpoint (header)"));
    }
    return r;
  }
  ::close(fd);
  // The single-message layout (before 2026-11-28): client states inside the header.
  FGL_ASSIGN_OR_RETURN(std::string bytes, graph::io::ReadFileBytes(path));
  if (!r->header_.ParseFromString(bytes)) return absl::DataLossError(absl::StrCat(path, ": corrupt checkpoint"));
  for (proto::Message& m : *r->header_.mutable_clients()) r->inline_states_.push_back(std::move(m));
  r->header_.clear_clients();
  return r;
}

CheckpointReader::~CheckpointReader() = default;

absl::StatusOr<bool> CheckpointReader::ReadNext(proto::Message* m) {
  if (!stream_) {
    if (inline_states_.empty()) return false;
    *m = std::move(inline_states_.front());
    inline_states_.pop_front();
    return true;
  }
  bool clean_eof = false;
  if (google::protobuf::util::ParseDelimitedFromZeroCopyStream(m, stream_->input(), &clean_eof)) return true;
  if (clean_eof) return false;
  return absl::DataLossError(absl::StrCat(path_, ": client state ", read_, " is corrupt or truncated"));
}

absl::StatusOr<proto::Message> CheckpointReader::NextClientState() {
  proto::Message m;
  if (peeked_) {
    m = std::move(*peeked_);
    peeked_.reset();
  } else {
    FGL_ASSIGN_OR_RETURN(bool got, ReadNext(&m));
    if (!got) return absl::DataLossError(absl::StrCat(path_, ": holds ", read_, " client states, a further one was expected"));
  }
  ++read_;
  return m;
}

bool CheckpointReader::AtEnd() {
  if (peeked_) return false;
  proto::Message m;
  absl::StatusOr<bool> got = ReadNext(&m);
  if (!got.ok()) return false;  // something is there, if unreadable
  if (*got) peeked_ = std::move(m);
  return !*got;
}

namespace {

// Renames `path` to `aside` so that the run starts from round 1; `why` says what is wrong with it.
absl::StatusOr<std::unique_ptr<CheckpointReader>> MoveAside(const std::string& path, const std::string& aside,
                                                            absl::string_view why) {
  if (std::rename(path.c_str(), aside.c_str()) != 0) {
    return absl::DataLossError(absl::StrCat(why, "; and it cannot be moved aside to ", aside, ": ", std::strerror(errno)));
  }
  LOG(WARNING) << why << ": moved aside to " << aside << "; the run starts from round 1";
  return std::unique_ptr<CheckpointReader>();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointReader>> OpenCheckpointToResume(const std::string& path, uint32_t version,
                                                                        const std::string& fingerprint) {
  if (!graph::io::FileExists(path)) return std::unique_ptr<CheckpointReader>();
  absl::StatusOr<std::unique_ptr<CheckpointReader>> reader = CheckpointReader::Open(path);
  if (!reader.ok()) {
    if (!absl::IsDataLoss(reader.status())) return reader;
    return MoveAside(path, path + ".damaged", reader.status().message());
  }
  const proto::Checkpoint& header = (*reader)->header();
  if (header.run_fingerprint() == fingerprint && header.version() != version) {
    const uint32_t found = header.version();
    reader->reset();  // closed before the rename
    return MoveAside(path, absl::StrCat(path, ".version", found),
                     absl::StrCat(path, ": checkpoint version ", found, ", this binary reads ", version));
  }
  return reader;
}

absl::StatusOr<bool> WriteCheckpointBestEffort(const std::string& path, const proto::Checkpoint& header, int round,
                                               const std::function<absl::Status(CheckpointWriter&)>& add_client_states) {
  auto skip = [&](const absl::Status& why) {
    LOG(WARNING) << "no checkpoint after round " << round << ": " << why.message();
    return false;  // the writer's destructor removes its temporary file
  };
  absl::StatusOr<std::unique_ptr<CheckpointWriter>> writer = CheckpointWriter::Start(path, header);
  if (!writer.ok()) return skip(writer.status());
  if (add_client_states) {
    if (absl::Status added = add_client_states(**writer); !added.ok()) {
      if (absl::IsUnavailable(added)) return skip(added);
      return added;
    }
  }
  if (absl::Status committed = (*writer)->Commit(); !committed.ok()) return skip(committed);
  return true;
}

}  // namespace fgl::fl
