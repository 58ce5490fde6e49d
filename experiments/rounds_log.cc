#include "experiments/rounds_log.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fl/proto/federation.pb.h"
#include "fl/proto_json.h"
#include "fl/round_records.h"
#include "glog/logging.h"

namespace fgl::experiments {
namespace {

// The lines of `path` that are rounds 1, 2, ... in order (a torn or foreign line ends them; a
// missing file has none).
std::vector<std::string> LeadingRoundLines(const std::string& path) {
  std::vector<std::string> lines;
  if (!graph::io::FileExists(path)) return lines;
  absl::StatusOr<std::string> text = graph::io::ReadFileBytes(path);
  if (!text.ok()) {
    LOG(WARNING) << text.status() << "; its rounds come from the checkpoint";
    return lines;
  }
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    fl::proto::RoundRecord round;
    if (!fl::FromJson(std::string(line), &round, path).ok() || round.round() != static_cast<int>(lines.size()) + 1) {
      break;
    }
    lines.emplace_back(line);
  }
  return lines;
}

// `lines` as the whole file, one per line.
std::string Joined(const std::vector<std::string>& lines) {
  return lines.empty() ? "" : absl::StrCat(absl::StrJoin(lines, "\n"), "\n");
}

}  // namespace

absl::StatusOr<std::unique_ptr<RoundsLog>> RoundsLog::Open(const std::string& path, bool resuming) {
  std::unique_ptr<RoundsLog> log(new RoundsLog(path, resuming));
  if (path.empty()) return log;
  if (resuming) {
    log->earlier_ = LeadingRoundLines(path);
  } else {
    absl::StatusOr<std::unique_ptr<graph::io::AppendOnlyFile>> file =
        graph::io::AppendOnlyFile::Open(path, /*truncate=*/true);
    if (!file.ok()) return file.status();
    log->file_ = std::move(*file);
  }
  return log;
}

void RoundsLog::Fail(absl::Status error) {
  if (!error_.ok() || error.ok()) return;
  // Logged now: the run goes on to its end (its checkpoints may still be good) before it fails.
  LOG(ERROR) << error << "; the run will end with this error";
  error_ = std::move(error);
}

void RoundsLog::Splice(int from) {
  kept_ = std::min(from - 1, static_cast<int>(earlier_.size()));
  const std::vector<std::string> kept(earlier_.begin(), earlier_.begin() + kept_);
  if (absl::Status s = graph::io::WriteFileAtomically(path_, Joined(kept)); !s.ok()) return Fail(s);
  absl::StatusOr<std::unique_ptr<graph::io::AppendOnlyFile>> file =
      graph::io::AppendOnlyFile::Open(path_, /*truncate=*/false);
  if (!file.ok()) return Fail(file.status());
  file_ = std::move(*file);
}

void RoundsLog::Add(const fl::proto::RoundRecord& record) {
  if (first_round_ == 0) {
    first_round_ = record.round();
    if (resuming_ && !path_.empty()) Splice(record.round());
  }
  if (path_.empty() || !error_.ok() || file_ == nullptr) return;
  Fail(file_->Append(absl::StrCat(fl::ToJsonLine(record), "\n")));
}

absl::Status RoundsLog::Finish(const google::protobuf::RepeatedPtrField<fl::proto::RoundRecord>& rounds) {
  if (path_.empty()) return absl::OkStatus();
  const int total = static_cast<int>(rounds.size());
  // Resumed after the last round (nothing left but its scoring, or nothing at all): every round
  // is an earlier one.
  if (resuming_ && kept_ < 0 && error_.ok()) Splice(total + 1);
  if (file_ != nullptr) {
    Fail(file_->Close());
    file_.reset();
  }
  if (!error_.ok()) return error_;
  const int from = first_round_ > 0 ? first_round_ : total + 1;
  if (!resuming_ || kept_ >= from - 1) return absl::OkStatus();
  // The earlier lines stop short of the checkpoint: its records fill the gap (no per-client
  // detail for those rounds), then this process's lines.
  std::vector<std::string> lines(earlier_.begin(), earlier_.begin() + kept_);
  for (int i = kept_; i < from - 1 && i < total; ++i) {
    lines.push_back(fl::ToJsonLine(fl::WithoutClients(rounds[i])));  // as the checkpoint kept it
  }
  absl::StatusOr<std::string> appended = graph::io::ReadFileBytes(path_);
  if (!appended.ok()) return appended.status();
  int index = 0;
  for (absl::string_view line : absl::StrSplit(*appended, '\n', absl::SkipEmpty())) {
    if (index++ >= kept_) lines.emplace_back(line);
  }
  LOG(WARNING) << path_ << " held rounds 1.." << kept_ << " of the " << from - 1
               << " before the checkpoint; the checkpoint's records fill in the rest";
  return graph::io::WriteFileAtomically(path_, Joined(lines));
}

}  // namespace fgl::experiments
