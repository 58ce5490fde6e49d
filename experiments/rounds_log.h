// OUT/rounds.jsonl of a run, for //experiments:run and //experiments:serve alike: one
// fl.proto.RoundRecord JSON line per round (with per-client detail), appended as each round ends so
// that it can be followed, every write checked.
//
// A run resumed from a checkpoint continues an interrupted one, whose file holds its rounds up to
// when it stopped (some after its last checkpoint, which this run redoes). The federation's
// callbacks restart at the checkpoint's round R, so the file keeps the earlier process's lines
// 1..R-1 (from the checkpoint's records, without per-client detail, where such a line is missing)
// and this process appends the rest: the file then equals an uninterrupted run's, timings apart.
#ifndef FGL_EXPERIMENTS_ROUNDS_LOG_H_
#define FGL_EXPERIMENTS_ROUNDS_LOG_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fl/federation.h"
#include "graph/io/file.h"

namespace fgl::experiments {

class RoundsLog {
 public:
  // `path` empty: a log that writes nothing. `resuming`: the run may continue from a checkpoint,
  // and the lines of an earlier process are kept as above; otherwise the file starts empty now.
  static absl::StatusOr<std::unique_ptr<RoundsLog>> Open(const std::string& path, bool resuming);

  // One round of this process (the federation's round callback, which cannot fail): the first
  // error is logged at once and kept for Finish; nothing more is written after it.
  void Add(const fl::proto::RoundRecord& record);

  // After the run: `rounds` are the result's records of every round. Splices in the rounds an
  // earlier process did not leave, closes the file (fsync) and returns the first error of any
  // write, naming the path.
  absl::Status Finish(const google::protobuf::RepeatedPtrField<fl::proto::RoundRecord>& rounds);

  // The first round this process ran (0 before any); for the resumed run's log line.
  int first_round() const { return first_round_; }

 private:
  RoundsLog(std::string path, bool resuming) : path_(std::move(path)), resuming_(resuming) {}
  // Keeps the earlier lines before round `from` and opens the file to append after them.
  void Splice(int from);
  void Fail(absl::Status error);

  std::string path_;
  bool resuming_;
  std::vector<std::string> earlier_;  // the interrupted process's lines 1, 2, ...
  int kept_ = -1;                     // earlier lines kept; -1 until the splice
  int first_round_ = 0;
  std::unique_ptr<graph::io::AppendOnlyFile> file_;
  absl::Status error_;
};

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_ROUNDS_LOG_H_
