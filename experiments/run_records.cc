#include "experiments/run_records.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "experiments/spec.h"
#include "fl/proto/checkpoint.pb.h"
#include "fl/proto_json.h"
#include "fl/registry.h"
#include "glog/logging.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::experiments {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool ReadJson(const std::string& path, google::protobuf::Message* message) {
  const std::string json = Slurp(path);
  if (json.empty()) return false;
  if (absl::Status s = fl::FromJson(json, message, path); !s.ok()) {
    LOG(WARNING) << s;
    return false;
  }
  return true;
}

std::string SeedDirectory(const std::string& out_dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(out_dir, ec)) {
    if (entry.is_directory() && absl::StartsWith(entry.path().filename().string(), "seed_")) {
      return entry.path().string();
    }
  }
  return "";
}

std::string CurrentVersion(const std::string& method) {
  if (method == "centralized") return "centralized:" + CurrentVersion("fedavg");
  absl::StatusOr<fl::MethodFactories> m = fl::FindMethod(method);
  return m.ok() ? m->version : "";
}
std::string RecordVersion(const proto::RunRecord& record, const std::string& method) {
  if (!record.method_version().empty()) return record.method_version();
  std::vector<std::string> parts = absl::StrSplit(method == "centralized" ? "fedavg" : method, '+');
  for (std::string& p : parts) p += "@1";
  return absl::StrCat(method == "centralized" ? "centralized:" : "", absl::StrJoin(parts, "+"));
}

std::map<std::string, std::vector<double>> FinalReports(const fl::proto::RunResult& result) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, values] : result.final_client_reports()) {
    out[name].assign(values.values().begin(), values.values().end());
  }
  return out;
}

void AddRun(const proto::Table& table, const proto::RunRecord& record, CellResult& r) {
  constexpr double kMiB = 1 << 20;
  const fl::proto::RunResult& result = record.result();
  // Accuracies are percent in the records; a table that compares with printed fractions shows
  // fractions.
  const double accuracy_unit = table.fraction() ? 0.01 : 1.0;
  double value = accuracy_unit * result.test_acc();
  if (r.value == proto::Table::UPLOADED_MIB) value = static_cast<double>(result.bytes_up()) / kMiB;
  if (r.value == proto::Table::GLOBAL_TEST_ACCURACY) value = accuracy_unit * result.global_test_acc();
  if (r.value == proto::Table::TRAINING_MINUTES) value = result.train_s() / 60;
  if (r.value == proto::Table::UPLOADED_TENSOR_MIB) {
    const std::map<std::string, int64_t> by_group(result.uploaded_tensor_bytes_by_group().begin(),
                                                  result.uploaded_tensor_bytes_by_group().end());
    value = static_cast<double>(SelectedTensorBytes(by_group, r.tensor_groups)) / kMiB;
  }
  if (r.value == proto::Table::CLIENT_REPORT) value = ClientReportValue(FinalReports(result), r.report, r.client);
  if (r.value == proto::Table::LAST_ROUND_TIME_SHARE) {
    const auto& s = record.seconds_curve();
    const double total = std::accumulate(s.begin(), s.end(), 0.0);
    value = total > 0 ? 100.0 * s[s.size() - 1] / total : 0.0;
  }
  r.values.push_back(value);
  r.seeds.push_back(record.seed());
  const auto& curve = r.value == proto::Table::GLOBAL_TEST_ACCURACY ? record.global_test_curve() : record.test_curve();
  if (r.curve_sum.size() < static_cast<size_t>(curve.size())) r.curve_sum.resize(curve.size(), 0.0);
  for (int i = 0; i < curve.size(); ++i) r.curve_sum[i] += curve[i];
  ++r.curve_runs;
  r.traffic_mib.push_back(static_cast<double>(result.bytes_up() + result.bytes_down()) / kMiB);
  r.rounds_run.push_back(record.test_curve_size());
  r.run_seconds += result.wall_s();
  r.recorded_runs.emplace_back(record.key(), result.wall_s());
  r.peak_rss_bytes = std::max(r.peak_rss_bytes, record.peak_rss_bytes());
}

void ClearRuns(CellResult& r, CellResult::State state) {
  r.seeds_recorded = state == CellResult::State::kNotRun ? static_cast<int>(r.values.size()) : 0;
  r.state = state;
  r.values.clear();
  r.seeds.clear();
  r.curve_sum.clear();
  r.curve_runs = 0;
  r.traffic_mib.clear();
  r.rounds_run.clear();
  r.run_seconds = 0;
  r.recorded_runs.clear();
  r.peak_rss_bytes = 0;
}

absl::StatusOr<proto::RunRecord> MakeRecord(const std::string& key, const proto::Experiment& resolved, uint64_t seed,
                                           fl::proto::RunResult result, const std::string& rounds_path) {
  proto::RunRecord record;
  record.set_key(key);
  record.set_result_version(kResultVersion);
  record.set_spec(KeyedSpecText(resolved));
  record.set_seed(seed);
  record.set_method_version(CurrentVersion(resolved.method()));
  result.clear_spec();
  *record.mutable_result() = std::move(result);
  std::istringstream lines(Slurp(rounds_path));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    fl::proto::RoundRecord round;
    FGL_RETURN_IF_ERROR(fl::FromJson(line, &round, rounds_path));
    if (round.round() != record.test_curve_size() + 1) {
      return absl::DataLossError(absl::StrCat(rounds_path, ": round ", round.round(), " out of order"));
    }
    record.add_val_curve(round.val_acc());
    record.add_test_curve(round.test_acc());
    if (round.has_global_test_acc()) record.add_global_test_curve(round.global_test_acc());
    if (round.has_train_loss()) record.add_loss_curve(round.train_loss());
    record.add_seconds_curve(round.seconds());
    if (resolved.eval().has_early_stop() && round.has_test_loss()) record.add_test_loss_curve(round.test_loss());
  }
  return record;
}

absl::Status WriteRecord(const std::string& path, const google::protobuf::Message& record) {
  const std::string tmp = absl::StrCat(path, ".", getpid(), ".tmp");  // one per writing process
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << fl::ToJsonLine(record) << "\n";
    out.close();
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

}  // namespace fgl::experiments
