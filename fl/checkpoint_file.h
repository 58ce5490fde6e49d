// A checkpoint on disk: a header (proto::Checkpoint without client states) followed by each
// client's state as its own length-delimited message, then a CRC-32 trailer checked on opening. No single message nears protobuf's 2 GB
// limit (FedSage+'s 5 Physics clients hold 2.18 GB), and only one client's state is serialised
// at a time. Files of the earlier single-message layout are still read.
#ifndef FGL_FL_CHECKPOINT_FILE_H_
#define FGL_FL_CHECKPOINT_FILE_H_

#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fl/proto/checkpoint.pb.h"
#include "fl/proto/message.pb.h"

namespace fgl::fl {

// Appends client states after the header. Written to PATH.tmp; Commit renames it to PATH, so a
// reader sees the previous checkpoint or the whole new one. Destroying an uncommitted writer
// removes the temporary file.
class CheckpointWriter {
 public:
  static absl::StatusOr<std::unique_ptr<CheckpointWriter>> Start(const std::string& path,
                                                                const proto::Checkpoint& header);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Unavailable when the file cannot be written (a full disk, a state over 2 GB).
  absl::Status AddClientState(const proto::Message& state);
  absl::Status Commit();

 private:
  CheckpointWriter(std::string path, std::string tmp) : path_(std::move(path)), tmp_(std::move(tmp)) {}
  const std::string path_, tmp_;
  std::ofstream out_;
  bool committed_ = false;
};

// Reads a checkpoint's header, then its client states in the order they were added.
class CheckpointReader {
 public:
  // DataLoss naming `path` when it is no known layout, fails its checksum, or its header does not
  // parse.
  static absl::StatusOr<std::unique_ptr<CheckpointReader>> Open(const std::string& path);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  const proto::Checkpoint& header() const { return header_; }
  // The next client state; DataLoss when there is none or it is truncated.
  absl::StatusOr<proto::Message> NextClientState();
  // Whether every client state has been read (then a further one would be an error).
  bool AtEnd();

 private:
  explicit CheckpointReader(std::string path);
  absl::StatusOr<bool> ReadNext(proto::Message* m);  // false at a clean end of file

  const std::string path_;
  proto::Checkpoint header_;
  std::deque<proto::Message> inline_states_;  // the single-message layout's
  struct Stream;
  std::unique_ptr<Stream> stream_;
  std::optional<proto::Message> peeked_;
  int read_ = 0;
};

// The checkpoint to resume from: null when there is none, when the file is damaged (DataLoss),
// or when it is this run's (`fingerprint`) but of another checkpoint `version`, whose state may
// not read back: such a file is renamed to PATH.damaged or PATH.version<N>, logged, and the run
// starts afresh rather than being blocked. A checkpoint of another run is returned: the caller
// refuses it.
absl::StatusOr<std::unique_ptr<CheckpointReader>> OpenCheckpointToResume(const std::string& path, uint32_t version,
                                                                        const std::string& fingerprint);

// Writes a checkpoint taken after `round`: `header`, then whatever `add_client_states` adds. A
// file that cannot be written (a full disk) is logged and its temporary file removed: the run goes
// on and only loses the chance to resume from this round (returns false). An error of
// `add_client_states` itself is returned.
absl::StatusOr<bool> WriteCheckpointBestEffort(
    const std::string& path, const proto::Checkpoint& header, int round,
    const std::function<absl::Status(CheckpointWriter&)>& add_client_states = nullptr);

}  // namespace fgl::fl

#endif  // FGL_FL_CHECKPOINT_FILE_H_
