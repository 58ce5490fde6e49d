#include "experiments/run_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "experiments/run_records.h"
#include "experiments/spec.h"
#include "glog/logging.h"
#include "graph/io/file.h"

namespace fgl::experiments {

std::string CheckpointStamp(const proto::Experiment& resolved) {
  return absl::StrCat(kResultVersion, " ", CurrentVersion(resolved.method()));
}

bool UsableCheckpoint(const std::string& dir, const std::string& stamp) {
  const std::string ckpt = dir + "/checkpoint.pb";
  if (!graph::io::FileExists(ckpt)) return false;
  std::error_code ec;
  auto drop = [&](const std::string& why) {
    LOG(WARNING) << "dropping " << ckpt << ": " << why;
    std::filesystem::remove_all(dir, ec);
    return false;
  };
  if (Slurp(dir + "/stamp") != stamp) return drop(absl::StrCat("not of this code's versions (", stamp, ")"));
  // Resumptions of this very file (its size and modification time): a third one is not tried.
  const auto written = std::filesystem::last_write_time(ckpt, ec).time_since_epoch().count();
  const std::string identity = absl::StrCat(std::filesystem::file_size(ckpt, ec), " ", written);
  std::istringstream tried(Slurp(dir + "/resumes"));
  std::string size, time;
  int count = 0;
  if (!(tried >> size >> time >> count) || absl::StrCat(size, " ", time) != identity) count = 0;
  if (count >= 2) return drop("two runs resumed from it and neither wrote a later checkpoint");
  std::ofstream(dir + "/resumes", std::ios::trunc) << identity << " " << count + 1 << "\n";
  return true;
}

}  // namespace fgl::experiments
