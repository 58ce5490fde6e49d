#include "fl/checkpoint_file.h"

#include <fcntl.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/util/delimited_message_util.h"
#include "graph/io/file.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {
namespace {

// Starts a delimited checkpoint. The single-message layout began with the tag of `version`
// (byte 0x08), so the two cannot be confused.
constexpr char kMagic[] = "FGLCKPT3";
constexpr int kMagicSize = sizeof(kMagic) - 1;

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
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp_, " to ", path_));
  }
  committed_ = true;
  return absl::OkStatus();
}

struct CheckpointReader::Stream {  // owns the descriptor
  explicit Stream(int fd) : file(fd) { file.SetCloseOnDelete(true); }
  google::protobuf::io::FileInputStream file;
};

CheckpointReader::CheckpointReader(std::string path) : path_(std::move(path)) {}

absl::StatusOr<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(const std::string& path) {
  std::unique_ptr<CheckpointReader> r(new CheckpointReader(path));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  r->stream_ = std::make_unique<Stream>(fd);
  char magic[kMagicSize] = {};
  {
    google::protobuf::io::CodedInputStream in(&r->stream_->file);  // gives back what it does not use
    if (!in.ReadRaw(magic, kMagicSize)) std::memset(magic, 0, kMagicSize);
  }
  if (std::memcmp(magic, kMagic, kMagicSize) == 0) {
    bool clean_eof = false;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&r->header_, &r->stream_->file, &clean_eof)) {
      return absl::DataLossError(absl::StrCat(path, ": corrupt checkpoint (header)"));
    }
    return r;
  }
  // The single-message layout (before 2026-11-28): client states inside the header.
  r->stream_.reset();
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
  if (google::protobuf::util::ParseDelimitedFromZeroCopyStream(m, &stream_->file, &clean_eof)) return true;
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
